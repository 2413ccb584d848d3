#!/usr/bin/env bash
# scripts/bench.sh — the performance table: lmosnode against the raw stack
# it is built on (libp2p, gossipsub, kad-dht), each figure measured side by
# side in one run, printed as one Markdown table.
#
# It runs the Go benchmarks listed in BENCHES below (go test -run '^$'
# -bench …), writes their raw output to a file in a fresh temporary
# directory (its path is printed), and pipes it through
# internal/benchtab/cmd/benchtab, which turns the BENCHTAB lines the
# benchmarks print (benchtab.Print) into the table. Everything runs on this
# machine: nodes and hosts listen on 127.0.0.1 only, mDNS off, no bootstrap
# peers but the benchmarks' own. Nothing is installed; Go is all it needs.
#
#   bash scripts/bench.sh            # the full table (≤ 10 minutes on 2 cores)
#   bash scripts/bench.sh --quick    # a smoke run: fewer samples and nodes (≤ 2 min)
#
# It is not part of CI (scripts/test.sh): benchmarks run only with -bench.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
	cat <<EOF
usage: $0 [--quick]

  --quick   fewer samples and smaller networks, for a smoke run
  -h        this help

Environment: GO (go command, default go).
EOF
}

quick=0
case "${1:-}" in
"") ;;
--quick) quick=1 ;;
-h | --help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac
GO=${GO:-go}

# One `go test` invocation per line, five fields separated by spaces:
#
#   package  -bench pattern  -benchtime  --quick pattern  --quick benchtime
#
# A --quick pattern of "-" leaves the line out of a --quick run. A pattern
# that matches no benchmark (yet) is fine: go test runs nothing. The
# network benchmarks take one sample per iteration, so their benchtime is a
# count ("30x"); each NodeCost case measures in fresh processes of its own.
# To add a row, add its benchmark (reporting with benchtab.Print) and a line.
BENCHES=(
	"./node            Propagation          30x  Propagation/N=10$    10x"
	"./node            ColdDiscovery        15x  ColdDiscovery        5x"
	"./node            NodeCost/idle$       1x   NodeCost/idle$       1x"
	"./node            NodeCost/nodes=25$   1x   NodeCost/nodes=25$   1x"
	"./node            NodeCost/nodes=50$   1x   -                    -"
	"./node            NodeCost/nodes=100$  1x   -                    -"
	"./node            RequestReply|Stream  1s   RequestReply|Stream  100ms"
	"./node            GroupRemove          20x  GroupRemove/N=10$    5x"
	"./node/interact   RequestReply         1s   RequestReply         100ms"
	"./node/directory  Table                1s   Table                100ms"
	"./cmd/lmosnode    Startup              10x  Startup              3x"
)

dir=$(mktemp -d "${TMPDIR:-/tmp}/lmosnode-bench.XXXXXX")
raw="$dir/bench.out"
: >"$raw"
echo "raw benchmark output: $raw" >&2

began=$SECONDS
failed=()
for line in "${BENCHES[@]}"; do
	read -r pkg pattern benchtime qpattern qbenchtime <<<"$line"
	if ((quick)); then
		[[ "$qpattern" == - ]] && continue
		pattern=$qpattern benchtime=$qbenchtime
	fi
	printf '== %s -bench %q -benchtime %s\n' "$pkg" "$pattern" "$benchtime" | tee -a "$raw" >&2
	if ! "$GO" test -count=1 -timeout 10m -run '^$' -bench "$pattern" -benchtime "$benchtime" "$pkg" 2>&1 | tee -a "$raw" >&2; then
		failed+=("$pkg $pattern")
	fi
done

echo >&2
echo "benchmarks took $((SECONDS - began)) s; raw output: $raw" >&2
"$GO" run ./internal/benchtab/cmd/benchtab <"$raw"
if ((${#failed[@]})); then
	printf 'FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
