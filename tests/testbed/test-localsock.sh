#!/usr/bin/env bash
# The agent's local sockets under a local user's attack, on the emulated
# cluster with real Slurm and the SPANK plugin (required=yes): `nobody`
# holds 1100 telemetry connections (more than the 1024 the two sockets
# once shared), each kept busy with a lane report every 0.5 s, and
# `srun --fabriciq` still registers its step and runs; the agent admits
# exactly its per-uid limit (256), closes them once they go idle
# (telemetry_idle_timeout), and closes connections whose frames never
# complete (frame_timeout), however they trickle. The agent raises its
# soft RLIMIT_NOFILE to what its limits need, and refuses to start under a
# hard limit below it. The run directory: a symbolic link planted where
# the clock page goes and a 0666 path page of nobody's are replaced (the
# link's target untouched), said in the log; the status file is 0640; a
# run directory others may write is refused. A registered step whose task
# dies without a StepEnd is reclaimed after the 10 s grace; an agent
# killed with SIGKILL mid-step and restarted restores the step from
# RUN_DIR/steps.json and attributes its telemetry again.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$(cd "$top_builddir" && pwd) # slurmd runs elsewhere: absolute paths
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
AGENT=$B/slurmd-agent/fabriciq-agent
LANESEND=$B/tests/testbed/tb-lanesend
for f in "$SPANK_SO" "$AGENT" "$LANESEND"; do [ -e "$f" ] || skip_all "$f not built"; done
command -v setpriv >/dev/null || skip_all "setpriv (util-linux) missing"
id -u nobody >/dev/null 2>&1 || skip_all "no user nobody"
plan 35
tb_setup tls
S=$FQTB_STATE
HPID=
holder_stop() { [ -n "$HPID" ] && kill "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null; HPID=; }
SPID=
trap 'rc=$?; holder_stop; [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; (exit $rc); tb_teardown' EXIT

# holder_start N MODE [JOB]: the holder as nobody in n1, its pid recorded;
# with JOB, registered first as the one task of step JOB.0 of uid nobody
# (only a step's tasks may hold telemetry connections), then let connect
holder_start() {
	rm -rf "$S/h"
	mkdir -m 0777 "$S/h"
	"$TB" exec n1 setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env \
		python3 "$S/holder.py" "$S/run/n1/agent-telemetry.sock" "$1" "$2" "$S/h" 2>"$S/holder.err" &
	HPID=$!
	[ -n "${3:-}" ] && python3 "$S/stepstart.py" "$S/run/n1/agent-step.sock" "$HPID" "$3" 65534 >/dev/null
	touch "$S/h/go"
}
# wait_count "OPEN CLOSED" SECONDS: the holder's last count is that
wait_count() {
	for ((n = 0; n < $2 * 10; n++)); do [ "$(cat "$S/h/count" 2>/dev/null)" = "$1" ] && return 0; sleep 0.1; done
	return 1
}
# counter NAME: the n1 agent's local-socket counter (its status file)
counter() {
	"$AGENT" -c /dev/null -s "status_file=$S/agent-n1.json" --status --json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["local_sockets"][sys.argv[1]])' "$1"
}
# counter_is NAME WANT WHAT: the counter reaches WANT within 3 s (the
# status file is rewritten every 200 ms)
counter_is() {
	for ((n = 0; n < 15; n++)); do [ "$(counter "$1")" = "$2" ] && break; sleep 0.2; done
	is "$(counter "$1")" "$2" "$3"
}

PLUG="optional $SPANK_SO monitor_via=net step_socket=$S/run/%n/agent-step.sock telemetry_socket=$S/run/%n/agent-telemetry.sock"
PLUG+=" clock_page=$S/run/%n/clock path_page=$S/run/%n/paths required=yes"
check "up: 2 hosts, Slurm with the SPANK plugin, required=yes" tb up --prefix "$TB_PFX" --hosts 2 --rails 1 --leaves 1 \
	--spines 1 --services munge,slurm --clock-offsets zero --plugstack "$PLUG"
