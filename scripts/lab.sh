#!/usr/bin/env bash
# scripts/lab.sh — the netns lab: N lmosnode nodes on a private virtual LAN
# that exists only inside network namespaces this script creates.
#
# It creates a Linux bridge and N network namespaces joined to it by veth
# pairs (10.77.<lab>.K/24, no route anywhere else), builds lmosnode once and
# checks, each step against a deadline:
#
#   1. probe   the discovery package's mDNS path: a bare libp2p host with
#              node/discovery (test binary built with -tags lab) in every
#              namespace must connect to all others by mDNS, and resolve
#              the WoT directory each other one advertises by DNS-SD
#              (_directory._sub._wot._tcp, TXT td=/.well-known/wot)
#              (--via mdns);
#   2. nodes   `lmosnode up` in every namespace, with mDNS on and no
#              bootstrap peer (--via mdns, the default), or with mDNS off
#              and node 1 as the only bootstrap peer (--via bootstrap:
#              nodes 2..N then meet by DHT rendezvous); every API answers
#              and `lmosnode id` works inside the namespace;
#   3. peers   GET /api/v1/peers of every node lists every other node;
#   4. things  every node publishes one Thing (`lmosnode things publish`),
#              and `lmosnode find --json` on every node lists all of them.
#
# Steps 3 and 4 are skipped, with a clear "not available yet", while the API
# endpoint or CLI commands they use do not exist (LAB_STRICT=1 fails
# instead). Namespaces, bridge, veths and processes are removed on every
# exit, including failures and Ctrl-C. Needs root. See docs/lab.md.
#
# Usage: sudo scripts/lab.sh [-n NODES] [-d SECONDS] [--via mdns|bootstrap]
#                            [--keep] [--strict] [--hold]
#        sudo scripts/lab.sh --clean
#        sudo scripts/lab.sh nat [--help]   the NAT lab (scripts/lab-nat.sh)
#        sudo scripts/lab.sh wan [--help]   the WAN lab (scripts/lab-wan.sh)
#        sudo scripts/lab.sh scale [...]    the scale lab (lab-wan.sh --scale)
#        scripts/lab.sh mixed [--help]      the mixed-version lab (scripts/lab-mixed.sh)
#        scripts/lab.sh directory [--help]  the directory lab (scripts/lab-directory.sh)
set -euo pipefail

# The NAT lab (relays, hole punching) is a scenario of its own.
if [[ ${1:-} == nat ]]; then
	shift
	exec bash "$(dirname "$0")/lab-nat.sh" "$@"
fi
# The mixed-version lab (old and new releases on 127.0.0.1) likewise.
if [[ ${1:-} == mixed ]]; then
	shift
	exec bash "$(dirname "$0")/lab-mixed.sh" "$@"
fi
# The directory lab (one node holding a large directory) likewise.
if [[ ${1:-} == directory ]]; then
	shift
	exec bash "$(dirname "$0")/lab-directory.sh" "$@"
fi
# The WAN lab (rows 1-3 under internet latency) likewise, and the scale
# lab, which is the WAN lab with the federation loaded.
if [[ ${1:-} == wan ]]; then
	shift
	exec bash "$(dirname "$0")/lab-wan.sh" "$@"
fi
if [[ ${1:-} == scale ]]; then
	shift
	exec bash "$(dirname "$0")/lab-wan.sh" --scale "$@"
fi

usage() {
	cat <<EOF
usage: $0 [options]

  -n, --nodes N       number of nodes (default 4; env LAB_NODES; 2..50)
  -d, --deadline S    seconds each step may take to converge (default 60;
                      env LAB_DEADLINE)
  -i, --id ID         lab number 0..9: bridge lmoslab<ID>, namespaces
                      lmoslab<ID>-n<K>, subnet 10.77.<ID>.0/24 (default 0;
                      env LAB_ID); lets two labs run side by side
      --keep          keep the work directory (binaries, homes, logs); it
                      is always kept when the lab fails (env LAB_KEEP=1)
      --strict        fail, instead of skipping, steps whose API or CLI
                      command is not available (env LAB_STRICT=1)
      --via WAY       how the daemons find each other: mdns (default: mDNS
                      on, no bootstrap peers) or bootstrap (mDNS off; node 1
                      is every other node's only bootstrap peer, so nodes
                      2..N must find each other by DHT rendezvous)
                      (env LAB_VIA)
      --hold          after the checks, keep the lab running until Ctrl-C
                      (prints how to run commands inside it)
      --clean         remove what a killed run of lab <ID> left behind
                      (namespaces, bridge, their processes) and exit
  -h, --help          this help

'$0 nat --help' describes the NAT lab (relays, hole punching);
'$0 wan --help' the WAN lab (rows 1-3 under internet latency);
'$0 scale' is the scale lab: the WAN lab with --scale (100 nodes, 100k
Things, 10 % killed; see '$0 wan --help').

Environment: GO (go command, default go), LMOSNODE_BIN (use this lmosnode
binary instead of building one).
EOF
}

