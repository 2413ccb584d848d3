#!/usr/bin/env bash
# scripts/lab-wan.sh — the WAN lab, run as `scripts/lab.sh wan`: rows 1–3
# of the performance table (propagation, cold discovery, request-reply)
# under internet latency, lmosnode against the raw libp2p stack on the
# same links. Everything lives in network namespaces this script creates;
# nothing has a route off the machine.
#
#   router namespace lmoswan<ID>-r: 10.78.K.1 towards each namespace K,
#     IPv4 forwarding, FORWARD chain -> NFQUEUE 0 (no bypass), read by
#     wandelay (internal/wandelay): each packet is accepted after its
#     address pair's one-way delay (RTT spread uniformly over
#     --rtt-min..--rtt-max per pair, constant per pair) or dropped
#     (--loss); the router's own traffic (the driver's) is not delayed
#   namespaces lmoswan<ID>-n1..nN: 10.78.K.2, default route via the router;
#     in each an `lmosnode up` (mDNS off, DHT server) and a `wanlab peer`
#     (a raw libp2p host with kad-dht and gossipsub, the echo backend of
#     the node's Thing, a watcher of the node's events)
#   namespace lmoswan<ID>-n<N+1>: the cold one, where fresh nodes and
#     fresh raw DHT clients look a capability up
#
# `wanlab drive` in the router namespace links nodes and raw hosts alike
# (a ring plus chords), then measures rows 1, 3 and 2 and prints them as
# benchtab lines, turned into a table at the end. With --scale (run as
# `scripts/lab.sh scale`) it is the scale lab: 100 namespaces by default,
# every node publishing --things Things in two stages (a tenth, then all),
# per-node memory, Things held and gossip bytes at each stage, rows 1 and 2
# on the loaded federation, then --kill of the nodes killed at once and
# rows 1 and 2 again among the survivors; with --raw apart (its default)
# the raw hosts are measured after the nodes, alone, on the same links
# (wanlab drive -phase nodes, then -phase raw). tc netem is not used:
# the kernels this runs on may lack sch_netem (docs/lab.md). Needs root.
# Namespaces and processes are removed on every exit, including Ctrl-C.
set -euo pipefail

usage() {
	cat <<EOF
usage: scripts/lab.sh wan [options]

  -n, --nodes N       namespaces with a node and a raw host (default 30;
                      env LAB_NODES; 2..100)
  -i, --id ID         lab number 0..9: namespaces lmoswan<ID>-* (default 0;
                      env LAB_ID); lets two labs run side by side
      --rtt-min MS    smallest RTT a pair gets (default 20)
      --rtt-max MS    largest RTT a pair gets (default 120)
      --loss P        share of packets dropped (default 0.005: 0.5 %)
      --samples S     row 1 publications of each kind (default 40)
      --cold S        row 2 cold lookups of each kind (default 20)
      --timeout S     stop the measurements after S seconds (default 600;
                      3600 with --scale)
      --scale         the scale lab (also: scripts/lab.sh scale): nodes
                      default 100 (up to 200), rows 1-2 on a loaded
                      federation, row 3 skipped
      --things T      --scale: Things each node publishes (default 1000)
      --caps C        --scale: capabilities they spread over (default 100)
      --kill F        --scale: share of the nodes killed at once after the
                      loaded rows, then rows 1-2 again (default 0.1; 0: none)
      --roles R       --scale: light (default: node 1 a directory node, the
                      others light), auto (node 1 a directory node, the
                      others auto: the default role, light once what they
                      learned passes half of quota.maxLearnedBytes),
                      directory (all) or v1 (all: the announcements of the
                      releases before the shards)
      --auto-budget M --roles auto: the auto nodes' quota.maxLearnedBytes in
                      MiB (they turn light past half of it; default: the
                      node's, 256)
      --transport T   tcp (default) or quic: what nodes and raw hosts listen
                      and dial on
      --raw MODE      --scale: apart (default) measures the nodes first,
                      stops them, then the raw baseline hosts alone on the
                      same namespaces and links (a node and a raw host per
                      namespace at once overload a small machine); beside
                      runs both at once, as the WAN lab does
      --keep          keep the work directory (always kept on failure)
      --clean         remove what a killed run of lab <ID> left behind
  -h, --help          this help

Environment: GO (go command, default go), LMOSNODE_BIN (use this lmosnode
binary instead of building one).
EOF
}

ARGS=("$@")
NODES=${LAB_NODES:-}
LAB=${LAB_ID:-0}
RTT_MIN=20
RTT_MAX=120
LOSS=0.005
SAMPLES=40
COLD=20
TIMEOUT=""
KEEP=${LAB_KEEP:-0}
SCALE=0
THINGS=1000
AUTO_BUDGET=0
CAPS=100
KILL=0.1
ROLES=light
TRANSPORT=tcp
RAW=""
CLEAN_ONLY=0
GO=${GO:-go}

while (($#)); do
	case $1 in
	-n | --nodes) NODES=${2:?$1 needs a value}; shift 2 ;;
	-i | --id) LAB=${2:?$1 needs a value}; shift 2 ;;
	--rtt-min) RTT_MIN=${2:?$1 needs a value}; shift 2 ;;
	--rtt-max) RTT_MAX=${2:?$1 needs a value}; shift 2 ;;
	--loss) LOSS=${2:?$1 needs a value}; shift 2 ;;
	--samples) SAMPLES=${2:?$1 needs a value}; shift 2 ;;
	--cold) COLD=${2:?$1 needs a value}; shift 2 ;;
	--timeout) TIMEOUT=${2:?$1 needs a value}; shift 2 ;;
	--scale) SCALE=1; shift ;;
	--things) THINGS=${2:?$1 needs a value}; shift 2 ;;
	--caps) CAPS=${2:?$1 needs a value}; shift 2 ;;
	--auto-budget) AUTO_BUDGET=${2:?$1 needs a value}; shift 2 ;;
	--kill) KILL=${2:?$1 needs a value}; shift 2 ;;
	--roles) ROLES=${2:?$1 needs a value}; shift 2 ;;
	--transport) TRANSPORT=${2:?$1 needs a value}; shift 2 ;;
	--raw) RAW=${2:?$1 needs a value}; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--clean) CLEAN_ONLY=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "lab wan: unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
