#!/usr/bin/env bash
# scripts/lab-directory.sh — the directory lab: what a whole node costs
# that holds a large directory (issue 29: "a directory node holds 1M Things
# in <= 300 MB heap"). One `lmosnode up` on 127.0.0.1 (no root, no
# namespaces, mDNS off, no peers), role directory, pprof on.
#
#   1. idle    the node with an empty directory: heap after a GC, RSS;
#   2. fill    the node stopped, `dirlab fill` writes N Things of the
#              directory benchmark's synthetic federation (internal/
#              dircorpus: 200 publishers, 2,000 Zipf-popular capabilities),
#              each TD signed by its publisher, into the node's datastore
#              with the node's own directory settings;
#   3. loaded  the node started again on them (the time until its API
#              answers is the load), then its heap after a GC, RSS and the
#              top of its heap profile, capability, free-text and sorted
#              queries through its HTTP API (GET /things, pages of 20),
#              and its heap again (its caches filled by the queries).
#
# The work directory (the node's home; ~4.6 GB at 1M Things) is removed on
# every exit unless --keep.
#
# Usage: scripts/lab.sh directory [-n THINGS] [--queries Q] [--keep]
#   THINGS default 1000000 (the fill signs ~1,000 a second on 2 cores:
#   ~17 min at 1M); Q default 2000. env: LAB_PORT (default 47800), GO.
set -euo pipefail

LAB_NAME=lab-directory
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lablib.sh
source "$REPO/scripts/lablib.sh"
die() {
	echo "$LAB_NAME: $*" >&2
	exit 1
}

THINGS=1000000
QUERIES=2000
KEEP=${LAB_KEEP:-0}
while (($#)); do
	case $1 in
	-n | --things) THINGS=$2 && shift ;;
	--queries) QUERIES=$2 && shift ;;
	--keep) KEEP=1 ;;
	-h | --help)
		sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
PORT=${LAB_PORT:-47800}
GO=${GO:-go}

need jq jq
need curl curl
WORK=$(mktemp -d /tmp/lab-directory.XXXXXX)
HOME_DIR=$WORK/node
PID=
cleanup() {
	local rc=$?
	[[ -z $PID ]] || stop_pids "$PID"
	if ((rc != 0 || KEEP)); then
		echo "$LAB_NAME: work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "build"
(cd "$REPO" && "$GO" build -o "$WORK/lmosnode" ./cmd/lmosnode && "$GO" build -o "$WORK/dirlab" ./internal/dirlab) ||
	die "build failed"
"$WORK/lmosnode" init --home "$HOME_DIR" >/dev/null
jq --arg listen "/ip4/127.0.0.1/tcp/$PORT" --arg api "127.0.0.1:$((PORT + 1))" \
	'.listen = [$listen] | .api = $api | .mdns = false | .autoNAT = false | .holePunching = false
	| .relayClient = false | .role = "directory" | .pprof = true
	| .quota.maxThings = 1000000000 | .quota.maxBytes = 1000000000000 | .quota.maxLearnedBytes = 1000000000000' \
	"$HOME_DIR/config.json" >"$WORK/config.tmp" && mv "$WORK/config.tmp" "$HOME_DIR/config.json"

start() { # start the node; prints how long until its API answered
	local t0
	t0=$(now)
	setsid "$WORK/lmosnode" up --home "$HOME_DIR" >>"$WORK/node.log" 2>&1 &
	PID=$!
	until curl -sf "http://127.0.0.1:$((PORT + 1))/api/v1/node" >/dev/null 2>&1; do
		kill -0 "$PID" 2>/dev/null || { tail -n 20 "$WORK/node.log"; die "the node exited"; }
		sleep 0.2
	done
	echo "  the node's API answers after $(since "$t0")"
}
stop() {
	stop_pids "$PID"
	PID=
}

step "1. idle: the node with an empty directory"
start
"$WORK/dirlab" measure -home "$HOME_DIR" -queries 0 | sed -n '1p'
stop

step "2. fill: $THINGS Things, each signed by its publisher"
t0=$(now)
(cd "$REPO" && "$WORK/dirlab" fill -home "$HOME_DIR" -n "$THINGS") || die "fill failed"
echo "  written in $(since "$t0"); datastore $(du -sh "$HOME_DIR/datastore" | cut -f1)"

step "3. loaded: the node holds them"
start
"$WORK/dirlab" measure -home "$HOME_DIR" -queries "$QUERIES"
for prof in heap heap-queried; do
	printf '\n-- heap in use (%s.pb.gz), top 15\n' "$prof"
	"$GO" tool pprof -top -nodecount=15 -sample_index=inuse_space "$HOME_DIR/$prof.pb.gz" 2>/dev/null | sed -n '/^Showing nodes/p;/^ *flat/,$p'
done
stop
step "PASS"
