#!/usr/bin/env bash
# scripts/attack.sh — the issue-14 attacks on real `lmosnode up` daemons, for
# the before/after figures of docs/security.md. Not part of CI (TestAdversarial
# is the standing suite); everything stays on 127.0.0.1, mDNS off.
#
# It builds lmosnode, starts a victim daemon (loopback listeners, mDNS off,
# default config) and measures, from /proc/<pid>:
#
#   1. slow bodies  CONNS connections (default 2000) each send the headers of
#                   a POST with Content-Length 1000 and 4 bytes of body, then
#                   nothing. The per-client cap does not apply to loopback
#                   clients (apiLimits.limitLoopback is off by default), so
#                   this measures the body deadline (apiLimits.bodyTimeout,
#                   30 s): the victim's open fds are sampled every 5 s for
#                   HOLD seconds (default 45), then the answers are counted.
#   2. spam         on a fresh victim: a second daemon (the spammer, one
#                   identity), bootstrapped to the victim, tries to publish SPAM TDs of 1 MB (the
#                   issue's attack: now 413, the TD limit is 64 KiB), then
#                   SPAM TDs just under 64 KiB, then MORE such TDs (default
#                   400: beyond the victim's default quota of 16 MiB per
#                   publisher); the victim's RSS and the spammer's Things and
#                   bytes it holds are reported after each round, and the size
#                   of its default listing (GET /things) at the end.
#
# Usage: scripts/attack.sh [--conns N] [--hold S] [--spam N] [--more N]
# Environment: GO (default go), LMOSNODE_BIN (use this binary instead of
# building one), ATTACK_KEEP=1 (keep the work directory).
# Every wait has a deadline; the daemons are stopped on every exit.
set -euo pipefail

CONNS=2000 HOLD=45 SPAM=100 MORE=400
while (($#)); do
	case $1 in
	--conns) CONNS=${2:?}; shift 2 ;;
	--hold) HOLD=${2:?}; shift 2 ;;
	--spam) SPAM=${2:?}; shift 2 ;;
	--more) MORE=${2:?}; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done
((CONNS >= 1 && CONNS <= 5000 && HOLD >= 1 && HOLD <= 300 && SPAM <= 1000 && MORE <= 2000)) ||
	{ echo "bounds: conns 1..5000, hold 1..300 s, spam ≤ 1000, more ≤ 2000" >&2; exit 2; }

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lmos-attack.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ ${ATTACK_KEEP:-0} == 1 ]]; then echo "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BIN=${LMOSNODE_BIN:-}
if [[ -z $BIN ]]; then
	BIN=$WORK/lmosnode
	(cd "$REPO" && "${GO:-go}" build -o "$BIN" ./cmd/lmosnode)
fi