ARGS=("$@")
NODES=${LAB_NODES:-4}
DEADLINE=${LAB_DEADLINE:-60}
LAB=${LAB_ID:-0}
KEEP=${LAB_KEEP:-0}
STRICT=${LAB_STRICT:-0}
VIA=${LAB_VIA:-mdns}
HOLD=0
CLEAN_ONLY=0
GO=${GO:-go}

while (($#)); do
	case $1 in
	-n | --nodes) NODES=${2:?$1 needs a value}; shift 2 ;;
	-d | --deadline) DEADLINE=${2:?$1 needs a value}; shift 2 ;;
	-i | --id) LAB=${2:?$1 needs a value}; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--strict) STRICT=1; shift ;;
	--via) VIA=${2:?$1 needs a value}; shift 2 ;;
	--hold) HOLD=1; shift ;;
	--clean) CLEAN_ONLY=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "lab: unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
done

die() { echo "lab: $*" >&2; exit 1; }

if ! [[ $NODES =~ ^[0-9]+$ ]] || ((NODES < 2 || NODES > 50)); then
	die "--nodes: $NODES: want a number from 2 to 50"
fi
if ! [[ $DEADLINE =~ ^[0-9]+$ ]] || ((DEADLINE < 1)); then
	die "--deadline: $DEADLINE: want a positive number of seconds"
fi
[[ $LAB =~ ^[0-9]$ ]] || die "--id: $LAB: want a digit 0..9"
[[ $VIA == mdns || $VIA == bootstrap ]] || die "--via: $VIA: want mdns or bootstrap"

if ((EUID != 0)); then
	die "needs root: it creates network namespaces, a bridge and veth pairs. Run: sudo $0 ${ARGS[*]}"
fi

REPO=$(cd "$(dirname "$0")/.." && pwd)
BRIDGE=lmoslab$LAB
NS_PREFIX=lmoslab$LAB-n
SUBNET=10.77.$LAB
API=127.0.0.1:5080   # each namespace has its own loopback: one port for all
NODE_PORT=4001
PROBE_PORT=4101

ns() { echo "$NS_PREFIX$1"; }
ip_of() { echo "$SUBNET.$1"; }
veth_host() { echo "l${LAB}n${1}h"; }
veth_ns() { echo "l${LAB}n$1"; }

LAB_NAME=lab
# shellcheck source=scripts/lablib.sh
source "$REPO/scripts/lablib.sh"

# ---------------------------------------------------------------------------
# Cleanup: everything this script creates is recorded before it is created,
# and removed on every exit path.

PIDS=()        # processes we started (see nsx)
CREATED_NS=()  # namespaces we created
CREATED_BRIDGE=0
WORK=""
FAILED=1       # cleared when the run passes

LAB_LABEL="lab"

if ((CLEAN_ONLY)); then
	mapfile -t stale < <(ip netns list | awk '{print $1}' | grep "^${NS_PREFIX}[0-9]*\$" || true)
	remove_lab "${stale[@]}"
	echo "lab: removed ${#stale[@]} namespaces of lab $LAB and bridge $BRIDGE (if they existed)"
	exit 0
fi

trap lab_cleanup EXIT
trap 'echo "lab: interrupted" >&2; exit 130' INT
trap 'echo "lab: terminated" >&2; exit 143' TERM

# ---------------------------------------------------------------------------
# Setup.

need ip iproute2
need curl curl
need jq jq

if ip link show "$BRIDGE" >/dev/null 2>&1 || ip netns list | grep -q "^$NS_PREFIX"; then
	die "lab $LAB exists (another run, or one that was killed): run '$0 --clean${LAB:+ --id $LAB}' or pick another --id"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lmoslab$LAB.XXXXXX")
BIN=$WORK/bin
mkdir -p "$BIN"

step "build"
t0=$(now)
build_lab ./node/discovery discovery.test
echo "built lmosnode and the mDNS probe in $(since "$t0")"