done

die() { echo "lab wan: $*" >&2; exit 1; }

MAX_NODES=100
if ((SCALE)); then
	NODES=${NODES:-100}
	TIMEOUT=${TIMEOUT:-3600}
	MAX_NODES=200
	[[ $THINGS =~ ^[0-9]+$ ]] && ((THINGS >= 10)) || die "--things: $THINGS: want a number ≥ 10"
	[[ $CAPS =~ ^[0-9]+$ ]] && ((CAPS >= 1)) || die "--caps: $CAPS: want a positive number"
	[[ $AUTO_BUDGET =~ ^[0-9]+$ ]] || die "--auto-budget: $AUTO_BUDGET: want a number of MiB"
	[[ $KILL =~ ^0?\.[0-9]+$|^0$ ]] || die "--kill: $KILL: want a share below 1, e.g. 0.1"
	[[ $ROLES =~ ^(light|auto|directory|v1)$ ]] || die "--roles: $ROLES: want light, auto, directory or v1"
	RAW=${RAW:-apart}
	[[ $RAW =~ ^(apart|beside)$ ]] || die "--raw: $RAW: want apart or beside"
else
	[[ -z $RAW || $RAW == beside ]] || die "--raw apart: only with --scale (the WAN lab's row 3 needs both at once)"
	RAW=beside
fi
# role K is the role of node K: node 1 holds every Thing with --roles light.
role() {
	if ((!SCALE)); then
		echo directory
	elif [[ $ROLES == light || $ROLES == auto ]]; then
		(($1 == 1)) && echo directory || echo "$ROLES"
	else
		echo "$ROLES"
	fi
}
NODES=${NODES:-30}
TIMEOUT=${TIMEOUT:-600}
[[ $NODES =~ ^[0-9]+$ ]] && ((NODES >= 2 && NODES <= MAX_NODES)) || die "--nodes: $NODES: want a number from 2 to $MAX_NODES"
[[ $TRANSPORT =~ ^(tcp|quic)$ ]] || die "--transport: $TRANSPORT: want tcp or quic"
[[ $LAB =~ ^[0-9]$ ]] || die "--id: $LAB: want a digit 0..9"
[[ $RTT_MIN =~ ^[0-9]+$ && $RTT_MAX =~ ^[0-9]+$ ]] && ((RTT_MIN <= RTT_MAX)) || die "--rtt-min/--rtt-max: want milliseconds, min ≤ max"
[[ $LOSS =~ ^0?\.[0-9]+$|^0$ ]] || die "--loss: $LOSS: want a share below 1, e.g. 0.005"
for v in SAMPLES COLD TIMEOUT; do
	[[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} >= 1)) || die "${v,,}: ${!v}: want a positive number"
done
((EUID == 0)) || die "needs root: it creates network namespaces, veth pairs and a queueing router. Run: sudo scripts/lab.sh wan ${ARGS[*]}"

