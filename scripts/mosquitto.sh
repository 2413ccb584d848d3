#!/usr/bin/env bash
# A throw-away MQTT broker for tests, on 127.0.0.1 only.
#
#   scripts/mosquitto.sh install        # apt-get install mosquitto if missing (needs root)
#   scripts/mosquitto.sh start [PORT]   # start a broker (free port if none), print its URL
#   scripts/mosquitto.sh stop           # stop the broker started by start
#   scripts/mosquitto.sh url            # print the URL of the running broker
#
# The broker listens on 127.0.0.1 only, allows anonymous clients and keeps
# nothing on disk. Its config, pid file and log live in $LMOS_MQTT_DIR
# (default: /tmp/lmos-mosquitto-$UID). The Go tests of node/mqttgw start
# their own broker when the mosquitto binary exists, or use
# LMOS_TEST_MQTT_URL when it is set:
#
#   LMOS_TEST_MQTT_URL=$(scripts/mosquitto.sh start) go test ./node/mqttgw/
set -euo pipefail
. "$(dirname "$0")/apt.sh"

dir="${LMOS_MQTT_DIR:-/tmp/lmos-mosquitto-$(id -u)}"

find_bin() {
	command -v mosquitto 2>/dev/null && return 0
	for b in /usr/sbin/mosquitto /usr/local/sbin/mosquitto; do
		[[ -x "$b" ]] && { echo "$b"; return 0; }
	done
	return 1
}

install() {
	if find_bin >/dev/null; then return 0; fi
	if [[ "$(id -u)" != 0 ]]; then
		echo "mosquitto.sh: mosquitto is not installed and installing it needs root" >&2
		exit 1
	fi
	apt_install mosquitto
	# The Debian package may start a system broker on port 1883; tests use
	# their own.
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start() {
	install
	local bin port
	bin=$(find_bin)
	if [[ -f "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
		cat "$dir/url"
		return 0
	fi
	mkdir -p "$dir"
	port="${1:-$(free_port)}"
	cat >"$dir/mosquitto.conf" <<EOF
listener $port 127.0.0.1
allow_anonymous true
persistence false
user $(id -un)
pid_file $dir/pid
log_dest file $dir/mosquitto.log
EOF
	"$bin" -c "$dir/mosquitto.conf" -d 2>>"$dir/mosquitto.log" || true
	for _ in $(seq 1 50); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "mosquitto.sh: broker did not come up on 127.0.0.1:$port (log: $dir/mosquitto.log)" >&2
		exit 1
	fi
	echo "mqtt://127.0.0.1:$port" | tee "$dir/url"
}

stop() {
	if [[ -f "$dir/pid" ]]; then
		kill "$(cat "$dir/pid")" 2>/dev/null || true
		rm -f "$dir/pid" "$dir/url"
	fi
}

case "${1:-}" in
install) install ;;
start) shift; start "$@" ;;
stop) stop ;;
url) cat "$dir/url" ;;
*) echo "usage: $0 install|start [PORT]|stop|url" >&2; exit 2 ;;
esac