# start NAME ARGS...: run a daemon with home $WORK/NAME; sets PID_<NAME>.
start() {
	local name=$1
	shift
	"$BIN" up --home "$WORK/$name" --listen /ip4/127.0.0.1/tcp/0 --api 127.0.0.1:0 --mdns=false "$@" \
		>"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	printf -v "PID_$name" %s $!
	local deadline=$((SECONDS + 30))
	until [[ -s $WORK/$name/api ]] && curl -fsS --max-time 2 -o /dev/null "$(cat "$WORK/$name/api")/api/v1/node"; do
		((SECONDS < deadline)) || { echo "$name: API not answering after 30 s" >&2; tail -20 "$WORK/$name.log" >&2; exit 1; }
		sleep 0.2
	done
}
api() { cat "$WORK/$1/api"; }
token() { cat "$WORK/$1/api-token"; }
fds() { ls "/proc/$1/fd" | wc -l; }
rss_mb() { awk '/^VmRSS:/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }

start victim
VICTIM=$PID_victim
VAPI=$(api victim)
echo "victim: pid $VICTIM, API $VAPI"

# --- 1. slow bodies -------------------------------------------------------
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
(($(ulimit -n) > CONNS + 64)) || { echo "ulimit -n $(ulimit -n) is too low for $CONNS connections" >&2; exit 1; }
HOSTPORT=${VAPI#http://}
echo
echo "slow bodies: $CONNS connections, headers then 4 bytes of a 1000-byte body"
echo "  victim before: fds $(fds "$VICTIM"), RSS $(rss_mb "$VICTIM") MB"
FDS=()
START=$SECONDS
for ((i = 0; i < CONNS; i++)); do
	exec {fd}<>"/dev/tcp/127.0.0.1/${HOSTPORT##*:}"
	printf 'POST /api/v1/things HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"td' \
		"$HOSTPORT" "$(token victim)" >&"$fd"
	FDS+=("$fd")
done
echo "  all sent after $((SECONDS - START)) s"
for ((t = 0; t <= HOLD; t += 5)); do
	echo "  t=${t}s victim fds $(fds "$VICTIM"), RSS $(rss_mb "$VICTIM") MB"
	((t + 5 <= HOLD)) && sleep 5
done
answered=0
for fd in "${FDS[@]}"; do
	line=
	if IFS= read -r -t 1 line <&"$fd" && [[ $line == "HTTP/1.1 408"* ]]; then answered=$((answered + 1)); fi
	exec {fd}>&-
done
echo "  answered 408 and closed by the victim: $answered of $CONNS; victim fds after: $(fds "$VICTIM")"

# --- 2. spam ------------------------------------------------------------
# On a fresh victim, so that its RSS starts from a node's usual.
kill "$VICTIM"
wait "$VICTIM" 2>/dev/null || true
start victim2
VICTIM=$PID_victim2
VAPI=$(api victim2)
VID=$(curl -fsS "$VAPI/api/v1/node" | jq -r .peerID)
VADDR=$(curl -fsS "$VAPI/api/v1/node" | jq -r '.addrs[] | select(startswith("/ip4/127.0.0.1/tcp/"))' | head -1)
start spammer --bootstrap "$VADDR/p2p/$VID"
SAPI=$(api spammer)
SID=$(curl -fsS "$SAPI/api/v1/node" | jq -r .peerID)
echo
echo "spam: spammer $SID → victim $VID"

# publish_td N SIZE PREFIX: the spammer publishes N TDs whose description
# makes each about SIZE bytes; prints the count of each status.
publish_td() {
	local n=$1 size=$2 prefix=$3 pad
	pad=$(head -c "$size" /dev/zero | tr '\0' 's')
	for ((i = 0; i < n; i++)); do
		printf '{"td":{"@context":"https://www.w3.org/2022/wot/td/v1.1","id":"urn:spam:%s:%05d","title":"Spam","description":"%s","securityDefinitions":{"n":{"scheme":"nosec"}},"security":"n"}}' \
			"$prefix" "$i" "$pad" >"$WORK/td.json"
		curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $(token spammer)" \
			-H 'Content-Type: application/json' --data-binary @"$WORK/td.json" "$SAPI/api/v1/things" || echo 000
	done | sort | uniq -c | awk '{printf " %s×%s", $1, $2}'
	echo
}
# held: the spammer's Things and bytes in the victim's directory.
held() {
	echo "victim holds $(curl -fsS "$VAPI/things?format=collection&publisher=$SID&limit=1" | jq .total) of the spammer's Things"
}
# settle: wait (at most 30 s) until the victim's count of the spammer's
# Things stops changing.
settle() {
	local last=-1 now deadline=$((SECONDS + 30))
	while ((SECONDS < deadline)); do
		now=$(held)
		[[ $now == "$last" ]] && break
		last=$now
		sleep 3
	done
}

echo "  victim RSS before: $(rss_mb "$VICTIM") MB"
echo -n "  $SPAM TDs of 1 MB (the issue's attack):"
publish_td "$SPAM" $((1 << 20)) big
echo -n "  $SPAM TDs of ~63 KiB (within the default quota):"
publish_td "$SPAM" 64000 max
settle
echo "  $(held); victim RSS $(rss_mb "$VICTIM") MB"
echo -n "  $MORE more TDs of ~63 KiB (beyond 16 MiB per publisher):"
publish_td "$MORE" 64000 more
settle
echo "  $(held); victim RSS $(rss_mb "$VICTIM") MB, fds $(fds "$VICTIM")"
bytes=$(curl -fsS -o /dev/null -w '%{size_download}' "$VAPI/things")
echo "  GET /things on the victim: $bytes bytes"