REPO=$(cd "$(dirname "$0")/.." && pwd)
NS_PREFIX=lmoswan$LAB-
ROUTER=${NS_PREFIX}r
BRIDGE="" # this lab has none: every namespace has its own link to the router
COLD_K=$((NODES + 1))
API=127.0.0.1:5080 # each namespace has its own loopback
PORT=4001

ns() { echo "${NS_PREFIX}n$1"; }
ip_of() { echo "10.78.$1.2"; }
home() { echo "$WORK/node$1"; }
# listen_addr K is node K's libp2p address on the lab's transport.
listen_addr() {
	if [[ $TRANSPORT == quic ]]; then echo "/ip4/$(ip_of "$1")/udp/$PORT/quic-v1"; else echo "/ip4/$(ip_of "$1")/tcp/$PORT"; fi
}

LAB_NAME="lab wan"
# shellcheck source=scripts/lablib.sh
source "$REPO/scripts/lablib.sh"

PIDS=()
CREATED_NS=()
CREATED_BRIDGE=0
WORK=""
FAILED=1
LAB_LABEL="lab wan"

((CLEAN_ONLY)) && lab_clean_stale "^${NS_PREFIX}" "WAN lab $LAB"
lab_traps

need ip iproute2
need iptables iptables
need jq jq

if ip netns list | grep -q "^$NS_PREFIX"; then
	die "WAN lab $LAB exists (another run, or one that was killed): run 'scripts/lab.sh wan --clean --id $LAB' or pick another --id"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lmoswan$LAB.XXXXXX")
BIN=$WORK/bin
mkdir -p "$BIN"

step "build"
t0=$(now)
if [[ -n ${LMOSNODE_BIN:-} ]]; then
	cp "$LMOSNODE_BIN" "$BIN/lmosnode"
else
	(cd "$REPO" && "$GO" build -o "$BIN/lmosnode" ./cmd/lmosnode)
fi
(cd "$REPO" && "$GO" build -o "$BIN/wandelay" ./internal/wandelay/cmd/wandelay &&
	"$GO" build -o "$BIN/wanlab" ./internal/wanlab &&
	"$GO" build -o "$BIN/benchtab" ./internal/benchtab/cmd/benchtab)
echo "built lmosnode, wandelay, wanlab and benchtab in $(since "$t0")"

step "network: router $ROUTER, $NODES + 1 namespaces on 10.78.K.0/24"
add_ns() {
	CREATED_NS+=("$1")
	ip netns add "$1"
	ip -n "$1" link set lo up
}
add_ns "$ROUTER"
ip netns exec "$ROUTER" sysctl -qw net.ipv4.ip_forward=1
for ((k = 1; k <= COLD_K; k++)); do
	add_ns "$(ns "$k")"
	ip -n "$ROUTER" link add "r$k" type veth peer name eth0 netns "$(ns "$k")"
	ip -n "$ROUTER" addr add "10.78.$k.1/24" dev "r$k"
	ip -n "$ROUTER" link set "r$k" up
	ip -n "$(ns "$k")" addr add "$(ip_of "$k")/24" dev eth0
	ip -n "$(ns "$k")" link set eth0 up
	ip -n "$(ns "$k")" route add default via "10.78.$k.1"
done
echo "  namespaces ${NS_PREFIX}n1..n$COLD_K (n$COLD_K: cold lookups), each 10.78.K.2 behind $ROUTER"

step "delay: wandelay in $ROUTER (RTT ${RTT_MIN}..${RTT_MAX} ms per pair, loss $LOSS)"
# The router runs ahead of everything else (nice -15): starved of CPU
# by a hundred nodes on two cores, it delayed packets by seconds beyond
# the RTT it models, and connections timed out.
setsid nice -n -15 ip netns exec "$ROUTER" "$BIN/wandelay" -queue 0 -rtt-min "${RTT_MIN}ms" -rtt-max "${RTT_MAX}ms" -loss "$LOSS" \
	>"$WORK/wandelay.out" 2>"$WORK/wandelay.log" &
PIDS+=($!)
DELAY_PID=$!
deadline=$((SECONDS + 30))
until grep -q "WANDELAY ready" "$WORK/wandelay.out" 2>/dev/null; do
	kill -0 "$DELAY_PID" 2>/dev/null || { cat "$WORK/wandelay.log"; die "wandelay exited"; }
	((SECONDS < deadline)) || die "wandelay not ready after 30 s"
	sleep 0.1
done
# No --queue-bypass: without wandelay nothing is forwarded, never undelayed.
ip netns exec "$ROUTER" iptables -A FORWARD -j NFQUEUE --queue-num 0
echo "  FORWARD -> NFQUEUE 0; $(head -n1 "$WORK/wandelay.out")"

