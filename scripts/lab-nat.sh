#!/usr/bin/env bash
# scripts/lab-nat.sh — the NAT lab, run as `scripts/lab.sh nat`: lmosnode
# nodes behind NAT routers reach each other through circuit relays, and
# directly where hole punching can work. Everything lives in network
# namespaces this script creates; nothing has a route off the machine.
#
#   public segment (bridge lmosnat<ID>, 11.77.<ID>.0/24, addresses libp2p
#   counts as public; the host namespace has no address on it):
#     boot (.10)  pub2 (.11)  pub3 (.12)   lmosnode, DHT servers
#     relay1 (.21)  relay2 (.22)           lmosnode --relay-service
#     r1 (.101)  r2 (.102)  r3 (.103)      NAT routers (nftables masquerade)
#   private LANs, each behind its router:
#     p1 192.168.11.2 behind r1: endpoint-independent mapping (EIM)
#     p2 192.168.12.2 behind r2: endpoint-independent mapping (EIM)
#     p3 192.168.13.2 behind r3: symmetric (port-random) mapping
#
# Scenario, each step against a deadline:
#   1. public   the public nodes start; pub2 and pub3 find themselves
#               public (AutoNAT); both relays, pinned public, serve as relays;
#   2. private  p1..p3 start with both relays configured; each finds itself
#               private and holds a relay reservation (figure: time until
#               reachable);
#   3. publish  p1 publishes an Agent backed by an HTTP service in its LAN;
#               p2 and p3 find it (figure: time until discovery) and call
#               it over libp2p, request-reply and a stream (figure: time
#               until the first call);
#   4. upgrade  p2's connection to p1 becomes direct (hole punching through
#               two EIM NATs); p3's stays relayed (symmetric NAT) and its
#               calls still work (figure: share of connections that end
#               direct per NAT type);
#   5. latency  calls over the direct and the relayed connection (figure:
#               median latency of each; with `tc netem` delay on the
#               routers' and relays' links where the kernel has netem);
#   6. punch again  p2's router drops what goes to or comes from p1's
#               router: p2's direct connection to p1 dies, its next call
#               goes through a relay, and every punch fails. The firewall
#               goes; p1 punches again on its own and the connection
#               becomes direct (figure: time from the firewall's end);
#   7. failover the relay carrying p3's connection dies; p3 calls p1 again
#               through the other relay, and still finds the Agent.
#
# Namespaces, bridge, veths and processes are removed on every exit,
# including failures and Ctrl-C. Needs root. See docs/lab.md and docs/nat.md.
set -euo pipefail

usage() {
	cat <<EOF
usage: scripts/lab.sh nat [options]

  -d, --deadline S    seconds each step may take (default 90; env LAB_DEADLINE)
  -i, --id ID         lab number 0..9: bridge lmosnat<ID>, namespaces
                      lmosnat<ID>-<name>, public subnet 11.77.<ID>.0/24
                      (default 0; env LAB_ID)
      --delay MS      one-way delay added by tc netem on each router's WAN
                      link (default 20; 0: none; env LAB_DELAY); the relays'
                      links get twice as much (a relay is far away)
      --keep          keep the work directory (always kept on failure)
      --hold          after the checks, keep the lab running until Ctrl-C
      --clean         remove what a killed run of lab <ID> left behind
  -h, --help          this help

Environment: GO (go command, default go), LMOSNODE_BIN (use this lmosnode
binary instead of building one).
EOF
}

ARGS=("$@")
DEADLINE=${LAB_DEADLINE:-90}
LAB=${LAB_ID:-0}
DELAY=${LAB_DELAY:-20}
KEEP=${LAB_KEEP:-0}
HOLD=0
CLEAN_ONLY=0
GO=${GO:-go}

while (($#)); do
	case $1 in
	-d | --deadline) DEADLINE=${2:?$1 needs a value}; shift 2 ;;
	-i | --id) LAB=${2:?$1 needs a value}; shift 2 ;;
	--delay) DELAY=${2:?$1 needs a value}; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--hold) HOLD=1; shift ;;
	--clean) CLEAN_ONLY=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "lab nat: unknown argument: $1 (see --help)" >&2; exit 2 ;;
	esac
done

die() { echo "lab nat: $*" >&2; exit 1; }

