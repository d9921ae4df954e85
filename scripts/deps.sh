#!/bin/sh
# Installs the Debian 12 packages fabriciq needs to build, test and run its
# emulated cluster, and to build and test its Debian packages (debhelper,
# bash-completion, mmdebstrap: tests/packaging), if any is missing. Run as root.
set -eu

PKGS="build-essential autoconf automake libtool pkg-config git
libslurm-dev slurmctld slurmd slurm-client
munge libmunge-dev
protobuf-c-compiler libprotobuf-c-dev
libpq-dev postgresql-15 postgresql-client-15
libibverbs-dev
libevent-dev libjson-c-dev libmicrohttpd-dev libsystemd-dev libsodium-dev
iproute2 util-linux iputils-ping procps python3
libfuse3-dev fuse3
clang-format valgrind
clang libclang-rt-14-dev chrony
debhelper bash-completion mmdebstrap"

missing=
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages:$missing (run as root, or: apt-get install$missing)" >&2
	exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
