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
# check_cli: man pages rendered without warnings, the .desktop example
# validated, the Debian package built.
command -v man >/dev/null 2>&1 || missing="$missing man-db"
command -v groff >/dev/null 2>&1 || missing="$missing groff-base"
command -v desktop-file-validate >/dev/null 2>&1 || missing="$missing desktop-file-utils"
command -v dpkg-buildpackage >/dev/null 2>&1 || missing="$missing dpkg-dev"
command -v dh >/dev/null 2>&1 || missing="$missing debhelper"
# The config parsers' fuzz target (tests/fuzz): clang and its libFuzzer runtime.
if ! command -v clang >/dev/null 2>&1; then
	missing="$missing clang libclang-rt-dev"
elif [ ! -e "$(clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(uname -m).a" ]; then
	missing="$missing libclang-rt-dev"
fi
# The whole-session battery (check_session) runs these everyday programs.
for tool in git zstd rsync sqlite3 gzip; do
	command -v $tool >/dev/null 2>&1 || missing="$missing $tool"
done
# check_oddfds mounts a FUSE filesystem (bindfs brings fuse3's fusermount3).
command -v bindfs >/dev/null 2>&1 || missing="$missing bindfs"
# check_watch guards a Go program from outside: restic backup and restore.
command -v restic >/dev/null 2>&1 || missing="$missing restic"
# check_watch builds a static program: libc.a.
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || [ -e /usr/lib/libc.a ] || missing="$missing libc6-dev"
# check_life watches a posix_spawn child with strace -f.
command -v strace >/dev/null 2>&1 || missing="$missing strace"
# check_offsets builds the library 32-bit (x86-64 only: elsewhere it skips).
if [ "$(uname -m)" = x86_64 ] && ! echo 'int main(void){return 0;}' |
	cc -m32 -x c -o /dev/null - >/dev/null 2>&1; then
	missing="$missing gcc-multilib"
fi
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