step "nodes and peers: lmosnode up and wanlab peer in namespaces 1..$NODES"
# Each node and raw host runs on one OS thread of Go code: with two per
# process, two hundred mostly idle processes on a few cores spend their
# time spinning in Go's scheduler and waking each other (futex), and the
# handshakes of the links time out behind them.
export GOMAXPROCS=${LAB_GOMAXPROCS:-1}
t0=$(now)
NODE_PIDS=()
PEER_IDS=()
for ((k = 1; k <= NODES; k++)); do
	ip netns exec "$(ns "$k")" "$BIN/lmosnode" init --home "$(home "$k")" >/dev/null
	PEER_IDS[k]=$("$BIN/lmosnode" id --home "$(home "$k")" | awk '/^peer ID:/ {print $3}')
done
# With --scale a node's bootstrap peers are its ring neighbours, as an
# operator configures a few known peers: a node whose DHT routing table
# ran empty (its identify exchanges timed out on the loaded machine, in a
# 100-node run) dials them again, where without any it stayed alone.
bootstrap() {
	local prev=$(($1 == 1 ? NODES : $1 - 1)) next=$(($1 % NODES + 1))
	printf '%s\n' "$(listen_addr "$prev")/p2p/${PEER_IDS[prev]}" "$(listen_addr "$next")/p2p/${PEER_IDS[next]}" | jq -R . | jq -s .
}
for ((k = 1; k <= NODES; k++)); do
	jq --arg scale "$SCALE" --arg role "$(role "$k")" --argjson things "$((THINGS * 2 + 100))" --argjson budget "$((AUTO_BUDGET << 20))" \
		--argjson boot "$(bootstrap "$k")" '.mdns = false | .dhtMode = "server" | .autoNAT = false | .holePunching = false | .relayClient = false
		| .connMgr.dialTimeout = "30s"
		| if $scale == "1" then .quota.maxThings = $things | .role = $role | .pprof = true | .bootstrap = $boot else . end
		| if $role == "auto" and $budget > 0 then .quota.maxLearnedBytes = $budget else . end' \
		"$(home "$k")/config.json" >"$WORK/config.tmp" && mv "$WORK/config.tmp" "$(home "$k")/config.json"
	setsid ip netns exec "$(ns "$k")" "$BIN/lmosnode" up --home "$(home "$k")" \
		--listen "$(listen_addr "$k")" --api "$API" --mdns=false >"$WORK/node$k.log" 2>&1 &
	PIDS+=($!)
	NODE_PIDS+=($!)
	setsid ip netns exec "$(ns "$k")" "$BIN/wanlab" peer -index "$k" -home "$(home "$k")" -transport "$TRANSPORT" \
		-raw="$([[ $RAW == beside ]] && echo true || echo false)" >"$WORK/peer$k.log" 2>&1 &
	PIDS+=($!)
done
mkdir -p "$WORK/cold"
setsid ip netns exec "$(ns "$COLD_K")" "$BIN/wanlab" peer -index "$COLD_K" -home "$WORK/cold" -cold -lmosnode "$BIN/lmosnode" -transport "$TRANSPORT" \
	>"$WORK/peer$COLD_K.log" 2>&1 &
PIDS+=($!)
if [[ $RAW == beside ]]; then
	echo "  started $NODES nodes, $NODES raw hosts and the cold peer in $(since "$t0")"
else
	echo "  started $NODES nodes, their peers (raw hosts later, apart) and the cold peer in $(since "$t0")"
fi

# drive OUT ARGS... runs `wanlab drive` in the router namespace, output
# to OUT, showing its progress; its status is in rc.
drive() {
	local out=$1
	shift
	: >"$out" # for the progress display's tail, before the driver writes
	timeout "$TIMEOUT" ip netns exec "$ROUTER" "$BIN/wanlab" drive -n "$NODES" -samples "$SAMPLES" -cold-samples "$COLD" -transport "$TRANSPORT" \
		-rtt-min "${RTT_MIN}ms" -rtt-max "${RTT_MAX}ms" "$@" >"$out" 2>&1 &
	DRIVE_PID=$!
	PIDS+=($DRIVE_PID)
	# Show the driver's progress in the background: the script itself waits
	# in `wait`, which a signal interrupts (a foreground pipeline would hold
	# the INT and TERM traps until the measurements end).
	tail -n +1 -f --pid "$DRIVE_PID" "$out" | grep --line-buffered -v '^BENCHTAB ' &
	PIDS+=($!)
	SHOW_PID=$!
	wait "$DRIVE_PID" || rc=$?
	wait "$SHOW_PID" || true
}

