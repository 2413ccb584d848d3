#!/usr/bin/env bash
# scripts/lab-mixed.sh — the mixed-version lab: lmosnode nodes of the
# release before the announce shards and of this tree in one federation,
# all on 127.0.0.1 (no root, no namespaces; mDNS off, every node
# bootstraps from node 1).
#
#   node 1, 2  the old binary (git ref LAB_OLD_REF, default 161a98a: the
#              main before the shards), which knows /lmos/1/announce only;
#   node 3     this tree, role directory (every shard, and /lmos/1);
#   node 4     this tree, role light, publishes a Thing;
#   node 5     this tree, role light, publishes nothing and looks up.
#
# Checks, each against a deadline:
#   1. new -> old: node 1 (old) holds node 4's Thing;
#   2. old -> new: node 3 (directory) holds node 2's Thing;
#   3. the light node 5 holds neither (it joined no shard, and carries no
#      v1 topic), while the others converged;
#   4. on demand: `lmosnode find --capability` on node 5 finds the old
#      node's Thing (DHT providers, sync) and the new light node's (its
#      shard's record, or the DHT), and then holds them.
# It prints the RSS of every node at the end. Processes and the work
# directory are removed on every exit (--keep keeps the directory).
#
# Usage: scripts/lab.sh mixed [--keep]
#   env: LAB_OLD_REF (git ref of the old release), LAB_PORT (first port,
#   default 47700), LAB_DEADLINE (seconds per step, default 60), GO.
set -euo pipefail

LAB_NAME=lab-mixed
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lablib.sh
source "$REPO/scripts/lablib.sh"
die() {
	echo "$LAB_NAME: $*" >&2
	exit 1
}

KEEP=${LAB_KEEP:-0}
[[ ${1:-} == --keep ]] && KEEP=1
[[ ${1:-} == -h || ${1:-} == --help ]] && {
	sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
}
OLD_REF=${LAB_OLD_REF:-161a98a}
PORT=${LAB_PORT:-47700}
DEADLINE=${LAB_DEADLINE:-60}
GO=${GO:-go}
NODES=5
ROLES=(old old directory light light)

