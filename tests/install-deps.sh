#!/bin/sh
# Installs what `make check` needs, on Debian and its derivatives, if it is
# missing.  Run as root (CI is); otherwise it says what to install.
set -eu

missing=""
pkg-config --exists check 2>/dev/null || missing="$missing check"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
command -v tar >/dev/null 2>&1 || missing="$missing tar"
command -v nm >/dev/null 2>&1 || missing="$missing binutils"
command -v fincore >/dev/null 2>&1 || missing="$missing util-linux"
command -v strace >/dev/null 2>&1 || missing="$missing strace"
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing:$missing (as root: apt-get install$missing)" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