[[ $DEADLINE =~ ^[0-9]+$ ]] && ((DEADLINE >= 1)) || die "--deadline: $DEADLINE: want a positive number of seconds"
[[ $LAB =~ ^[0-9]$ ]] || die "--id: $LAB: want a digit 0..9"
[[ $DELAY =~ ^[0-9]+$ ]] || die "--delay: $DELAY: want milliseconds"
((EUID == 0)) || die "needs root: it creates network namespaces, a bridge, veth pairs and NAT rules. Run: sudo scripts/lab.sh nat ${ARGS[*]}"

REPO=$(cd "$(dirname "$0")/.." && pwd)
BRIDGE=lmosnat$LAB
NS_PREFIX=lmosnat$LAB-
PUB=11.77.$LAB
API=127.0.0.1:5080 # each namespace has its own loopback
PORT=4001
BACKEND=127.0.0.1:9000

PUBLIC=(boot pub2 pub3 relay1 relay2)
declare -A PUB_IP=([boot]=$PUB.10 [pub2]=$PUB.11 [pub3]=$PUB.12 [relay1]=$PUB.21 [relay2]=$PUB.22)
ROUTERS=(r1 r2 r3)
declare -A ROUTER_IP=([r1]=$PUB.101 [r2]=$PUB.102 [r3]=$PUB.103)
declare -A ROUTER_NAT=([r1]=eim [r2]=eim [r3]=symmetric)
PRIVATE=(p1 p2 p3)
declare -A ROUTER_OF=([p1]=r1 [p2]=r2 [p3]=r3)
declare -A LAN_NET=([p1]=192.168.11 [p2]=192.168.12 [p3]=192.168.13)

ns() { echo "$NS_PREFIX$1"; }
LAB_NAME="lab nat"
# shellcheck source=scripts/lablib.sh
source "$REPO/scripts/lablib.sh"

# ---------------------------------------------------------------------------
# Cleanup: everything is recorded before it is created and removed on
# every exit path.

PIDS=()
declare -A PID_OF=()
CREATED_NS=()
CREATED_BRIDGE=0
WORK=""
FAILED=1

LAB_LABEL="lab nat"

if ((CLEAN_ONLY)); then
	mapfile -t stale < <(ip netns list | awk '{print $1}' | grep "^${NS_PREFIX}" || true)
	remove_lab "${stale[@]}"
	echo "lab nat: removed ${#stale[@]} namespaces of NAT lab $LAB and bridge $BRIDGE (if they existed)"
	exit 0
fi

trap lab_cleanup EXIT
trap 'echo "lab nat: interrupted" >&2; exit 130' INT
trap 'echo "lab nat: terminated" >&2; exit 143' TERM

need ip iproute2
need tc iproute2
need nft nftables
need curl curl
need jq jq

if ip link show "$BRIDGE" >/dev/null 2>&1 || ip netns list | grep -q "^$NS_PREFIX"; then
	die "NAT lab $LAB exists (another run, or one that was killed): run 'scripts/lab.sh nat --clean --id $LAB' or pick another --id"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lmosnat$LAB.XXXXXX")
BIN=$WORK/bin
mkdir -p "$BIN"

step "build"
t0=$(now)
build_lab ./node/interact interact.test
echo "built lmosnode and the lab's Agent backend in $(since "$t0")"

# ---------------------------------------------------------------------------
# Network.

NETEM=""
# delay NS DEV MS: add MS of one-way delay on DEV's egress, if the kernel
# has netem (sch_netem); otherwise say so once and go on without.
delay() {
	(($3 > 0)) || return 0
	[[ $NETEM == missing ]] && return 0
	if ip netns exec "$(ns "$1")" tc qdisc add dev "$2" root netem delay "${3}ms" 2>"$WORK/netem.err"; then
		NETEM=yes
	else
		NETEM=missing
		echo "  tc netem not available in this kernel ($(head -n1 "$WORK/netem.err")): no delay added; latencies are the lab's own"
	fi
}

add_ns() {
	CREATED_NS+=("$(ns "$1")")
	ip netns add "$(ns "$1")"
	ip -n "$(ns "$1")" link set lo up
}

# public_link NAME IP DEV: NAME's interface DEV on the public bridge.
public_link() {
	local host=n$LAB${1}
	ip link add "$host" type veth peer name "$3" netns "$(ns "$1")"
	ip link set "$host" master "$BRIDGE" up
	ip -n "$(ns "$1")" addr add "$2/24" dev "$3"
	ip -n "$(ns "$1")" link set "$3" up
}

