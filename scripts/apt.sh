# Sourced by the scripts that install a Debian package a test needs.
#
# apt_install PKG installs PKG (no recommends), running apt-get update
# first only if the plain install fails (a fresh machine's lists).
apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$1" >&2 ||
		{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$1" >&2; }
}
