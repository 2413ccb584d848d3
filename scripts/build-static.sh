#!/usr/bin/env sh
# Builds the static lmosnode binary the container image ships (Dockerfile)
# and packaging/lmosnode.service runs: no cgo, so it runs on any Linux
# without a libc; -trimpath and no symbol table for a small, reproducible
# binary; VERSION is what 'lmosnode version' prints.
#
#   sh scripts/build-static.sh OUT [VERSION]
#
# cmd/lmosnode's TestStaticBinary runs this script and checks the result.
set -eu
out=${1:?usage: build-static.sh OUT [VERSION]}
version=${2:-devel}
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath \
	-ldflags "-s -w -X github.com/lmosnode/lmosnode/node/version.Version=$version" \
	-o "$out" ./cmd/lmosnode