# nat_rules KIND: the router's nftables ruleset. Both kinds masquerade what
# leaves through wan and forward nothing inbound that the LAN did not
# start (conntrack's address- and port-dependent filtering). eim keeps
# the LAN's source port where it can (the same public port for every
# destination: endpoint-independent mapping), so a hole punch's SYN or
# QUIC packet from the peer matches the mapping the node's own punch
# opened. Unsolicited packets to the router itself are rejected in its
# input chain, so that the early punch of one peer (arriving before the
# other's own punch opened the mapping) leaves no conntrack entry behind
# that would take the mapping's port. symmetric picks a random port for every new mapping
# (random,fully-random): the address peers observe is not the one a punch
# leaves from, so hole punching cannot succeed.
nat_rules() {
	local masq=masquerade
	[[ $1 == symmetric ]] && masq="masquerade random,fully-random"
	cat <<EOF
table ip lmosnat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "wan" $masq
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		iifname "lan" oifname "wan" accept
	}
	chain input {
		type filter hook input priority filter; policy accept;
		iifname "wan" ct state new meta l4proto tcp reject with tcp reset
		iifname "wan" ct state new reject
	}
}
EOF
}

step "network: public bridge $BRIDGE ($PUB.0/24), ${#ROUTERS[@]} NAT routers, ${#PRIVATE[@]} private LANs"
CREATED_BRIDGE=1
ip link add "$BRIDGE" type bridge
ip link set "$BRIDGE" up
for name in "${PUBLIC[@]}"; do
	add_ns "$name"
	public_link "$name" "${PUB_IP[$name]}" eth0
done
for r in "${ROUTERS[@]}"; do
	add_ns "$r"
	public_link "$r" "${ROUTER_IP[$r]}" wan
	ip netns exec "$(ns "$r")" sysctl -qw net.ipv4.ip_forward=1
	nat_rules "${ROUTER_NAT[$r]}" | ip netns exec "$(ns "$r")" nft -f -
done
for p in "${PRIVATE[@]}"; do
	r=${ROUTER_OF[$p]}
	add_ns "$p"
	ip -n "$(ns "$r")" link add lan type veth peer name eth0 netns "$(ns "$p")"
	ip -n "$(ns "$r")" addr add "${LAN_NET[$p]}.1/24" dev lan
	ip -n "$(ns "$r")" link set lan up
	ip -n "$(ns "$p")" addr add "${LAN_NET[$p]}.2/24" dev eth0
	ip -n "$(ns "$p")" link set eth0 up
	ip -n "$(ns "$p")" route add default via "${LAN_NET[$p]}.1"
done
for r in "${ROUTERS[@]}"; do delay "$r" wan "$DELAY"; done
for r in relay1 relay2; do delay "$r" eth0 $((2 * DELAY)); done
for r in "${ROUTERS[@]}"; do
	echo "  $(ns "$r"): ${ROUTER_IP[$r]} masquerades ${ROUTER_NAT[$r]}"
done
[[ $NETEM == yes ]] && echo "  netem: ${DELAY} ms on each router's WAN link, $((2 * DELAY)) ms on each relay's link (one way)"

# ---------------------------------------------------------------------------
# Nodes.

declare -A PEER_ID=() STARTED=()
home() { echo "$WORK/$1"; }
nsx() {
	local name=$1
	shift
	ip netns exec "$(ns "$name")" "$@"
}
api_get() { # NAME PATH OUTFILE -> HTTP status
	nsx "$1" curl -sS --max-time 3 -o "$3" -w '%{http_code}' "http://$API$2" 2>/dev/null || true
}
info() { # NAME FILTER: jq FILTER over GET /api/v1/node
	api_get "$1" /api/v1/node "$WORK/info-$1.json" >/dev/null
	jq -r "$2" "$WORK/info-$1.json" 2>/dev/null || true
}
addr_of() { echo "/ip4/$2/tcp/$PORT/p2p/${PEER_ID[$1]}"; }

