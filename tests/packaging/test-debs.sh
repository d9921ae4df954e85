#!/usr/bin/env bash
# The Debian packages as a site installs them: build the four .debs from
# this source tree (dpkg-buildpackage -us -uc -b, debian/), make a fresh
# Debian 12 root (mmdebstrap, variant apt: essential packages and apt),
# install the .debs into it with apt (which fetches the runtime libraries
# of their Depends), then check: every file where doc/deploy.md says, the
# users, directories and conffiles of the maintainer scripts, nothing
# enabled, the units' programs present and `systemd-analyze verify` clean,
# `fabriciq --version` and `fabriciq doctor --json` (failing checks, as
# nothing runs: exit 1 and well-formed JSON), the daemons' --version and
# --dump-config, all in the root by chroot. Then, on the emulated cluster
# (tests/testbed; root and namespaces), one `srun --fabriciq` job through
# the SPANK plugin, NCCL plugin, agents and controller installed in the
# root instead of the build tree. Last, purging the packages leaves none
# of their files.
#
# Not part of `make check` (it needs root, the Debian registry and 1 to 6
# minutes on 2 cores, most of it the package build and the root's
# packages): `make check-packaging`, or scripts/test.sh's last stage. Run it
# with the testbed's lock where others share the machine (held only while
# the emulated cluster is up):
#   FQTB_TAG=pk FQPKG_TB_LOCK=/work/tb.lock make -C build check-packaging
# FQPKG_KEEP=1 keeps the work directory (its path is printed).
. "$(dirname "$0")/../lib/tap.sh"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
MIRROR=${FQPKG_MIRROR:-http://deb.debian.org/debian}
SECURITY=${FQPKG_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
PKGS="fabriciq-agent fabriciq-controller fabriciq-slurm fabriciq-client"

[ "$(id -u)" -eq 0 ] || skip_all "needs root (mmdebstrap --mode=root, chroot, the emulated cluster)"
for c in dpkg-buildpackage dh mmdebstrap python3; do
	command -v "$c" >/dev/null || skip_all "$c not installed (scripts/deps.sh installs it)"
done
[ -f "$top_srcdir/debian/control" ] || skip_all "no debian/ in $top_srcdir"
python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/dists/bookworm/InRelease", timeout=15).read(1)' \
	"$MIRROR" 2>/dev/null || skip_all "the Debian registry ($MIRROR) is unreachable"

plan 34
W=$(mktemp -d /var/tmp/fqpkg.XXXXXX)
chmod 755 "$W" # apt downloads as _apt
R=$W/root
cleanup() {
	local rc=$?
	[ -n "${TB_UP:-}" ] && "$top_srcdir/tests/testbed/fabriciq-testbed" down >/dev/null 2>&1
	# mmdebstrap unmounts what it mounted; a failed run may leave some
	for m in $(awk -v r="$R/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do umount -l "$m"; done
	if [ -n "${FQPKG_KEEP:-}" ]; then diag "kept $W"; else rm -rf "$W"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
t0=$(date +%s)

# ---- build -----------------------------------------------------------------
# A copy of the sources: the tracked and untracked-not-ignored files when
# this is a git checkout, else the tree without build directories.
mkdir -p "$W/src/fabriciq"
if git -C "$top_srcdir" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$top_srcdir" ls-files -z --cached --others --exclude-standard |
		tar -C "$top_srcdir" --null --ignore-failed-read -T - -cf - 2>/dev/null
else
	tar -C "$top_srcdir" --exclude=./build --exclude=./build-asan --exclude=./debian/build \
		--exclude=./config.status --exclude=./config.log -cf - .
fi | tar -C "$W/src/fabriciq" -xf -
# the unit tests ran in `make check`; here only the packages are built
(cd "$W/src/fabriciq" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
	>"$W/build.out" 2>&1
ok $? "dpkg-buildpackage -us -uc -b ($(($(date +%s) - t0)) s)" || tail -30 "$W/build.out" | sed 's/^/#   /'
ver=$(dpkg-parsechangelog -l "$top_srcdir/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
debs=
for p in $PKGS; do
	debs="$debs $W/src/${p}_${ver}_$arch.deb"
done
n=0
for d in $debs; do [ -f "$d" ] && n=$((n + 1)); done
is "$n" 4 "four packages: $PKGS"
for d in $debs; do
	[ -f "$d" ] && diag "$(basename "$d"): $(stat -c %s "$d") bytes, installed $(dpkg-deb -f "$d" Installed-Size) KiB"
done

# contents: name PACKAGE FILE...: each FILE is in PACKAGE's data
contains() {
	local p=$1 missing=
	shift
	local list
	list=$(dpkg-deb -c "$W/src/${p}_${ver}_$arch.deb" 2>/dev/null | awk '{ print substr($6, 2) }')
	for f in "$@"; do grep -qxF "$f" <<<"$list" || missing="$missing $f"; done
	[ -z "$missing" ]; ok $? "$p holds $*" || diag "missing:$missing"
}
contains fabriciq-agent /usr/sbin/fabriciq-agent /lib/systemd/system/fabriciq-agent.service \
	/usr/share/man/man8/fabriciq-agent.8.gz
contains fabriciq-controller /usr/sbin/fabriciq-controller /lib/systemd/system/fabriciq-controller.service \
	/usr/lib/sysusers.d/fabriciq.conf /usr/share/fabriciq/sql/001_init.sql /usr/share/man/man8/fabriciq-controller.8.gz
contains fabriciq-slurm /usr/lib/fabriciq/spank_fabriciq.so /usr/lib/fabriciq/libnccl-net-fabriciq.so \
	/usr/bin/fabriciq-collbench /etc/slurm/plugstack.conf.d/fabriciq.conf /usr/share/man/man8/spank_fabriciq.8.gz
contains fabriciq-client /usr/bin/fabriciq /usr/bin/fabriciq-db /etc/fabriciq/fabriciq.conf \
	/etc/nhc/scripts/fabriciq.nhc /usr/share/bash-completion/completions/fabriciq /usr/share/man/man1/fabriciq.1.gz \
	/usr/share/man/man5/fabriciq.conf.5.gz
# every migration of the source is shipped
nsql=$(dpkg-deb -c "$W/src/fabriciq-controller_${ver}_$arch.deb" | grep -c '/usr/share/fabriciq/sql/.*\.sql$')
is "$nsql" "$(ls "$top_srcdir"/sql/*.sql | wc -l)" "fabriciq-controller ships every sql/ migration"

# ---- a fresh Debian 12 root, the packages installed by apt -----------------
t1=$(date +%s)
mkdir -p "$W/debs"
cp $debs "$W/debs/"
inroot=
for d in $debs; do inroot="$inroot /tmp/fqdebs/$(basename "$d")"; done
# (mmdebstrap 1.3.5 cannot --include a .deb outside the root: copied in)
mmdebstrap --variant=apt --mode=root \
	--customize-hook='mkdir -p "$1/tmp/fqdebs"' \
	--customize-hook="cp $W/debs/*.deb \"\$1/tmp/fqdebs/\"" \
	--customize-hook="chroot \"\$1\" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends$inroot" \
	--customize-hook='rm -rf "$1/tmp/fqdebs"' \
	bookworm "$R" "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
	"deb $SECURITY bookworm-security main" >"$W/mmdebstrap.out" 2>&1
if ! ok $? "mmdebstrap: Debian 12 root with the four packages installed by apt ($(($(date +%s) - t1)) s)"; then
	tail -30 "$W/mmdebstrap.out" | sed 's/^/#   /'
	echo "Bail out! no root to check the packages in"
	exit 1
fi
st=$(chroot "$R" dpkg-query -W -f '${Status}\n' $PKGS 2>&1 | sort -u)
is "$st" "install ok installed" "dpkg: the four packages installed and configured"

# doc/deploy.md's table of installed paths
missing=
for f in /usr/sbin/fabriciq-agent /usr/sbin/fabriciq-controller /usr/bin/fabriciq /usr/bin/fabriciq-db \
	/usr/bin/fabriciq-collbench /usr/lib/fabriciq/spank_fabriciq.so /usr/lib/fabriciq/libnccl-net-fabriciq.so \
	/lib/systemd/system/fabriciq-agent.service /lib/systemd/system/fabriciq-controller.service \
	/usr/lib/sysusers.d/fabriciq.conf /etc/fabriciq/fabriciq.conf /etc/slurm/plugstack.conf.d/fabriciq.conf \
	/usr/share/man/man8/fabriciq-agent.8.gz /usr/share/man/man8/fabriciq-controller.8.gz \
	/usr/share/man/man8/fabriciq-db.8.gz /usr/share/man/man8/spank_fabriciq.8.gz \
	/usr/share/man/man1/fabriciq.1.gz /usr/share/man/man7/libnccl-net-fabriciq.7.gz \
	/usr/share/man/man5/fabriciq.conf.5.gz; do
	[ -e "$R$f" ] || missing="$missing $f"
done
[ -z "$missing" ]; ok $? "every path of doc/deploy.md's table is installed" || diag "missing:$missing"
grep -q "^fabriciq:" "$R/etc/passwd"; ok $? "the user fabriciq exists (systemd-sysusers in postinst)"
own() { chroot "$R" stat -c '%U:%G %a' "$1" 2>&1; }
is "$(own /var/lib/fabriciq) $(own /var/spool/fabriciq/controller) $(own /var/spool/fabriciq/agent)" \
	"fabriciq:fabriciq 755 fabriciq:fabriciq 700 root:root 700" \
	"directories: /var/lib/fabriciq, the controller's and the agent's spools"
cf=$(chroot "$R" dpkg-query -W -f '${Conffiles}\n' fabriciq-client fabriciq-slurm | awk 'NF { print $1 }' | sort | tr '\n' ' ')
is "$cf" "/etc/fabriciq/fabriciq.conf /etc/nhc/scripts/fabriciq.nhc /etc/slurm/plugstack.conf.d/fabriciq.conf " \
	"conffiles: fabriciq.conf, the NHC check, the plugstack snippet"
grep -qv '^[[:space:]]*\(#\|$\)' "$R/etc/slurm/plugstack.conf.d/fabriciq.conf"
is $? 1 "the plugstack snippet is all comments (the site uncomments it)"
en=$(find "$R/etc/systemd/system" -name 'fabriciq-*' 2>/dev/null)
is "$en" "" "no fabriciq unit enabled"

# every program a unit runs exists in the root
bad= n=0
for u in fabriciq-agent fabriciq-controller; do
	while read -r prog; do
		n=$((n + 1))
		[ -x "$R$prog" ] || bad="$bad $u:$prog"
	done < <(sed -n 's/^Exec[A-Za-z]*=[-+@!:]*\([^ ]*\).*/\1/p' "$R/lib/systemd/system/$u.service")
done
[ -z "$bad" ] && [ $n -ge 3 ]; ok $? "the units' $n ExecStart/ExecStartPre programs exist in the root" || diag "missing:$bad"
if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze verify --man=no --root="$R" /lib/systemd/system/fabriciq-agent.service \
		/lib/systemd/system/fabriciq-controller.service 2>&1)
	rc=$?
	# units the root does not have (slurmd, munge, postgresql) are the site's
	out=$(grep -v -e 'slurmd.service' -e 'munge.service' -e 'postgresql.service' <<<"$out")
	[ $rc -eq 0 ] && [ -z "$out" ]; ok $? "systemd-analyze verify --root: both units clean" || diag "rc $rc: $out"
else
	skip "systemd-analyze not installed"
fi

# ---- the programs, in the root ---------------------------------------------
mount -t proc proc "$R/proc"
for p in usr/bin/fabriciq usr/sbin/fabriciq-agent usr/sbin/fabriciq-controller usr/bin/fabriciq-db; do
	out=$(chroot "$R" "/$p" --version 2>&1)
	grep -q "$ver" <<<"$out"; ok $? "/$p --version in the root: $(head -1 <<<"$out")"
done
out=$(chroot "$R" /usr/sbin/fabriciq-agent --dump-config 2>&1)
rc=$?
[ $rc -eq 0 ] && grep -q '^agent.run_dir = "/run/fabriciq"' <<<"$out" && grep -q '^agent.spool_dir = "/var/spool/fabriciq/agent"' <<<"$out"
ok $? "fabriciq-agent --dump-config reads the installed fabriciq.conf: /run/fabriciq, /var/spool/fabriciq/agent" ||
	diag "rc $rc: $(head -5 <<<"$out")"
out=$(chroot "$R" /usr/sbin/fabriciq-controller --dump-config 2>&1)
rc=$?
[ $rc -eq 0 ] && grep -q '^controller.spool_dir = "/var/spool/fabriciq/controller"' <<<"$out"
ok $? "fabriciq-controller --dump-config: spool in /var/spool/fabriciq/controller" || diag "rc $rc: $(head -5 <<<"$out")"
out=$(chroot "$R" /usr/bin/fabriciq doctor --json 2>"$W/doctor.err")
rc=$?
is "$rc" 1 "fabriciq doctor --json with nothing running: exit 1 (a check failed; fabriciq(1))" || diag "$(cat "$W/doctor.err")"
res=$(python3 -c 'import json, sys
d = json.load(sys.stdin)
print(" ".join(c["check"] + "=" + c["result"] for c in d["checks"]))' <<<"$out" 2>&1)
case $res in
*agent=fail*spank=*nccl=*) ok 0 "doctor's JSON is well-formed: $res" ;;
*) ok 1 "doctor's JSON is well-formed, the agent check fails" ; diag "$res"; diag "$out" ;;
esac
# doctor's own defaults find the installed plugins (the nccl check dlopens it)
grep -q 'nccl=pass' <<<"$res"; ok $? "doctor finds and dlopens the installed NCCL plugin in /usr/lib/fabriciq"
umount "$R/proc"

# ---- one job on the emulated cluster, with the installed parts ------------
if [ -x "$top_builddir/tests/testbed/tb-hostns" ] && ip netns add "fqpkprobe$$" 2>/dev/null &&
	ip netns del "fqpkprobe$$" && unshare --time true 2>/dev/null; then
	. "$top_srcdir/tests/testbed/lib/testlib.sh"
	# FQPKG_TB_LOCK: a lock file the emulated cluster's tests share on this
	# machine, held only while the cluster is up (not while building)
	t2=$(date +%s) # the wait for the lock
	if [ -n "${FQPKG_TB_LOCK:-}" ]; then
		exec 9>"$FQPKG_TB_LOCK"
		flock 9
		waited=$(($(date +%s) - t2))
		diag "waited $waited s for $FQPKG_TB_LOCK"
	fi
	t2=$(date +%s) # the cluster's part
	tb_setup pkg
	trap cleanup EXIT # tb_setup's trap: ours tears the testbed down too
	S=$FQTB_STATE
	L=$R/usr/lib/fabriciq
	TB_UP=1
	tb up --prefix "$TB_PFX" --hosts 2 --rails 2 --leaves 1 --spines 1 --clock-offsets zero \
		--plugstack "optional $L/spank_fabriciq.so libdir=$L ifaces=rail0,rail1 monitor_via=net step_socket=$S/run/%n/agent-step.sock controller=http://198.18.0.1:7180 munge_socket=$S/munge/munge.socket" \
		>"$W/tb.out" 2>&1
	ok $? "testbed up: 2 hosts, Slurm's plugstack naming the root's spank_fabriciq.so" || tail -5 "$W/tb.out" | sed 's/^/#   /'
	# The daemons as their units start them: each unit's ExecStart line (the
	# root's program and its -c file), the controller as the unit's User
	# with the spool its ExecStartPre makes; the settings a site writes into
	# fabriciq.conf by doc/deploy.md (the agents' in a file a node: the
	# two nodes here share one root)
	read -r cprog copt cconf <<<"$(sed -n 's/^ExecStart=//p' "$R/lib/systemd/system/fabriciq-controller.service")"
	read -r aprog aopt aconf <<<"$(sed -n 's/^ExecStart=//p' "$R/lib/systemd/system/fabriciq-agent.service")"
	cuser=$(sed -n 's/^User=//p' "$R/lib/systemd/system/fabriciq-controller.service")
	cuid=$(awk -F: -v u="$cuser" '$1 == u { print $3 }' "$R/etc/passwd")
	cgid=$(awk -F: -v u="$cuser" '$1 == u { print $4 }' "$R/etc/passwd")
	cat >>"$R$cconf" <<EOF
controller.listen = "198.18.0.1:7100"
controller.http_listen = "198.18.0.1:7180"
controller.db = "host=198.18.0.1 port=5432 user=postgres dbname=fabriciq"
controller.munge_socket = "$S/munge/munge.socket"
controller.spool_dir = "$S/spool/ctl"
EOF
	install -d -m 0700 -o "$cuid" -g "$cgid" "$S/spool" "$S/spool/ctl"
	chmod 0755 "$S/munge" # as /run/munge is: the controller's user reaches munged's socket
	"$TB" daemon start ctl controller -- setpriv --reuid="$cuid" --regid="$cgid" --clear-groups \
		"$R$cprog" "$copt" "$R$cconf" >/dev/null
	for i in 1 2; do
		j=$((3 - i))
		mkdir -p "$S/run/n$i"
		cat >"$R/etc/fabriciq/n$i.conf" <<EOF
agent.controller = "198.18.0.1:7100"
agent.controller_uid = $cuid
agent.munge_socket = "$S/munge/munge.socket"
agent.node = "n$i"
agent.nics = "rail0,rail1"
agent.peers = "n$j:rail0@198.19.0.$((2 * j + 1)),n$j:rail1@198.19.1.$((2 * j + 1))"
agent.run_dir = "$S/run/n$i"
agent.spool_dir = "$S/spool/n$i"
agent.status_file = "$S/agent-n$i.json"
EOF
		"$TB" daemon start "n$i" agent -- "$R$aprog" "$aopt" "$R/etc/fabriciq/n$i.conf" >/dev/null
	done
	for ((i = 0; i < 40; i++)); do
		[ "$(psql_ctl 'select count(*) from fabriciq.nodes')" = 2 ] && break
		sleep 0.5
	done
	is "$(psql_ctl 'select count(*) from fabriciq.nodes') $(stat -c %u "$S/spool/ctl/node-addresses" 2>&1)" \
		"2 $cuid" "the units' ExecStart lines: 2 agents connected to the controller, which runs as $cuser, uid $cuid ($cprog $copt $cconf)" ||
		diag "$(tail -3 "$S/log/ctl.controller.log")
	sleep 2 # paths up"
	out=$(timeout 60 "$TB" slurm srun -N2 -n2 --fabriciq printenv NCCL_NET_PLUGIN 2>&1 | sort -u)
	is "$out" "$L/libnccl-net-fabriciq.so" "srun --fabriciq: NCCL_NET_PLUGIN names the root's NCCL plugin"
	out=$(timeout 120 "$TB" slurm srun -N2 -n2 --fabriciq sh -c '[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@"' sh \
		"$R/usr/bin/fabriciq-collbench" --bootstrap 198.19.0.3:17101 --coll allreduce -b 1M -e 1M -n 100 -w 5 2>&1)
	ok $? "srun --fabriciq: allreduce through the installed plugin (fabriciq-collbench of the root)" || diag "$out"
	is "$(grep -c '^fabriciq: ' <<<"$out")" 0 "... and srun, asking the controller at the step's end, printed no job-end line (a clean step)"
	job=$(awk '/^job / { print $2; exit }' <<<"$out")
	for ((i = 0; i < 20; i++)); do
		n=$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = ${job:-0}")
		[ "${n:-0}" -gt 0 ] && break
		sleep 0.5
	done
	[ "${n:-0}" -gt 0 ]; ok $? "job $job: $n lane windows stored by the installed agents and controller" ||
		diag "$(tail -5 "$S/log/n1.agent.log" 2>/dev/null)"
	"$TB" down >/dev/null 2>&1
	rm -f "$R/etc/fabriciq/n1.conf" "$R/etc/fabriciq/n2.conf" # the test's, not the package's
	TB_UP=
	diag "the emulated cluster's part: $(($(date +%s) - t2)) s"
	[ -n "${FQPKG_TB_LOCK:-}" ] && exec 9>&-
else
	for i in 1 2 3 4 5 6; do skip "the emulated cluster: no network or time namespaces here, or tests/testbed not built"; done
fi

# ---- purge ------------------------------------------------------------------
chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get purge -y $PKGS >"$W/purge.out" 2>&1
ok $? "apt-get purge of the four packages" || tail -10 "$W/purge.out" | sed 's/^/#   /'
left=$(ls -d "$R"/usr/lib/fabriciq "$R"/etc/fabriciq "$R"/usr/share/fabriciq "$R"/var/spool/fabriciq \
	"$R"/lib/systemd/system/fabriciq-* "$R"/etc/slurm/plugstack.conf.d/fabriciq.conf 2>/dev/null)
is "$left" "" "nothing of the packages left after purge (the user and /var/lib/fabriciq stay: deploy.md)"
diag "total $(($(date +%s) - t0 - ${waited:-0})) s, not counting ${waited:-0} s waiting for the lock"
