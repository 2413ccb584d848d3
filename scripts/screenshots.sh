#!/usr/bin/env bash
# Screenshots of the web console's main views into docs/img/ (not part of
# the default test run): the browser test of node/console_browser_test.go
# with LMOS_SCREENSHOTS set.
#
#   bash scripts/screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/chromium.sh install
mkdir -p docs/img
LMOS_SCREENSHOTS="$PWD/docs/img" go test -count=1 -run 'TestConsoleBrowser' ./node/
ls -l docs/img/console-*.png