# start NAME IP JQ ARGS...: init NAME's home, apply the jq edit JQ to its
# config.json, and run `lmosnode up` in its namespace.
start() {
	local name=$1 ip=$2 edit=$3
	shift 3
	nsx "$name" "$BIN/lmosnode" init --home "$(home "$name")" >/dev/null
	jq "$edit" "$(home "$name")/config.json" >"$WORK/config.tmp" && mv "$WORK/config.tmp" "$(home "$name")/config.json"
	STARTED[$name]=$(now)
	setsid ip netns exec "$(ns "$name")" "$BIN/lmosnode" up --home "$(home "$name")" \
		--listen "/ip4/$ip/tcp/$PORT" --listen "/ip4/$ip/udp/$PORT/quic-v1" \
		--api "$API" --mdns=false --log-level debug "$@" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	PID_OF[$name]=$!
}

# wait_until DEADLINE WHAT CMD...: run CMD every 0.2 s until it succeeds.
wait_until() {
	local deadline=$1 what=$2 started=$SECONDS
	shift 2
	until "$@"; do
		if ((SECONDS >= deadline)); then
			echo "FAIL: $what: not within $((deadline - started))s"
			return 1
		fi
		sleep 0.2
	done
}

api_up() { [[ $(api_get "$1" /api/v1/node "$WORK/info-$1.json") == 200 ]]; }
record_id() { PEER_ID[$1]=$(jq -r .peerID "$WORK/info-$1.json"); }
is_public() { [[ $(info "$1" .reachability) == public ]]; }
has_relay() { [[ $(info "$1" '.relays // [] | length') -ge 1 ]]; }

FIG=() # figures for the summary: "label|value"
fig() {
	FIG+=("$1|$2")
	printf '  %-44s %s\n' "$1" "$2"
}

step_public() {
	step "public: boot, pub2, pub3, relay1, relay2 (DHT servers; relays with --relay-service)"
	local deadline=$((SECONDS + DEADLINE)) name t0
	t0=$(now)
	start boot "${PUB_IP[boot]}" '.dhtMode = "server"'
	wait_until "$deadline" "boot's API" api_up boot || return 1
	record_id boot
	for name in pub2 pub3; do
		start "$name" "${PUB_IP[$name]}" '.dhtMode = "server"' --bootstrap "$(addr_of boot "${PUB_IP[boot]}")"
	done
	for name in relay1 relay2; do
		# The lab's relays carry calls and streams for minutes: 1 MiB and
		# 10 minutes per relayed connection instead of 128 KiB and 2.
		# They are pinned public, as docs/nat.md asks of a relay: left to
		# AutoNAT, a relay whose verdict wavered stopped its relay service
		# and dropped every reservation (the failover step then failed,
		# about one run in five).
		start "$name" "${PUB_IP[$name]}" '.dhtMode = "server" | .reachability = "public" | .relayLimits = {"connDuration": "10m", "connDataBytes": 1048576}' \
			--relay-service --bootstrap "$(addr_of boot "${PUB_IP[boot]}")"
	done
	for name in pub2 pub3 relay1 relay2; do
		wait_until "$deadline" "$name's API" api_up "$name" || return 1
		record_id "$name"
	done
	for name in pub2 pub3; do
		wait_until "$deadline" "$name finds itself public (AutoNAT)" is_public "$name" || return 1
		echo "  $name: ${PEER_ID[$name]} public (AutoNAT) after $(since "${STARTED[$name]}")"
	done
	for name in relay1 relay2; do
		wait_until "$deadline" "$name is public (pinned)" is_public "$name" || return 1
		echo "  $name: ${PEER_ID[$name]} public after $(since "${STARTED[$name]}")"
	done
	echo "public segment up in $(since "$t0")"
}

# watch_p2 (in the background): record, every 0.2 s, how p2 is connected
# to p1 ("<seconds since p2 started> relayed|direct"), until direct.
watch_p2() {
	local e
	while [[ ! -e $WORK/stop ]]; do
		api_get p2 /api/v1/peers "$WORK/watch.json" >/dev/null
		e=$(jq -r --arg id "${PEER_ID[p1]}" '.[] | select(.peerID == $id) | if .relayed then "relayed" else "direct" end' "$WORK/watch.json" 2>/dev/null || true)
		if [[ -n $e ]]; then
			echo "$(since "${STARTED[p2]}") $e" >>"$WORK/watch-p2.log"
			[[ $e == direct ]] && return 0
		fi
		sleep 0.2
	done
}

