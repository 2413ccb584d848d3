# scripts/lablib.sh — helpers the netns labs share (scripts/lab.sh,
# scripts/lab-nat.sh), sourced by them. They expect die (print and exit 1),
# LAB_NAME (the prefix of messages) and, for remove_lab, BRIDGE.

# step TITLE: a section header; now: the time in seconds; since T: the
# seconds from T to now, as "1.2s".
step() { printf '\n== %s\n' "$*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# need CMD PKG: install the Debian package PKG if CMD is missing.
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	echo "$LAB_NAME: $1 missing; installing Debian package $2"
	apt-get install -y "$2" >/dev/null 2>&1 ||
		{ apt-get update >/dev/null && apt-get install -y "$2" >/dev/null; } ||
		die "could not install $2; install it and run again"
}

# stop_pids PID...: stop the processes we started.
stop_pids() {
	# TERM, KILL whatever is left after 5 s, and reap them all: a process
	# nobody waits for stays a zombie where PID 1 does not reap.
	local pid killer
	kill -TERM "$@" 2>/dev/null || true
	(
		sleep 5
		kill -KILL "$@" 2>/dev/null
	) &
	killer=$!
	for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
	kill "$killer" 2>/dev/null || true
	wait "$killer" 2>/dev/null || true
}

remove_lab() { # namespaces...
	local n pids
	for n in "$@"; do
		# Anything still running inside a namespace of ours is ours.
		pids=$(ip netns pids "$n" 2>/dev/null || true)
		if [[ -n $pids ]]; then
			# shellcheck disable=SC2086 # one PID per word
			kill -KILL $pids 2>/dev/null || true
		fi
		ip netns del "$n" 2>/dev/null || true
	done
	# The veth pairs go with their namespace end; the bridge is left (the
	# WAN lab has none: BRIDGE is empty).
	[[ -z $BRIDGE ]] || ip link del "$BRIDGE" 2>/dev/null || true
}

# lab_cleanup is a lab script's EXIT trap: it stops the processes the
# script started (PIDS), removes the namespaces and the bridge it created
# (CREATED_NS, CREATED_BRIDGE) and its work directory (WORK, kept when the
# run failed or with KEEP), and exits non-zero unless the run passed
# (FAILED=0). LAB_LABEL starts its messages.
lab_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	[[ -n $WORK ]] && touch "$WORK/stop"
	((${#PIDS[@]})) && stop_pids "${PIDS[@]}"
	if ((${#CREATED_NS[@]} || CREATED_BRIDGE)); then
		remove_lab "${CREATED_NS[@]}"
		echo "$LAB_LABEL: removed namespaces ${CREATED_NS[*]:-none}${BRIDGE:+ and bridge $BRIDGE}"
	fi
	if [[ -n $WORK ]]; then
		if ((FAILED || KEEP)); then
			echo "$LAB_LABEL: work directory kept: $WORK"
		else
			rm -rf "$WORK"
		fi
	fi
	((rc == 0 && FAILED)) && rc=1
	exit "$rc"
}

# build_lab PKG TEST: puts lmosnode in $BIN (a copy of $LMOSNODE_BIN when
# set, else built from $REPO) and compiles the lab-tagged tests of package
# PKG as $BIN/TEST.
build_lab() {
	if [[ -n ${LMOSNODE_BIN:-} ]]; then
		cp "$LMOSNODE_BIN" "$BIN/lmosnode"
	else
		(cd "$REPO" && "$GO" build -o "$BIN/lmosnode" ./cmd/lmosnode)
	fi
	(cd "$REPO" && "$GO" test -c -tags lab -o "$BIN/$2" "$1")
}

# lab_clean_stale REGEX WHAT: --clean of a lab: remove the namespaces whose
# names match REGEX (and BRIDGE, if set), say so with WHAT, and exit.
lab_clean_stale() {
	local stale
	mapfile -t stale < <(ip netns list | awk '{print $1}' | grep "$1" || true)
	remove_lab "${stale[@]}"
	echo "$LAB_LABEL: removed ${#stale[@]} namespaces of $2${BRIDGE:+ and bridge $BRIDGE} (if they existed)"
	exit 0
}

# lab_traps: the EXIT, INT and TERM traps of a lab script (lab_cleanup).
lab_traps() {
	trap lab_cleanup EXIT
	trap 'echo "$LAB_LABEL: interrupted" >&2; exit 130' INT
	trap 'echo "$LAB_LABEL: terminated" >&2; exit 143' TERM
}