step "network: bridge $BRIDGE, $NODES namespaces, $SUBNET.0/24"
CREATED_BRIDGE=1
ip link add "$BRIDGE" type bridge
# mDNS is link-local multicast (224.0.0.251, ff02::fb): flood it to every
# port rather than depend on IGMP snooping without a querier.
ip link set "$BRIDGE" type bridge mcast_snooping 0
ip link set "$BRIDGE" multicast on up
for ((k = 1; k <= NODES; k++)); do
	CREATED_NS+=("$(ns "$k")")
	ip netns add "$(ns "$k")"
	ip link add "$(veth_host "$k")" type veth peer name "$(veth_ns "$k")" netns "$(ns "$k")"
	ip link set "$(veth_host "$k")" master "$BRIDGE" multicast on up
	ip -n "$(ns "$k")" link set lo up
	ip -n "$(ns "$k")" addr add "$(ip_of "$k")/24" dev "$(veth_ns "$k")"
	ip -n "$(ns "$k")" link set "$(veth_ns "$k")" multicast on up
done
echo "namespaces: ${CREATED_NS[*]}"

# nsx K CMD...: run CMD inside namespace K.
#
# Background processes are started as `setsid ip netns exec …`, not through
# this function: setsid and ip netns exec both exec in place, so $! is the
# process itself (not a subshell whose death would orphan it), and in a
# session of its own it gets no Ctrl-C from the terminal; cleanup stops it
# with one SIGTERM, which lmosnode answers with a clean shutdown (a second
# signal would end it at once).
nsx() {
	local k=$1
	shift
	ip netns exec "$(ns "$k")" "$@"
}

# ---------------------------------------------------------------------------
# Step 1: the discovery package's mDNS path, with bare hosts.

PROBE_RESULT=""
step_probe() {
	step "probe: node/discovery mDNS and WoT DNS-SD between bare hosts"
	local stop=$WORK/probe.stop k t0 pids=() done_count elapsed
	t0=$(now)
	for ((k = 1; k <= NODES; k++)); do
		LMOS_LAB_LISTEN=/ip4/$(ip_of "$k")/tcp/$PROBE_PORT \
			LMOS_LAB_PEERS=$((NODES - 1)) \
			LMOS_LAB_TIMEOUT=${DEADLINE}s \
			LMOS_LAB_STOP=$stop \
			setsid ip netns exec "$(ns "$k")" "$BIN/discovery.test" -test.run '^TestLabMDNS$' -test.v -test.count=1 \
			>"$WORK/probe$k.out" 2>"$WORK/probe$k.log" &
		pids+=($!)
		PIDS+=($!)
	done
	while :; do
		done_count=$(cat "$WORK"/probe*.out 2>/dev/null | grep -c '^LAB-MDNS ' || true)
		((done_count == NODES)) && break
		for k in "${!pids[@]}"; do
			if ! kill -0 "${pids[$k]}" 2>/dev/null; then
				echo "probe $((k + 1)) exited before converging:"
				tail -n 20 "$WORK/probe$((k + 1)).out" "$WORK/probe$((k + 1)).log"
				return 1
			fi
		done
		sleep 0.1
	done
	touch "$stop"
	for k in "${!pids[@]}"; do
		wait "${pids[$k]}" || { echo "probe $((k + 1)) failed:"; tail -n 20 "$WORK/probe$((k + 1)).out"; return 1; }
	done
	for ((k = 1; k <= NODES; k++)); do
		elapsed=$(sed -n 's/^LAB-MDNS .*elapsed=\(.*\)$/\1/p' "$WORK/probe$k.out")
		echo "  $(ns "$k"): $((NODES - 1)) peers by mDNS and $((NODES - 1)) WoT directories by DNS-SD after $elapsed"
	done
	PROBE_RESULT="every host connected to $((NODES - 1)) peers by mDNS and resolved $((NODES - 1)) WoT directories (_wot._tcp) by DNS-SD; all done in $(since "$t0")"
}

# ---------------------------------------------------------------------------
# Step 2: lmosnode daemons.

PEER_IDS=()  # by node index - 1
NODES_UP_AT=""
home() { echo "$WORK/node$1"; }

api_get() { # K PATH OUTFILE -> prints the HTTP status
	# curl prints 000 itself when it gets no answer.
	nsx "$1" curl -sS --max-time 3 -o "$3" -w '%{http_code}' "http://$API$2" 2>/dev/null || true
}

# start_node K ARGS...: run `lmosnode up` in namespace K.
start_node() {
	local k=$1
	shift
	setsid ip netns exec "$(ns "$k")" "$BIN/lmosnode" up --home "$(home "$k")" \
		--listen "/ip4/$(ip_of "$k")/tcp/$NODE_PORT" --api "$API" \
		--log-level debug "$@" >"$WORK/node$k.log" 2>&1 &
	PIDS+=($!)
}