step_private() {
	step "private: p1 and p3, then p2, behind their NATs; relays relay1 and relay2 configured"
	# p2 starts once p1 is reachable, so that it meets p1 through the
	# relay first, as a node that joins later does.
	private_wave p1 p3 && private_wave p2
}

# private_wave NAME...: start the private nodes NAME... and wait until each
# holds a relay reservation.
private_wave() {
	# Twice the usual deadline: AutoRelay retries a reservation that failed
	# (e.g. before AutoNAT said private) on a backoff of its own; most runs
	# hold one within 15-20 s, one of five on 2026-11-28 not within 90 s.
	local deadline=$((SECONDS + 2 * DEADLINE)) p relays=() hide=()
	relays=(--relay "$(addr_of relay1 "${PUB_IP[relay1]}")" --relay "$(addr_of relay2 "${PUB_IP[relay2]}")")
	for p in "$@"; do
		hide=()
		# p1 announces its relayed addresses only (noAnnounce hides its LAN
		# and the public segment, where its NAT's mapping shows): every
		# other node reaches it through a relay first, and hole punching
		# upgrades the connection where both NATs allow.
		[[ $p == p1 ]] && hide=(--no-announce "/ip4/${LAN_NET[$p]}.0/ipcidr/24" --no-announce "/ip4/$PUB.0/ipcidr/24")
		start "$p" "${LAN_NET[$p]}.2" . --bootstrap "$(addr_of boot "${PUB_IP[boot]}")" "${relays[@]}" "${hide[@]}"
	done
	for p in "$@"; do
		wait_until "$deadline" "$p's API" api_up "$p" || return 1
		record_id "$p"
		if [[ $p == p2 ]]; then
			watch_p2 &
			PIDS+=($!)
		fi
	done
	for p in "$@"; do
		wait_until "$deadline" "$p holds a relay reservation" has_relay "$p" || { tail -n 20 "$WORK/$p.log"; return 1; }
		fig "$p (${ROUTER_NAT[${ROUTER_OF[$p]}]}) reachable via relay after" "$(since "${STARTED[$p]}")"
		[[ $(info "$p" .reachability) == private ]] || { echo "FAIL: $p reports reachability $(info "$p" .reachability), want private"; return 1; }
		echo "    reachability private; relays $(info "$p" '.relays | join(", ")')"
	done
}

AGENT=urn:uuid:00000000-0000-4000-8000-0000000000a1
agent_td() {
	cat <<EOF
{
  "@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
  "@type": "lmos:Agent",
  "id": "$AGENT",
  "title": "NAT lab echo agent",
  "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
  "security": "nosec_sc",
  "actions": {
    "echo": {"input": {"type": "object"}, "output": {"type": "object"}, "forms": [{"href": "http://$BACKEND/actions/echo"}]},
    "count": {"input": {"type": "integer", "minimum": 1, "maximum": 100}, "output": {"type": "integer"}, "forms": [{"href": "http://$BACKEND/actions/count"}]}
  }
}
EOF
}

finds_agent() { # NAME
	nsx "$1" "$BIN/lmosnode" find --json --home "$(home "$1")" 2>/dev/null |
		jq -e --arg id "$AGENT" '[.. | objects | .id? | strings] | index($id) != null' >/dev/null 2>&1
}
call_echo() { # NAME -> output in $WORK/echo-NAME.json
	nsx "$1" "$BIN/lmosnode" invoke "$AGENT" echo '{"q":"hello from '"$1"'"}' --home "$(home "$1")" >"$WORK/echo-$1.json" 2>"$WORK/echo-$1.err" &&
		jq -e --arg q "hello from $1" '.echo.q == $q' "$WORK/echo-$1.json" >/dev/null 2>&1
}
# peer_entry NAME OTHER: NAME's /api/v1/peers entry for OTHER (JSON).
peer_entry() {
	api_get "$1" /api/v1/peers "$WORK/peers-$1.json" >/dev/null
	jq -c --arg id "${PEER_ID[$2]}" '.[] | select(.peerID == $id)' "$WORK/peers-$1.json" 2>/dev/null || true
}
relayed_to_p1() { peer_entry "$1" p1 | jq -r '.relayed' 2>/dev/null || true; }

