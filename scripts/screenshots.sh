#!/usr/bin/env bash
# Screenshots of every view of the web console at 1280 px and at 360 px
# (dark scheme) into docs/img/ (not part of the default test run): the
# browser tests of node/console_*browser_test.go with LMOS_SCREENSHOTS set.
#
#   bash scripts/screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/chromium.sh install
mkdir -p docs/img
LMOS_SCREENSHOTS="$PWD/docs/img" go test -count=1 -run '^TestConsoleBrowser(Admin)?$' ./node/
ls -l docs/img/console-*.png