need jq jq
need curl curl
WORK=$(mktemp -d /tmp/lab-mixed.XXXXXX)
PIDS=()
OLDSRC=$WORK/oldsrc
cleanup() {
	local rc=$?
	((${#PIDS[@]} == 0)) || stop_pids "${PIDS[@]}"
	git -C "$REPO" worktree remove --force "$OLDSRC" >/dev/null 2>&1 || true
	if ((rc != 0 || KEEP)); then
		echo "$LAB_NAME: work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "build: this tree and $OLD_REF"
(cd "$REPO" && "$GO" build -o "$WORK/new" ./cmd/lmosnode) || die "build of this tree failed"
git -C "$REPO" worktree add --detach "$OLDSRC" "$OLD_REF" >/dev/null 2>&1 || die "git worktree add $OLD_REF failed"
(cd "$OLDSRC" && "$GO" build -o "$WORK/old" ./cmd/lmosnode) || die "build of $OLD_REF failed"

home() { echo "$WORK/node$1"; }
bin() { if [[ ${ROLES[$1 - 1]} == old ]]; then echo "$WORK/old"; else echo "$WORK/new"; fi; }
cli() { # K ARGS...: run an lmosnode command against node K
	local k=$1
	shift
	"$(bin "$k")" "$@" --home "$(home "$k")"
}

step "nodes: 2 old, a directory, 2 light, on 127.0.0.1:$((PORT + 1))-$((PORT + NODES))"
"$WORK/old" init --home "$(home 1)" >/dev/null
BOOT=/ip4/127.0.0.1/tcp/$((PORT + 1))/p2p/$("$WORK/old" id --home "$(home 1)" | sed -n 's/^peer ID: //p')
for ((k = 1; k <= NODES; k++)); do
	args=(up --home "$(home "$k")" --listen "/ip4/127.0.0.1/tcp/$((PORT + k))" --api "127.0.0.1:$((PORT + 50 + k))"
		--mdns=false --auto-nat=false --hole-punching=false --relay-client=false --log-level debug)
	((k == 1)) || args+=(--bootstrap "$BOOT")
	role=${ROLES[k - 1]}
	[[ $role == old ]] || export LMOS_ROLE=$role
	setsid "$(bin "$k")" "${args[@]}" >"$WORK/node$k.log" 2>&1 &
	PIDS+=($!)
	unset LMOS_ROLE
done
deadline=$((SECONDS + DEADLINE))
for ((k = 1; k <= NODES; k++)); do
	until curl -sf "http://127.0.0.1:$((PORT + 50 + k))/api/v1/node" >/dev/null 2>&1; do
		((SECONDS < deadline)) || { tail -n 20 "$WORK/node$k.log"; die "node $k: API not answering"; }
		sleep 0.2
	done
	echo "  node $k (${ROLES[k - 1]}): $(cli "$k" id | sed -n 's/^peer ID: //p')"
done

thing() { # K ID FILE CAPABILITY: write a TD for node K
	jq --arg id "$2" --arg t "Thing of mixed lab node $1" --arg c "$4" \
		'.id = $id | .title = $t | (.["lmos:capabilities"][0]["lmos:id"]) = $c | .["lmos:capabilities"] |= .[:1]' \
		"$REPO/examples/things/weather-agent.json" >"$3"
}
OLD_ID=urn:uuid:00000000-0000-4000-8000-0000000000a2
NEW_ID=urn:uuid:00000000-0000-4000-8000-0000000000b4
step "publish: node 2 (old) $OLD_ID, capability mixed-old; node 4 (light) $NEW_ID, capability mixed-new"
thing 2 "$OLD_ID" "$WORK/old.json" mixed-old
thing 4 "$NEW_ID" "$WORK/new.json" mixed-new
cli 2 things publish "$WORK/old.json" >/dev/null
cli 4 things publish "$WORK/new.json" >/dev/null

holds() { # K ID: node K's directory holds the Thing (a local listing)
	cli "$1" find --json 2>/dev/null | jq -e --arg id "$2" '[.. | objects | .id? | strings] | index($id) != null' >/dev/null
}
wait_holds() { # WHAT K ID
	local t0 deadline
	t0=$(now)
	deadline=$((SECONDS + DEADLINE))
	until holds "$2" "$3"; do
		((SECONDS < deadline)) || die "$1: node $2 does not hold $3 after ${DEADLINE}s"
		sleep 0.2
	done
	echo "  $1: node $2 holds it after $(since "$t0")"
}

step "1. new -> old"
wait_holds "light publisher to old node" 1 "$NEW_ID"
step "2. old -> new"
wait_holds "old publisher to directory node" 3 "$OLD_ID"
wait_holds "light publisher to directory node" 3 "$NEW_ID"
wait_holds "old publisher to old node" 1 "$OLD_ID"

step "3. the light node 5 holds nothing it did not look up"
sleep 3
for id in "$OLD_ID" "$NEW_ID"; do
	! holds 5 "$id" || die "node 5 (light, no lookup) holds $id"
done
echo "  node 5 holds $(cli 5 find --json 2>/dev/null | jq 'length') Things"

step "4. on demand: node 5 looks the capabilities up"
for pair in "mixed-old $OLD_ID" "mixed-new $NEW_ID"; do
	read -r cap id <<<"$pair"
	t0=$(now)
	deadline=$((SECONDS + DEADLINE))
	until cli 5 find --capability "$cap" --json 2>/dev/null | jq -e --arg id "$id" '[.. | objects | .id? | strings] | index($id) != null' >/dev/null; do
		((SECONDS < deadline)) || die "node 5 finds no $cap after ${DEADLINE}s"
		sleep 0.5
	done
	holds 5 "$id" || die "node 5 found $id but does not hold it"
	echo "  $cap: found $id in $(since "$t0")"
done

step "memory (RSS)"
for ((k = 1; k <= NODES; k++)); do
	echo "  node $k (${ROLES[k - 1]}): $(ps -o rss= -p "${PIDS[k - 1]}" | awk '{ printf "%.1f MB", $1 / 1024 }'), holds $(cli "$k" find --json 2>/dev/null | jq 'length') Things"
done
echo
echo "$LAB_NAME: PASS"