step_publish() {
	step "publish: p1 publishes an Agent (HTTP backend in its LAN); p2 and p3 find it and call it"
	local deadline=$((SECONDS + DEADLINE)) t0 c via
	LMOS_LAB_BACKEND=$BACKEND LMOS_LAB_STOP=$WORK/stop \
		setsid ip netns exec "$(ns p1)" "$BIN/interact.test" -test.run '^TestLabBackend$' -test.count=1 \
		>"$WORK/backend.out" 2>&1 &
	PIDS+=($!)
	wait_until "$deadline" "the backend listens" grep -qs LAB-BACKEND "$WORK/backend.out" || { cat "$WORK/backend.out"; return 1; }
	agent_td >"$WORK/agent.json"
	nsx p1 "$BIN/lmosnode" things publish "$WORK/agent.json" --backend "http://$BACKEND" --home "$(home p1)" >"$WORK/publish.out" 2>&1 ||
		{ echo "FAIL: publish:"; cat "$WORK/publish.out"; return 1; }
	t0=$(now)
	for c in p2 p3; do
		wait_until "$deadline" "$c finds the Agent" finds_agent "$c" || return 1
		fig "$c finds p1's Agent after publish" "$(since "$t0")"
	done
	for c in p2 p3; do
		wait_until "$deadline" "$c calls the Agent (echo)" call_echo "$c" || { cat "$WORK/echo-$c.err"; return 1; }
		via=$(relayed_to_p1 "$c")
		fig "$c first call (echo) done after publish" "$(since "$t0") ($( [[ $via == true ]] && echo relayed || echo direct) at that moment)"
	done
	for c in p2 p3; do
		nsx "$c" "$BIN/lmosnode" invoke "$AGENT" count 5 --stream --home "$(home "$c")" >"$WORK/stream-$c.out" 2>&1 ||
			{ echo "FAIL: $c: invoke --stream:"; cat "$WORK/stream-$c.out"; return 1; }
		[[ $(grep -cE '^[1-5]$' "$WORK/stream-$c.out") -ge 5 ]] ||
			{ echo "FAIL: $c: the stream did not carry chunks 1..5:"; cat "$WORK/stream-$c.out"; return 1; }
		echo "  $c: stream of 5 chunks from p1's Agent: $(tr '\n' ' ' <"$WORK/stream-$c.out")"
	done
}

direct_to_p1() { [[ $(relayed_to_p1 "$1") == false ]]; }

UPGRADE_WINDOW=30
step_upgrade() {
	step "upgrade: p2<->p1 (EIM<->EIM) becomes direct; p3<->p1 (symmetric<->EIM) stays relayed"
	local deadline=$((SECONDS + DEADLINE)) end relayed_at direct_at
	wait_until "$deadline" "p2's connection to p1 becomes direct (hole punching)" direct_to_p1 p2 || {
		peer_entry p2 p1
		# p2 answers a punch only once it knows a public address of its own.
		echo "  p2's own direct addresses: $(info p2 '[.addrs[] | select(contains("p2p-circuit") | not)] | join(", ")')"
		grep -F "peer=${PEER_ID[p2]}" "$WORK/p1.log" | grep 'hole punch' | tail -n 4
		return 1
	}
	fig "EIM<->EIM: connections ending direct" "1 of 1 (p2->p1)"
	# The watch polls as often as the wait did: give it a moment to see it.
	for _ in {1..10}; do
		grep -qs ' direct$' "$WORK/watch-p2.log" && break
		sleep 0.2
	done
	relayed_at=$(awk '$2 == "relayed" { print $1; exit }' "$WORK/watch-p2.log" 2>/dev/null)
	direct_at=$(awk '$2 == "direct" { print $1; exit }' "$WORK/watch-p2.log" 2>/dev/null)
	fig "p2->p1 relayed, then direct (since p2 started)" "relayed at ${relayed_at:-never seen (upgraded within 0.2 s)}, direct at ${direct_at:-?}"
	echo "  p2 -> p1: $(peer_entry p2 p1 | jq -c .addrs)"
	# Give p3 the same chance: it must still be relayed after the window.
	end=$((SECONDS + UPGRADE_WINDOW))
	while ((SECONDS < end)); do
		if direct_to_p1 p3; then
			echo "FAIL: p3 behind the symmetric NAT reached p1 directly: $(peer_entry p3 p1)"
			return 1
		fi
		sleep 1
	done
	[[ $(relayed_to_p1 p3) == true ]] || { echo "FAIL: p3 has no connection to p1: $(peer_entry p3 p1)"; return 1; }
	fig "symmetric<->EIM: connections ending direct" "0 of 1 (p3->p1 still relayed after ${UPGRADE_WINDOW} s more)"
	call_echo p3 || { echo "FAIL: p3's call over the relay failed:"; cat "$WORK/echo-p3.err"; return 1; }
	echo "  p3 -> p1: $(peer_entry p3 p1 | jq -c .addrs)"
}