# holder.py SOCKET N MODE DIR: N connections as the calling user; MODE busy
# (a lane report on each every 0.5 s until DIR/quiet exists) or partial (a
# frame announcing 1000 bytes, then a byte every 0.5 s), once DIR/go exists. Writes
# "open CLOSED" to DIR/count every 0.2 s; ends when DIR/quit exists or after
# 120 s.
cat >"$S/holder.py" <<'PY'
import os, socket, sys, time
path, n, mode, d = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
lane = b"\0\0\0\4" + b"\x08\x01\x6a\x00"  # Envelope{version 1, lane {}}
conns, closed = [], set()
for t in range(100):  # until the test has registered it (DIR/go)
    if os.path.exists(d + "/go"): break
    time.sleep(0.05)
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    for t in range(500):  # EAGAIN: the listen backlog is full for a moment
        try: s.connect(path); break
        except BlockingIOError: time.sleep(0.01)
    conns.append(s)
    if mode == "partial":
        try: s.send(b"\0\0\x03\xe8" + b"x" * 10)
        except OSError: closed.add(i)
end, beat = time.time() + 120, 0.0
while time.time() < end and not os.path.exists(d + "/quit"):
    for i, s in enumerate(conns):
        if i in closed: continue
        try:
            if s.recv(1) == b"": closed.add(i)
        except BlockingIOError: pass
        except OSError: closed.add(i)
    if time.time() >= beat:
        beat = time.time() + 0.5
        data = lane if mode == "busy" and not os.path.exists(d + "/quiet") else b"x" if mode == "partial" else b""
        for i, s in enumerate(conns):
            if i in closed or not data: continue
            try: s.send(data)
            except BlockingIOError: pass
            except OSError: closed.add(i)
    with open(d + "/count.tmp", "w") as f: f.write("%d %d\n" % (n - len(closed), len(closed)))
    os.rename(d + "/count.tmp", d + "/count")
    time.sleep(0.2)
PY
# stepstart.py SOCKET PID JOB [UID]: a StepStart for JOB.0 of UID (default
# 0) with one task PID, as slurmstepd's SPANK plugin sends it; prints the
# answer's length, or why not
cat >"$S/stepstart.py" <<'PY'
import socket, sys
def v(n):
    b = b""
    while True:
        b += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)]); n >>= 7
        if not n: return b
def f(k, x): return v(k << 3 | 2) + v(len(x)) + x
rank = b"\x08\x00\x10\x00\x18" + v(int(sys.argv[2]))
uid = int(sys.argv[4]) if len(sys.argv) > 4 else 0
start = b"\x08" + v(int(sys.argv[3])) + b"\x10\x00\x18" + v(uid) + f(5, rank)
env = b"\x08\x01\x10\x01" + f(14, start)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect(sys.argv[1])
    s.sendall(len(env).to_bytes(4, "big") + env)
    print(len(s.recv(4096)))
except OSError as e:
    print(type(e).__name__)
PY
chmod 0644 "$S/stepstart.py"
tb_agents_start "$AGENT" -s report_interval=200ms -s telemetry_idle_timeout=3s -s frame_timeout=2s
for ((n = 0; n < 50; n++)); do [ -S "$S/run/n1/agent-telemetry.sock" ] && break; sleep 0.1; done
[ -S "$S/run/n1/agent-telemetry.sock" ]
ok $? "agents running, n1's telemetry socket at $S/run/n1"

# ---- a process of no step: every telemetry connection refused at connect ----
holder_start 50 busy
wait_count "0 50" 15
ok $? "nobody's process of no step: its 50 telemetry connections refused at connect ($(cat "$S/h/count" 2>/dev/null))"
counter_is refused_not_task 50 "... counted as no task of a registered step"
touch "$S/h/quit"
holder_stop

# ---- 1100 busy connections of a step of nobody: 256 admitted, srun still registers
holder_start 1100 busy 9990
wait_count "256 844" 30
ok $? "nobody's 1100 telemetry connections: 256 kept, 844 closed ($(cat "$S/h/count" 2>/dev/null))" ||
	diag "$(cat "$S/holder.err")"
counter_is telemetry_connections 256 "the agent holds 256 telemetry connections (agent.telemetry_max_per_uid)"
counter_is refused_per_uid 844 "... and refused 844 over the per-uid limit"
out=$(timeout 60 "$TB" slurm srun -N1 -w n1 --fabriciq sh -c 'echo "$SLURM_JOB_ID $FABRICIQ_MODE"' 2>&1)
rc=$?
read -r job mode <<<"$out"
is "$rc $mode" "0 monitor" "srun --fabriciq (required=yes) runs while nobody holds its connections" || diag "$out"
grep -q "step $job.0 registered" "$S/log/n1.agent.log"
ok $? "n1's agent registered step $job.0"
is "$(cat "$S/h/count")" "256 844" "nobody's 256 busy connections were all kept meanwhile"
counter_is step_connections 0 "the step's connection is gone after the step"