# wait_node K DEADLINE: wait until node K's API answers, check that
# `lmosnode id` inside the namespace names the same peer, and record it.
wait_node() {
	local k=$1 deadline=$2 id
	until [[ $(api_get "$k" /api/v1/node "$WORK/info$k.json") == 200 ]]; do
		((SECONDS < deadline)) || { echo "node $k: API not answering after ${DEADLINE}s"; tail -n 20 "$WORK/node$k.log"; return 1; }
		sleep 0.2
	done
	id=$(nsx "$k" "$BIN/lmosnode" id --home "$(home "$k")" | sed -n 's/^peer ID: //p')
	[[ -n $id ]] || { echo "node $k: 'lmosnode id' printed no peer ID"; return 1; }
	[[ $id == "$(jq -r .peerID "$WORK/info$k.json")" ]] ||
		{ echo "node $k: 'lmosnode id' says $id, the API $(jq -r .peerID "$WORK/info$k.json")"; return 1; }
	PEER_IDS[k - 1]=$id
	echo "  $(ns "$k"): $id at /ip4/$(ip_of "$k")/tcp/$NODE_PORT"
}

step_nodes() {
	local k t0 deadline args=()
	if [[ $VIA == mdns ]]; then
		step "nodes: lmosnode up in every namespace (mDNS on, no bootstrap)"
		args=(--mdns=true)
	else
		step "nodes: lmosnode up in every namespace (mDNS off; all but node 1 bootstrap from node 1)"
		args=(--mdns=false)
	fi
	t0=$(now)
	deadline=$((SECONDS + DEADLINE))
	# Node 1 first: in bootstrap mode the others need its peer ID.
	start_node 1 "${args[@]}"
	wait_node 1 "$deadline" || return 1
	if [[ $VIA == bootstrap ]]; then
		args+=(--bootstrap "/ip4/$(ip_of 1)/tcp/$NODE_PORT/p2p/${PEER_IDS[0]}")
	fi
	for ((k = 2; k <= NODES; k++)); do
		start_node "$k" "${args[@]}"
	done
	for ((k = 2; k <= NODES; k++)); do
		wait_node "$k" "$deadline" || return 1
	done
	NODES_UP_AT=$(now)
	echo "$NODES nodes up in $(since "$t0")"
}

# ---------------------------------------------------------------------------
# Step 3: every node lists every other node as a peer.

PEERS_RESULT=""
SKIPPED=()

# check_peers: 0 when every node's GET /api/v1/peers (a JSON array of
# objects with "peerID") lists every other node; 1 if not yet; 2 if the
# endpoint does not exist.
check_peers() {
	local k j status missing=0
	for ((k = 1; k <= NODES; k++)); do
		status=$(api_get "$k" /api/v1/peers "$WORK/peers$k.json")
		case $status in
		200) ;;
		404 | 405 | 501) return 2 ;;
		*) return 1 ;;
		esac
		for ((j = 1; j <= NODES; j++)); do
			((j == k)) && continue
			jq -e --arg id "${PEER_IDS[j - 1]}" 'any(.[]; .peerID == $id)' "$WORK/peers$k.json" >/dev/null 2>&1 ||
				missing=$((missing + 1))
		done
	done
	((missing == 0))
}

step_peers() {
	step "peers: every node lists every other node (GET /api/v1/peers)"
	local deadline rc k
	deadline=$((SECONDS + DEADLINE))
	while :; do
		rc=0
		check_peers || rc=$?
		case $rc in
		0) break ;;
		2) skip peers "GET /api/v1/peers is not available yet (HTTP $(api_get 1 /api/v1/peers /dev/null))"; return $? ;;
		esac
		if ((SECONDS >= deadline)); then
			echo "peers did not converge within ${DEADLINE}s; last answers:"
			for ((k = 1; k <= NODES; k++)); do
				echo "  $(ns "$k"): $(jq -c '[.[] | {peerID, source}]' "$WORK/peers$k.json" 2>/dev/null || echo '(no answer)')"
			done
			return 1
		fi
		sleep 0.2
	done
	for ((k = 1; k <= NODES; k++)); do
		echo "  $(ns "$k"): $(jq -r '[.[] | .source // "?"] | group_by(.) | map("\(length) \(.[0])") | join(", ")' "$WORK/peers$k.json")"
	done
	PEERS_RESULT="every node lists $((NODES - 1)) peers, $(since "$NODES_UP_AT") after all APIs answered"
}

# skip STEP REASON: a step whose API or CLI is missing.
skip() {
	SKIPPED+=("$1")
	if ((STRICT)); then
		echo "FAIL ($1): $2 (--strict)"
		return 1
	fi
	echo "SKIP ($1): $2"
	return 0
}