# firewall ROUTER IP: ROUTER drops what it would forward to or from IP
# (the other NAT's public address): no punch gets through. unfirewall
# ROUTER lifts it.
firewall() {
	ip netns exec "$(ns "$1")" nft -f - <<EOF
table ip lmosblock {
	chain forward {
		type filter hook forward priority filter - 1; policy accept;
		ip saddr $2 drop
		ip daddr $2 drop
	}
}
EOF
}
unfirewall() { ip netns exec "$(ns "$1")" nft delete table ip lmosblock; }

# p1_log_since LINE: p1's log after its first LINE lines, about p2.
p1_log_since() { tail -n "+$(($1 + 1))" "$WORK/p1.log" | grep -F "peer=${PEER_ID[p2]}" || true; }

step_punch_again() {
	step "punch again: a firewall on r2 drops r1; p2's direct connection to p1 dies, p2 calls p1 through a relay and p1's punch fails; the firewall goes and p1 punches again"
	# go-libp2p punches once, when a relayed connection reaches p1; the
	# node tries again on its own (p2p.Punch: 10 s, then 20, 40, ...).
	local deadline=$((SECONDS + 2 * DEADLINE)) from t0 fails
	from=$(wc -l <"$WORK/p1.log")
	firewall r2 "${ROUTER_IP[r1]}"
	# The direct connection dies on both sides at its idle timeout (tens
	# of seconds); then p2's call goes through a relay.
	relayed_call() { call_echo p2 && [[ $(relayed_to_p1 p2) == true ]]; }
	wait_until "$deadline" "p2 calls p1 through a relay" relayed_call || { cat "$WORK/echo-p2.err"; peer_entry p2 p1; return 1; }
	# Three failed punches (go-libp2p's, or p1's own), or a protocol error.
	punch_failed() {
		fails=$(p1_log_since "$from" | grep -c 'msg="hole punching: end".* ok=false' || true)
		((fails >= 3)) || p1_log_since "$from" | grep -q 'msg="hole punching: protocol error"'
	}
	wait_until "$deadline" "p1's punch with p2 fails" punch_failed || { p1_log_since "$from" | tail -n 5; return 1; }
	[[ $(relayed_to_p1 p2) == true ]] || { echo "FAIL: p2's connection to p1 is not relayed: $(peer_entry p2 p1)"; return 1; }
	fig "p1's punches with p2 (firewall up)" "$fails failed, $(p1_log_since "$from" | grep -c 'hole punching: protocol error' || true) protocol errors"
	unfirewall r2
	t0=$(now)
	wait_until "$deadline" "p2's connection to p1 becomes direct again" direct_to_p1 p2 || { p1_log_since "$from" | tail -n 8; return 1; }
	fig "p2->p1 direct again after the firewall went" "$(since "$t0")"
	p1_log_since "$from" | grep -q 'msg="hole punched again".* err=<nil>' ||
		{ echo "FAIL: p2's connection became direct, but not by p1 punching again:"; p1_log_since "$from" | tail -n 8; return 1; }
	echo "  $(p1_log_since "$from" | grep 'msg="hole punched again".* err=<nil>' | tail -n 1 | grep -o 'attempt=[0-9]*') of p1's own"
}

# latency NAME N: median of N echo calls through NAME's HTTP binding, in ms.
latency() {
	local i url
	url="http://$API/things/$AGENT/actions/echo"
	for ((i = 0; i < $2; i++)); do
		nsx "$1" curl -sS -o /dev/null -w '%{time_total}\n' -X POST -H 'Content-Type: application/json' -d '{"q":"t"}' "$url"
	done | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] * 1000 }'
}

step_latency() {
	step "latency: 15 echo calls each over the direct (p2) and the relayed (p3) connection"
	fig "call latency direct (p2->p1), median" "$(latency p2 15) ms"
	fig "call latency relayed (p3->relay->p1), median" "$(latency p3 15) ms"
}

