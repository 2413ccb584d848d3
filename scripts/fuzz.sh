#!/usr/bin/env bash
# Runs every fuzz target (func FuzzXxx) of the module for a given time each:
#
#   bash scripts/fuzz.sh          # 10s per target
#   bash scripts/fuzz.sh 5m       # a long run
#   bash scripts/fuzz.sh 30s ./proto/...   # only the targets under ./proto
#
# Go keeps every input that makes a target fail in the package's
# testdata/fuzz/<FuzzXxx>/ directory; commit it, and plain `go test` replays
# it from then on. The inputs the fuzzer found interesting are kept in the
# Go cache ($(go env GOCACHE)/fuzz), so a later run starts from them.
# Exits non-zero if any target fails; lists the failures at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${1:-10s}
pattern=${2:-./...}

failed=()
count=0
while IFS= read -r pkg; do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	# the fuzz targets of the package, from its test files
	mapfile -t targets < <(grep -hoE '^func Fuzz[A-Za-z0-9_]*\(' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(/\1/' | sort -u)
	for target in "${targets[@]}"; do
		count=$((count + 1))
		echo "== $pkg $target ($fuzztime)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"; then
			failed+=("$pkg $target")
		fi
	done
done < <(go list "$pattern")

echo "fuzz.sh: $count targets, ${#failed[@]} failed"
if ((${#failed[@]} > 0)); then
	printf '  FAILED %s\n' "${failed[@]}"
	echo "the failing inputs are in the packages' testdata/fuzz/ (commit them with the fix)"
	exit 1
fi
