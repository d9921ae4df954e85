#!/usr/bin/env bash
# tb-crashfs's own semantics (tests/testbed/tb-crashfs.c): what a crash
# keeps is exactly what fsync and fsyncdir made durable, and before it
# every change is seen at once. Mounted in a mount namespace of its own
# (nothing outside sees it; it goes with the namespace even if the test
# dies); the file operations are Python's os calls, one syscall each.
. "$(dirname "$0")/../lib/tap.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
CFS=$top_builddir/tests/testbed/tb-crashfs

if [ -z "${CRASHFS_NS:-}" ]; then
	[ -x "$CFS" ] || skip_all "tests/testbed/tb-crashfs not built (fuse3 missing: apt-get install libfuse3-dev)"
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (a FUSE mount in a mount namespace)"
	[ -c /dev/fuse ] || skip_all "no /dev/fuse (the kernel's fuse module)"
	command -v python3 >/dev/null || skip_all "python3 not installed (scripts/deps.sh installs it)"
	unshare -m --propagation private true 2>/dev/null || skip_all "cannot create a mount namespace here"
	CRASHFS_NS=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi

D=$(mktemp -d "${TMPDIR:-/tmp}/crashfs.XXXXXX")
B=$D/backing M=$D/mnt
mkdir "$B" "$M"
cleanup() {
	[ -n "${FSPID:-}" ] && kill -TERM "$FSPID" 2>/dev/null && wait "$FSPID" 2>/dev/null
	umount -l "$M" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT

# py CODE: Python with os imported, run in the mount (the directory M).
py() { (cd "$M" && python3 -c "import os, errno, sys
def put(n, b, sync=False, mode=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = os.open(n, mode, 0o600); os.write(fd, b)
    if sync: os.fsync(fd)
    os.close(fd)
def get(n):
    try: return open(n, 'rb').read().decode()
    except FileNotFoundError: return '-'
def syncdir():
    fd = os.open('.', os.O_RDONLY | os.O_DIRECTORY); os.fsync(fd); os.close(fd)
def fallocate(n):  # the syscall itself (glibc's posix_fallocate would emulate it)
    import ctypes; libc = ctypes.CDLL(None, use_errno=True); fd = os.open(n, os.O_RDWR)
    rc = libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(10)); os.close(fd)
    return 'ok' if rc == 0 else errno.errorcode[ctypes.get_errno()]
def err(f, *a):
    try: f(*a); return 'ok'
    except OSError as e: return errno.errorcode[e.errno]
$1"); }
ls_m() { (cd "$M" && ls -A | tr '\n' ' '); }
ls_b() { (cd "$B" && ls -A | tr '\n' ' '); }

mount_fs() {
	"$CFS" "$B" "$M" >"$D/log" 2>&1 &
	FSPID=$!
	for ((i = 0; i < 50; i++)); do grep -q ' on ' "$D/log" && return 0; sleep 0.1; done
	return 1
}
# crash: SIGUSR1, and wait for its line in the log (N crashes so far).
ncrash=0
crash() {
	ncrash=$((ncrash + 1))
	kill -USR1 "$FSPID"
	for ((i = 0; i < 50; i++)); do grep -q "crash $ncrash:" "$D/log" && return 0; sleep 0.1; done
	return 1
}

plan 20
mount_fs
ok $? "tb-crashfs mounts $B on $M" || { diag "$(cat "$D/log")"; exit 1; }

# Before any sync: everything seen at once.
py "put('a', b'A1', sync=True); syncdir()
put('c', b'C1'); syncdir()                  # its name synced, its data never
put('d', b'D1', sync=True); syncdir(); put('d', b'D2xx')   # D1 durable, D2xx not
put('t', b'T1', sync=True); syncdir(); os.truncate('t', 0) # truncated, not synced
put('e', b'E1', sync=True)
put('tmp', b'N1', sync=True); put('next', b'N0', sync=True); syncdir()
os.rename('tmp', 'next'); os.unlink('e')   # renamed, unlinked, not synced
put('b', b'B1', sync=True)                  # synced, its name never"
is "$(ls_m)|$(py "print(get('a'), get('b'), get('c'), get('d'), get('t') or 'empty', get('e'), get('next'), get('tmp'))")" \
	"a b c d next t |A1 B1 C1 D2xx empty - N1 -" "before a crash: every write, truncate, unlink and rename is seen at once"
is "$(py "fd = os.open('d', os.O_RDWR); os.lseek(fd, 1, 0); os.write(fd, b'X'); print(os.pread(fd, 10, 0).decode(), os.fstat(fd).st_size)")" \
	"DXxx 4" "a write in the middle of a file: read back through the same descriptor, size unchanged"
is "$(ls_b)" "a c d e next t tmp " "the backing holds the durable names only (b: no directory sync; e: its unlink not synced)"
crash
ok $? "crash 1 (SIGUSR1) is applied and logged" || diag "$(cat "$D/log")"
is "$(ls_m)" "a c d e next t tmp " "after the crash: the names synced by fsyncdir, none other (b, synced but not its directory, is gone)"
is "$(py "print(get('a'), get('c') or 'empty', get('d'), get('t'), get('e'), get('next'), get('tmp'))")" \
	"A1 empty D1 T1 E1 N0 N1" \
	"after the crash: each file's data as of its last fsync (c never synced: empty), the unlink and the rename undone"

# fdatasync is a sync of the data; a synced rename over a name is durable.
py "fd = os.open('d', os.O_WRONLY | os.O_TRUNC); os.write(fd, b'D3'); os.fdatasync(fd); os.close(fd)
os.rename('tmp', 'next'); syncdir(); os.unlink('e'); syncdir()"
py "put('s', b'S1', sync=True); syncdir(); put('s.tmp', b'S2', sync=True); os.rename('s.tmp', 's'); syncdir(); put('s', b'S3')"
crash
is "$(ls_m)|$(py "print(get('d'), get('next'), get('s'))")" "a c d next s t |D3 N1 S2" \
	"crash 2: fdatasync kept d's data; the renames and the unlink that fsyncdir covered are kept, s's later write is not"

# A descriptor opened before a crash fails with EIO; the file by name is fine.
is "$(py "fd = os.open('a', os.O_RDWR); fd2 = os.open('n2', os.O_RDWR | os.O_CREAT, 0o600)
os.write(fd2, b'x'); os.fsync(fd2)
import signal; os.kill($FSPID, signal.SIGUSR1)
import time
for i in range(50):
    if 'crash 3:' in open('$D/log').read(): break
    time.sleep(0.1)
print(err(os.pread, fd, 2, 0), err(os.write, fd2, b'y'), get('a'), get('n2'))")" \
	"EIO EIO A1 -" "crash 3 under open descriptors: they fail with EIO; a file made and synced without its directory is gone"
ncrash=3

# What is refused, with which errno.
is "$(py "print(err(os.mkdir, 'x'), err(os.link, 'a', 'h'), err(os.symlink, 'a', 'l'), err(os.chmod, 'a', 0o644),
	err(os.utime, 'a', (1, 1)), fallocate('a'), err(os.rename, 'a', '.tb-crashfs.tmp'))")" \
	"EPERM EPERM EPERM ENOTSUP ENOTSUP ENOTSUP EPERM" \
	"refused: mkdir, link, symlink (EPERM), chmod, utimes, fallocate (EOPNOTSUPP, Linux's ENOTSUP), the backing's own temporary name"

# A file larger than a page, written in pieces, synced halfway.
py "fd = os.open('big', os.O_RDWR | os.O_CREAT, 0o600)
for i in range(64): os.pwrite(fd, bytes([i]) * 4096, i * 4096)
os.fsync(fd); fd2 = os.open('.', os.O_RDONLY); os.fsync(fd2)
for i in range(64, 96): os.pwrite(fd, bytes([i]) * 4096, i * 4096)
os.close(fd)"
is "$(stat -c %s "$M/big")" 393216 "before the crash: 96 pages written"
crash
is "$(stat -c %s "$M/big") $(cmp -s "$M/big" "$B/big" && echo same)" "262144 same" \
	"crash 4: big is its 64 synced pages, as in the backing"
is "$(python3 -c "import sys; d = open(sys.argv[1], 'rb').read(); print(all(d[i * 4096:(i + 1) * 4096] == bytes([i]) * 4096 for i in range(64)))" "$M/big")" \
	True "crash 4: each synced page holds what was written"

# A stalled disk (SIGUSR2): an fsync waits, writes and reads go on; a
# crash ends the wait with EIO and nothing of it is durable; released
# (SIGUSR2 again), an fsync returns at once.
kill -USR2 "$FSPID"
for ((i = 0; i < 50; i++)); do grep -q 'fsyncs stalled' "$D/log" && break; sleep 0.1; done
(cd "$M" && exec python3 -c "import os, errno
fd = os.open('w', os.O_RDWR | os.O_CREAT, 0o600); os.write(fd, b'W1')
try: os.fsync(fd); print('synced')
except OSError as e: print(errno.errorcode[e.errno])") >"$D/stalled.out" 2>&1 &
SYNCPID=$!
sleep 0.5
is "$(cat "$D/stalled.out")|$(py "print(get('w'), get('a'))")" "|W1 A1" "stalled: the fsync waits, the file it wrote and the others are read meanwhile"
crash
wait "$SYNCPID"
is "$(cat "$D/stalled.out") $(ls_m)" "EIO a big c d next s t " "crash 5 during the stall: the fsync fails with EIO, its file is gone"
kill -USR2 "$FSPID"
for ((i = 0; i < 50; i++)); do grep -q 'fsyncs released' "$D/log" && break; sleep 0.1; done
is "$(timeout 5 python3 -c "import os; fd = os.open('$M/a', os.O_RDONLY); os.fsync(fd); print('ok')")" ok "released: an fsync returns"

# A restart on the backing: the same durable state.
kill -TERM "$FSPID" && wait "$FSPID"
ok $? "SIGTERM unmounts and exits 0"
FSPID=
mount_fs
is "$(ls_m)|$(py "print(get('a'), get('d'), get('next'), get('s'))")" "a big c d next s t |A1 D3 N1 S2" \
	"mounted again on the backing: the durable state"
py "put('late', b'L', sync=True); syncdir(); os.unlink('late')"
ncrash=0
crash
is "$(ls_m)" "a big c d late next s t " "crash after a restart: an unlink not synced is undone"
is "$(grep -c 'crash [0-9]*:' "$D/log")" 1 "one crash line in the new mount's log"