step_failover() {
	step "failover: the relay carrying p3<->p1 dies; the other one takes over"
	# Twice the usual deadline: the dead relay is noticed by QUIC's idle
	# timeout, then p1's AutoRelay and the DHT must carry its other relayed
	# address to p3, each on timers of tens of seconds (31-36 s in most
	# runs, over 90 s in one of fourteen).
	local deadline=$((SECONDS + 2 * DEADLINE)) used other t0
	used=$(peer_entry p3 p1 | jq -r '.addrs[]' | sed -n 's#.*/p2p/\([^/]*\)/p2p-circuit.*#\1#p' | head -n1)
	if [[ $used == "${PEER_ID[relay1]}" ]]; then used=relay1 other=relay2
	elif [[ $used == "${PEER_ID[relay2]}" ]]; then used=relay2 other=relay1
	else
		echo "FAIL: p3's connection to p1 goes through no known relay: $(peer_entry p3 p1)"
		return 1
	fi
	# The step is a failover to p1's reservation on the other relay: wait
	# until p1 holds one there (a reservation lost earlier, on a loaded
	# machine, is made again after AutoRelay's backoff).
	holds_other() { [[ $(info p1 '.relays // [] | join(",")') == *"${PEER_ID[$other]}"* ]]; }
	wait_until "$deadline" "p1 holds a reservation on $other" holds_other || { echo "  p1 relays: $(info p1 '.relays')"; return 1; }
	echo "  p3 -> p1 goes through $used; killing it (SIGKILL)"
	{ kill -KILL "${PID_OF[$used]}" && wait "${PID_OF[$used]}"; } 2>/dev/null || true
	t0=$(now)
	wait_until "$deadline" "p3 calls p1 again through $other" call_echo p3 || {
		cat "$WORK/echo-p3.err"
		echo "  p1 relays now: $(info p1 '.relays'), addresses: $(info p1 '.addrs')"
		echo "  p3's entry for p1: $(peer_entry p3 p1)"
		return 1
	}
	fig "p3 calls p1 again after $used died" "$(since "$t0")"
	[[ $(peer_entry p3 p1 | jq -r '.addrs[]') == *"${PEER_ID[$other]}"* ]] ||
		{ echo "FAIL: p3 reaches p1 but not through $other: $(peer_entry p3 p1)"; return 1; }
	no_dead_relay() { [[ $(info p1 '.relays // [] | join(",")') != *"${PEER_ID[$used]}"* ]]; }
	wait_until "$deadline" "p1 drops $used from its relays" no_dead_relay || return 1
	echo "  p1 relays now: $(info p1 '.relays | join(", ")')"
	finds_agent p3 || { echo "FAIL: p3 no longer finds the Agent"; return 1; }
	finds_agent p2 || { echo "FAIL: p2 no longer finds the Agent"; return 1; }
	call_echo p2 || { echo "FAIL: p2's call failed after the relay died"; return 1; }
	echo "  p2 and p3 still find and call p1's Agent"
}

summary() {
	local f
	printf '\n== summary (NAT lab %s)\n' "$LAB"
	for f in "${FIG[@]}"; do
		printf '  %-44s %s\n' "${f%%|*}" "${f#*|}"
	done
	printf '  %-44s %s\n' "netem delay" "$([[ $NETEM == yes ]] && echo "${DELAY} ms per router WAN link, $((2 * DELAY)) ms per relay link" || echo "none (${NETEM:-off})")"
	printf '  %-44s %s\n' result "$1"
}

run_started=$(now)
if step_public && step_private && step_publish && step_upgrade && step_latency && step_punch_again && step_failover; then
	FAILED=0
	summary "PASS in $(since "$run_started")"
	if ((HOLD)); then
		echo
		echo "The lab stays up until Ctrl-C. For example:"
		echo "  ip netns exec $(ns p2) $BIN/lmosnode peers --json --home $(home p2)"
		echo "Node logs: $WORK/<name>.log"
		sleep infinity &
		PIDS+=($!)
		wait $!
	fi
else
	summary "FAIL after $(since "$run_started")"
	for f in "$WORK"/*.log; do
		[[ -f $f ]] || continue
		printf '\n-- last lines of %s\n' "$f"
		tail -n 15 "$f"
	done
	exit 1
fi