# ---------------------------------------------------------------------------
# Step 4: every node publishes a Thing; every node finds every Thing.

THINGS_RESULT=""
thing_id() { printf 'urn:uuid:00000000-0000-4000-8000-%012x' "$1"; }

has_command() { # "things publish" -> does the binary have it?
	# shellcheck disable=SC2086 # the words of the command
	"$BIN/lmosnode" $1 --help 2>&1 | grep -q "lmosnode $1"
}

# check_things: 0 when `lmosnode find --json` on every node lists the
# Things of every node. The output format is read loosely: every "id"
# string at any depth counts, so a list of TDs and a list of entries that
# wrap a TD both work.
check_things() {
	local k j missing=0
	for ((k = 1; k <= NODES; k++)); do
		nsx "$k" "$BIN/lmosnode" find --json --home "$(home "$k")" >"$WORK/find$k.json" 2>"$WORK/find$k.err" || return 1
		for ((j = 1; j <= NODES; j++)); do
			jq -e --arg id "$(thing_id "$j")" '[.. | objects | .id? | strings] | index($id) != null' \
				"$WORK/find$k.json" >/dev/null 2>&1 || missing=$((missing + 1))
		done
	done
	((missing == 0))
}

step_things() {
	step "things: each node publishes one Thing; every node finds all $NODES"
	if ! has_command "things publish"; then
		skip things "'lmosnode things publish' is not available yet"
		return $?
	fi
	if ! has_command "find"; then
		skip things "'lmosnode find' is not available yet"
		return $?
	fi
	local k td t0 deadline
	for ((k = 1; k <= NODES; k++)); do
		td=$WORK/thing$k.json
		jq --arg id "$(thing_id "$k")" --arg title "WeatherAgent of lab node $k" \
			'.id = $id | .title = $title' "$REPO/examples/things/weather-agent.json" >"$td"
		nsx "$k" "$BIN/lmosnode" things publish "$td" --home "$(home "$k")" >"$WORK/publish$k.out" 2>&1 ||
			{ echo "node $k: publish failed:"; cat "$WORK/publish$k.out"; return 1; }
	done
	t0=$(now)
	deadline=$((SECONDS + DEADLINE))
	until check_things; do
		if ((SECONDS >= deadline)); then
			echo "Things did not converge within ${DEADLINE}s:"
			for ((k = 1; k <= NODES; k++)); do
				echo "  $(ns "$k"): $(jq -c '[.. | objects | .id? | strings] | unique' "$WORK/find$k.json" 2>/dev/null || head -c 300 "$WORK/find$k.err")"
			done
			return 1
		fi
		sleep 0.2
	done
	THINGS_RESULT="every node finds all $NODES Things, $(since "$t0") after the last publish"
	echo "$THINGS_RESULT"
}

# ---------------------------------------------------------------------------

summary() {
	local result=$1
	printf '\n== summary\n'
	printf '  %-8s %s\n' nodes "$NODES (lab $LAB, $SUBNET.0/24, found by $VIA)"
	printf '  %-8s %s\n' probe "${PROBE_RESULT:-not run (--via $VIA) or not reached}"
	printf '  %-8s %s\n' daemons "$( [[ -n $NODES_UP_AT ]] && echo "all up; API and lmosnode id answer in every namespace" || echo "not reached")"
	printf '  %-8s %s\n' peers "${PEERS_RESULT:-skipped or not reached}"
	printf '  %-8s %s\n' things "${THINGS_RESULT:-skipped or not reached}"
	printf '  %-8s %s\n' result "$result${SKIPPED[*]:+ (skipped: ${SKIPPED[*]})}"
}

run_started=$(now)
if { [[ $VIA != mdns ]] || step_probe; } && step_nodes && step_peers && step_things; then
	FAILED=0
	summary "PASS in $(since "$run_started")"
	if ((HOLD)); then
		cat <<EOF

The lab stays up until Ctrl-C. Inside it, for example:
  ip netns exec $(ns 1) $BIN/lmosnode id --home $(home 1)
  ip netns exec $(ns 1) curl -s http://$API/api/v1/node
  ip netns exec $(ns 1) bash     # a shell on node 1's network
Node logs: $WORK/node<K>.log
EOF
		sleep infinity &
		PIDS+=($!)
		wait $!
	fi
else
	summary "FAIL after $(since "$run_started")"
	for f in "$WORK"/node*.log; do
		[[ -f $f ]] || continue
		printf '\n-- last lines of %s\n' "$f"
		tail -n 15 "$f"
	done
	exit 1
fi