step "measure: wanlab drive in $ROUTER (stops after ${TIMEOUT}s$([[ $RAW == apart ]] && echo ", the nodes' run and the raw hosts' run each"))"
t0=$(now)
rc=0
SCALE_ARGS=()
DIRECTORY_NODES=0
[[ $ROLES == light || $ROLES == auto ]] && DIRECTORY_NODES=1
((SCALE)) && SCALE_ARGS=(-scale -things "$THINGS" -caps "$CAPS" -kill "$KILL" -ready 10m -directory-nodes "$DIRECTORY_NODES" -others "$ROLES")
OUTS=("$WORK/drive.out")
if [[ $RAW == beside ]]; then
	drive "$WORK/drive.out" "${SCALE_ARGS[@]}"
else
	drive "$WORK/drive.out" "${SCALE_ARGS[@]}" -phase nodes -results "$WORK/nodes.json"
	if ((rc == 0)); then
		step "the raw baseline, apart: the nodes stopped, a raw host in each namespace"
		kill -TERM "${NODE_PIDS[@]}" 2>/dev/null || true
		for pid in "${NODE_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
		OUTS+=("$WORK/drive-raw.out")
		drive "$WORK/drive-raw.out" "${SCALE_ARGS[@]}" -phase raw -results "$WORK/nodes.json"
	fi
fi

DELAY_CPU=$(ps -o times= -p "$DELAY_PID" 2>/dev/null | tr -d ' ' || true)
kill -TERM "$DELAY_PID" 2>/dev/null && wait "$DELAY_PID" 2>/dev/null || true
KIND="WAN lab"
((SCALE)) && KIND="scale lab, roles $ROLES, $THINGS Things per node over $CAPS capabilities, $KILL killed,"
printf '\n== summary (%s %s: %d nodes + %d raw hosts (%s) over %s, RTT %s..%s ms per pair, loss %s; measured in %s)\n\n' \
	"$KIND" "$LAB" "$NODES" "$NODES" "$RAW" "$TRANSPORT" "$RTT_MIN" "$RTT_MAX" "$LOSS" "$(since "$t0")"
if grep -q '^BENCHTAB ' "${OUTS[@]}"; then
	cat "${OUTS[@]}" | "$BIN/benchtab"
fi
echo
echo "router: $(grep 'WANDELAY stats' "$WORK/wandelay.out" | tail -n1 | sed 's/^WANDELAY stats //'); wandelay CPU ${DELAY_CPU:-?} s"
echo "load: $(uptime | sed 's/.*load average/load average/')"
# The scale lab's heap profiles of a directory and a light node, idle
# and loaded (wanlab drive, heapProfiles): where the heap per Thing held
# goes.
# (None in the WAN lab: grep's status must not end the script.)
{ grep '^heap profile: ' "$WORK/drive.out" || true; } | while read -r _ _ role _ k file; do
	[[ -s $file ]] || continue
	printf '\n-- heap in use after a GC, %s node %s (%s), top 15\n' "$role" "${k%:}" "$(basename "$file")"
	go tool pprof -top -nodecount=15 -sample_index=inuse_space "$file" 2>/dev/null | sed -n '/^Showing nodes/p;/^ *flat/,$p'
done
# ...and where the machine's CPU and two nodes' went while the loaded
# propagation samples ran (wanlab drive, profileCPU).
grep -h '^during the propagation samples: ' "${OUTS[@]}" 2>/dev/null || true
{ grep '^cpu profile: ' "$WORK/drive.out" || true; } | while read -r _ _ role _ k file; do
	[[ -s $file ]] || continue
	printf '\n-- CPU, %s node %s, during the propagation samples, top 20 (cumulative)\n' "$role" "${k%:}"
	go tool pprof -top -cum -nodecount=20 "$file" 2>/dev/null | sed -n '/^Showing nodes/p;/^ *flat/,$p'
	printf -- '-- the same, top 15 (flat)\n'
	go tool pprof -top -nodecount=15 "$file" 2>/dev/null | sed -n '/^Showing nodes/p;/^ *flat/,$p'
done
if ((rc != 0)); then
	echo "FAIL: the measurements ended with status $rc (124: --timeout)"
	for f in "$WORK"/peer*.log "$WORK"/node1.log; do
		[[ -s $f ]] || continue
		printf '\n-- last lines of %s\n' "$f"
		tail -n 8 "$f"
	done
	exit 1
fi
FAILED=0
echo "result: PASS"