# ---- idle: the busy connections fall silent -> closed after 3 s ------------
touch "$S/h/quiet"
wait_count "0 1100" 15
ok $? "silent for telemetry_idle_timeout (3 s): all 256 closed ($(cat "$S/h/count"))"
counter_is closed_idle 256 "the agent counted 256 connections closed idle"
touch "$S/h/quit"
holder_stop

# ---- partial frames trickling a byte every 0.5 s: closed after 2 s ----------
holder_start 300 partial 9991
wait_count "0 300" 15
ok $? "300 connections with frames that never complete: all closed ($(cat "$S/h/count"))"
counter_is closed_partial 256 "... the 256 admitted ones by frame_timeout (2 s), counted"
counter_is refused_per_uid 888 "... the other 44 over the per-uid limit (844 + 44 refused in all)"
touch "$S/h/quit"
holder_stop
grep -q "telemetry socket: uid 65534 holds 256 connections (the per-uid limit): refusing pid" "$S/log/n1.agent.log"
ok $? "the agent's log names the uid over its limit"

# ---- RLIMIT_NOFILE: raised to fit the limits (1024 + 1024 + 256), or refused
X="-c /dev/null -s nics=rail0 -s node=x -s port=7199 -s run_dir=$S/run/x -s status_file=$S/agent-x.json"
mkdir -p "$S/run/x"
out=$("$TB" exec n1 sh -c "ulimit -n 2000; exec $AGENT $X" 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "need 2304 file descriptors; RLIMIT_NOFILE allows 2000" <<<"$out"
ok $? "hard RLIMIT_NOFILE 2000 < 2304: the agent refuses to start, saying so" || diag "rc $rc: $out"
tb daemon start n1 lowfd -- sh -c "ulimit -Sn 1024; exec $AGENT $X" >/dev/null
for ((n = 0; n < 50; n++)); do [ -S "$S/run/x/agent-telemetry.sock" ] && break; sleep 0.1; done
is "$(awk '/^Max open files/ { print $4 }' "/proc/$(cat "$S/daemons/n1.lowfd.pid")/limits")" 2304 \
	"soft RLIMIT_NOFILE 1024: the agent raised it to 2304"
tb daemon stop n1 lowfd

# ---- run directory trust ------------------------------------------------------
Y=$S/run/y
mkdir -p -m 0755 "$Y"
printf victim >"$S/victim"
ln -s "$S/victim" "$Y/clock"
install -m 0666 -o nobody -g nogroup /dev/null "$Y/paths"
tb daemon start n1 pages -- "$AGENT" -c /dev/null -s nics=rail0 -s node=y -s port=7198 -s run_dir="$Y" \
	-s status_file="$Y/status.json" -s report_interval=200ms >/dev/null
for ((n = 0; n < 50; n++)); do [ -f "$Y/status.json" ] && break; sleep 0.1; done
L=$S/log/n1.pages.log
grep -q "$Y/clock is a symbolic link: not trusted, replaced by a fresh page" "$L" &&
	grep -q "$Y/paths is owned by uid 65534: not trusted, replaced by a fresh page" "$L"
ok $? "the log says the planted clock link and nobody's path page were replaced" || diag "$(cat "$L")"
is "$(cat "$S/victim")" victim "the link's target is neither truncated nor written"
is "$(stat -c '%F %U %a' "$Y/clock" "$Y/paths" | tr '\n' ' ')" "regular file root 644 regular file root 644 " \
	"clock and path pages: regular files of root, mode 0644"
is "$(stat -c '%a' "$Y/status.json")" 640 "the status file is mode 0640 (not world-readable)"
tb daemon stop n1 pages
chmod 0777 "$Y"
out=$("$TB" exec n1 "$AGENT" -c /dev/null -s nics=rail0 -s node=y -s port=7198 -s run_dir="$Y" -s status_file="$Y/status.json" 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "agent.run_dir $Y (uid 0, mode 0777): refusing to start" <<<"$out"
ok $? "a run directory others may write: the agent refuses to start, saying so" || diag "rc $rc: $out"
chmod 0755 "$Y"
tb exec n1 setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$Y/status.json" >/dev/null 2>&1
is $? 1 "nobody cannot read the status file"


# ---- the step socket is root's ----------------------------------------------
out=$(tb exec n1 setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env python3 "$S/stepstart.py" \
	"$S/run/n1/agent-step.sock" 1 9998)
is "$out" PermissionError "nobody cannot connect to the step socket (0600 root)"
nr0=$(counter step_not_root)
chmod 0666 "$S/run/n1/agent-step.sock" # a site's mistake: the agent's own check still holds
out=$(tb exec n1 setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env python3 "$S/stepstart.py" \
	"$S/run/n1/agent-step.sock" 1 9998)
chmod 0600 "$S/run/n1/agent-step.sock"
counter_is step_not_root $((nr0 + 1)) "... and with the socket made 0666 by mistake, nobody's StepStart is refused by uid ($out)"
grep -q "step 9998.0 registered" "$S/log/n1.agent.log"
is $? 1 "... no step registered"

# ---- a step whose StepEnd never comes is reclaimed -------------------------
sleep 300 &
SPID=$!
python3 "$S/stepstart.py" "$S/run/n1/agent-step.sock" "$SPID" 9999 >"$S/reg.out" 2>&1
for ((n = 0; n < 20; n++)); do grep -q "step 9999.0 registered" "$S/log/n1.agent.log" && break; sleep 0.1; done
grep -q "step 9999.0 registered" "$S/log/n1.agent.log"
ok $? "step 9999.0 registered by hand, its one task pid $SPID" || diag "$(cat "$S/reg.out")"
kill "$SPID"
wait "$SPID" 2>/dev/null
SPID=
t0=$(date +%s)
for ((n = 0; n < 200; n++)); do grep -q "step 9999.0 reclaimed" "$S/log/n1.agent.log" && break; sleep 0.1; done
grep -q "step 9999.0 reclaimed: none of its tasks alive for 10 s, and no StepEnd came" "$S/log/n1.agent.log"
ok $? "its task killed and no StepEnd: reclaimed after $(($(date +%s) - t0)) s (grace 10 s)"
sleep 0.5
"$AGENT" -c /dev/null -s "status_file=$S/agent-n1.json" --status --json | python3 -c '
import json, sys; s = json.load(sys.stdin); print(len(s["steps"]), s["steps_reclaimed"])' >"$S/st.out"
is "$(cat "$S/st.out")" "0 3" "no step left registered; steps_reclaimed 3 (the holders' 9990 and 9991, and 9999)"

# ---- kill -9 mid-step, restart: the step restored, its telemetry attributed -
: >"$S/tasks"
timeout 60 "$TB" slurm srun -N1 -w n1 --fabriciq sh -c \
	"echo \$SLURM_JOB_ID >$S/tasks; sleep 8; $LANESEND $S/run/n1/agent-telemetry.sock \$SLURM_JOB_ID 0" >"$S/srun.out" 2>&1 &
RPID=$!
for ((n = 0; n < 100; n++)); do [ -s "$S/tasks" ] && break; sleep 0.1; done
job=$(cat "$S/tasks")
for ((n = 0; n < 30; n++)); do grep -q "step $job.0 registered" "$S/log/n1.agent.log" && break; sleep 0.1; done
kill -KILL "$(cat "$S/daemons/n1.agent.pid")"
tb daemon start n1 agent2 -- "$AGENT" -c /dev/null -s nics=rail0 -s peers=n2:rail0@198.19.0.5 -s node=n1 \
	-s "status_file=$S/agent-n1.json" -s "run_dir=$S/run/n1" -s "spool_dir=$S/spool/n1" -s report_interval=200ms >/dev/null
L2=$S/log/n1.agent2.log
for ((n = 0; n < 30; n++)); do grep -q "step(s) restored" "$L2" && break; sleep 0.1; done
grep -q "1 step(s) restored from $S/run/n1/steps.json" "$L2"
ok $? "agent killed (SIGKILL) mid-step and restarted: step $job.0 restored" || diag "$(cat "$L2")"
wait "$RPID"
is $? 0 "the step ran to its end" || diag "$(cat "$S/srun.out")"
for ((n = 0; n < 15; n++)); do [ "$(counter telemetry_frames) $(counter telemetry_unregistered)" = "1 0" ] && break; sleep 0.2; done
is "$(counter telemetry_frames) $(counter telemetry_unregistered)" "1 0" \
	"the step's lane report after the restart is attributed (1 frame, 0 unregistered)"
for ((n = 0; n < 30; n++)); do grep -q "step $job.0 unregistered" "$L2" && break; sleep 0.1; done
grep -q "step $job.0 unregistered (exit status 0)" "$L2"
ok $? "the restarted agent takes the step's StepEnd"
tb daemon stop n1 agent2
