#!/usr/bin/env bash
# The project's test command: the README names it and .ci/run calls it.
# Runs linters and the whole default test suite on this machine only
# (127.0.0.1 and network namespaces the tests create themselves).
#
#   bash scripts/test.sh            # lint + tests
#   LMOS_SKIP_LINT=1 bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

GOLANGCI_VERSION=v2.15.0
gobin="$(go env GOPATH)/bin"

step() { printf '\n== %s\n' "$*"; }

if [[ "${LMOS_SKIP_LINT:-}" != 1 ]]; then
	step "gofmt"
	unformatted=$(gofmt -l $(git ls-files '*.go'))
	if [[ -n "$unformatted" ]]; then
		echo "gofmt needed on:"; echo "$unformatted"; exit 1
	fi
	# golangci-lint runs go vet, staticcheck, errcheck, sloglint and importas
	# (.golangci.yml); pinned so a fresh machine lints like this one.
	step "golangci-lint $GOLANGCI_VERSION"
	if ! "$gobin/golangci-lint" version 2>/dev/null | grep -q "${GOLANGCI_VERSION#v}"; then
		go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_VERSION"
	fi
	"$gobin/golangci-lint" run ./...
fi

# Installing mosquitto needs root and apt-get (Debian); without it the MQTT
# tests skip themselves with a message, and the rest runs.
step "mosquitto (MQTT broker for the node/mqttgw tests)"
if ! bash scripts/mosquitto.sh install; then
	echo "skipped: mosquitto could not be installed here (needs root and apt-get);" \
		"the MQTT tests skip themselves (or set LMOS_TEST_MQTT_URL to a broker)"
fi

# iptables (its NFQUEUE target) routes the packets of the WAN lab's router
# and of the internal/wandelay tests (root only) to the delay program.
step "iptables (internal/wandelay tests, scripts/lab.sh wan)"
if [[ $EUID -eq 0 ]] && ! command -v iptables >/dev/null; then
	# shellcheck source=scripts/apt.sh
	source scripts/apt.sh
	apt_install iptables || echo "skipped: iptables could not be installed; the internal/wandelay tests skip themselves"
fi

step "chromium (headless browser for the web console tests, node/console_browser_test.go)"
bash scripts/chromium.sh install

step "go test"
go test -count=1 -timeout 20m ./...

# The netns lab: N nodes in network namespaces joined by a bridge, mDNS on,
# no bootstrap; every node must list every other node's Things. It needs
# root (CI has it) and cleans up its namespaces even on failure.
step "netns lab (scripts/lab.sh --strict)"
if [[ $EUID -eq 0 ]]; then
	bash scripts/lab.sh --strict
else
	echo "skipped: the lab creates network namespaces and needs root"
fi

# The NAT lab: private nodes behind NAT routers (endpoint-independent and
# symmetric) reach each other through relays, hole punching upgrades what
# the NATs allow, a relay dies and the other takes over (docs/nat.md).
# Bounded: every step has a deadline, the whole run about three and a half minutes.
step "NAT lab (scripts/lab.sh nat)"
if [[ $EUID -eq 0 ]]; then
	timeout 600 bash scripts/lab.sh nat
else
	echo "skipped: the NAT lab creates network namespaces and needs root"
fi
