#!/usr/bin/env bash
# Chromium for the web console's browser tests (node/console, chromedp).
#
#   scripts/chromium.sh install   # apt-get install chromium if missing (needs root)
#   scripts/chromium.sh path      # print the browser's path, exit 1 if none
#
# The tests find the browser on PATH (chromium, chromium-browser,
# google-chrome) or in $LMOS_CHROMIUM, and skip with a message without one.
set -euo pipefail
. "$(dirname "$0")/apt.sh"

find_bin() {
	if [[ -n "${LMOS_CHROMIUM:-}" && -x "$LMOS_CHROMIUM" ]]; then echo "$LMOS_CHROMIUM"; return 0; fi
	for b in chromium chromium-browser google-chrome; do
		command -v "$b" 2>/dev/null && return 0
	done
	return 1
}

install() {
	if find_bin >/dev/null; then return 0; fi
	if [[ "$(id -u)" != 0 ]]; then
		echo "chromium.sh: chromium is not installed and installing it needs root; the console's browser tests will be skipped" >&2
		return 0
	fi
	apt_install chromium
}

case "${1:-}" in
install) install ;;
path) find_bin ;;
*) echo "usage: $0 install|path" >&2; exit 2 ;;
esac
