#!/usr/bin/env bash
# spank_fabriciq.so in real Slurm on the emulated cluster (2 hosts):
# plugstack arguments (valid; unknown key -> error in slurmd's log),
# --fabriciq parsing (invalid MODE refused before anything runs; last one
# wins), the variables exported in srun, sbatch (two steps), salloc and
# --export=NONE jobs, jobs without the option untouched, a missing agent
# (one line, job runs) and required=yes (step fails), registration and
# unregistration with the agent (normal end, scancel, a task killed),
# a stuck agent costing at most its timeout, and a site default; the
# agent's paths (telemetry socket, clock and path pages, run_dir not the
# default) reaching the tasks from its answer alone, plugstack giving only
# step_socket=, and plugstack's override winning; job variables longer
# than 4096 bytes (NCCL_NET_PLUGIN) kept whole; the job's LD_LIBRARY_PATH
# never touched (NCCL gets the plugin by its absolute path).
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../testbed/lib/testlib.sh"
tb_require
tb_setup spk
export FQTB_STATE=/run/fqtb-spank${FQTB_TAG:-} # /run, not tb_setup's /tmp; the tag keeps checkouts apart
B=$(cd "$top_builddir" && pwd) # slurmd runs elsewhere: absolute paths
PLUGIN="$B/spank/.libs/spank_fabriciq.so"
FAKE="$B/tests/spank/fake-agent"
AGENT="$B/slurmd-agent/fabriciq-agent"
[ -f "$PLUGIN" ] || skip_all "spank_fabriciq.so not built"
[ -x "$FAKE" ] || skip_all "tests/spank/fake-agent not built"
[ -x "$AGENT" ] || skip_all "fabriciq-agent not built"
plan 56

S=$FQTB_STATE
LIBDIR=/opt/fabriciq-test/lib
NET=$LIBDIR/libnccl-net-fabriciq.so # NCCL_NET_PLUGIN, as SPANK names it
# Only the step socket: the other paths come from the agent.
ARGS="step_socket=$S/agent-%n/agent-step.sock libdir=$LIBDIR timeout_ms=500 monitor_via=net class=latency,dscp=46,prio=0,sl=1"
up() { tb up --prefix "$TB_PFX" --hosts 2 --rails 1 --leaves 1 --spines 1 --services munge,slurm --clock-offsets zero "$@"; }
srun() { timeout 60 "$TB" slurm srun "$@"; }
slog() { cat "$S"/log/slurmd-n*.log; }
# Per-job values that differ between two identical jobs.
envmask() { grep -Ev '^(SLURM_JOB_ID|SLURM_JOBID|SLURM_STEP_LAUNCHER_PORT|SLURM_SRUN_COMM_PORT|SLURM_TASK_PID)=' | sort; }
fake_start() { # fake_start NODE answer|silent
	mkdir -p "$S/agent-$1"
	tb daemon start "$1" fake -- "$FAKE" "$S/agent-$1/agent-step.sock" "$2" >/dev/null
	for ((n = 0; n < 50; n++)); do [ -S "$S/agent-$1/agent-step.sock" ] && return 0; sleep 0.1; done
	return 1
}
fake_stop() { tb daemon stop "$1" fake; rm -f "$S/agent-$1/agent-step.sock"; }
agent_start() { # agent_start NODE PEER: the real fabriciq-agent, sockets in $S/agent-NODE
	mkdir -p "$S/agent-$1"
	tb daemon start "$1" agent -- "$AGENT" -c /dev/null -s nics=rail0 -s "peers=$2:rail0@198.19.0.$((2 * ${2#n} + 1))" \
		-s "node=$1" -s "run_dir=$S/agent-$1" -s "status_file=$S/agent-$1.json" -s "spool_dir=$S/agent-$1/spool" \
		-s report_interval=200ms >/dev/null
	for ((n = 0; n < 50; n++)); do [ -S "$S/agent-$1/agent-step.sock" ] && return 0; sleep 0.1; done
	return 1
}
# "JOB.STEP RANK:LOCAL:PID,..." per step registered in NODE's agent (its --status JSON)
agent_steps() {
	"$AGENT" -c /dev/null -s "status_file=$S/agent-$1.json" --status --json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["steps"]:
    print("%d.%d %s %s" % (s["job_id"], s["step_id"], s["mode"], ",".join("%d:%d:%d" % (r["rank"], r["local_rank"], r["pid"]) for r in sorted(s["ranks"], key=lambda r: r["rank"]))))'
}
wait_agentlog() { # wait_agentlog NODE PATTERN SECONDS
	for ((n = 0; n < $3 * 10; n++)); do grep -Eq "$2" "$S/log/$1.agent.log" && return 0; sleep 0.1; done
	return 1
}
agentlog() { cat "$S"/log/n*.fake.log 2>/dev/null; }
wait_log() { # wait_log PATTERN SECONDS: a line of the fake agents' logs
	for ((n = 0; n < $2 * 10; n++)); do agentlog | grep -Eq "$1" && return 0; sleep 0.1; done
	return 1
}

# ---- 1. without the plugin: a reference environment -----------------------
check "up without the plugin" up
REF=$(srun -N1 -w n1 env 2>&1 | envmask)

# ---- 2. an unknown key: error in slurmd's log, plugin disabled ------------
check "up with an unknown plugstack key" up --plugstack "optional $PLUGIN $ARGS colour=blue"
grep -q "fabriciq: plugstack.conf: unknown key 'colour'" "$S/log/slurmd-n1.log"
ok $? "slurmd's log names the unknown key" || slog | grep -i fabriciq | head -3
out=$(srun -N1 true 2>&1)
ok $? "jobs still run with the disabled plugin" || diag "$out"
out=$(srun -N1 --fabriciq true 2>&1)
[ $? -ne 0 ] && grep -q "unknown key 'colour'" <<<"$out"
ok $? "--fabriciq is refused, with the reason" || diag "$out"

# ---- 3. valid arguments --------------------------------------------------
check "up with the plugin" up --plugstack "optional $PLUGIN $ARGS"
! slog | grep -q "fabriciq.*error\|error.*fabriciq"
ok $? "no fabriciq error in slurmd's log"
srun --help 2>&1 | grep -q -- "--fabriciq"
ok $? "srun --help lists --fabriciq"

out=$(srun -N1 -w n1 env 2>&1)
[ -n "$REF" ]
is "$(envmask <<<"$out" | diff <(echo "$REF") - | grep -c '^[<>]')" 0 "no option: the task's env is the same as without the plugin"
is "$(agentlog | wc -l)" 0 "no option: nothing sent to any agent"

# invalid MODE: refused before anything runs
rm -f "$S/ran"
out=$(srun -N1 --fabriciq=steer touch "$S/ran" 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -q "fabriciq: --fabriciq=steer: unknown mode" <<<"$out" && [ ! -e "$S/ran" ]
ok $? "srun --fabriciq=steer refused at submission, nothing ran" || diag "rc $rc: $out"
out=$(timeout 30 "$TB" slurm sbatch --fabriciq=Control --wrap "touch $S/ran" 2>&1)
[ $? -ne 0 ] && grep -q "unknown mode" <<<"$out" && ! grep -q "Submitted" <<<"$out"
ok $? "sbatch --fabriciq=Control refused, no job submitted" || diag "$out"
out=$(timeout 30 "$TB" slurm salloc -N1 --fabriciq=x touch "$S/ran" 2>&1)
[ $? -ne 0 ] && grep -q "unknown mode" <<<"$out" && [ ! -e "$S/ran" ]
ok $? "salloc --fabriciq=x refused, nothing ran" || diag "$out"

# ---- 4. agent missing: one line, the job runs unchanged --------------------
out=$(srun -N1 -w n1 --fabriciq env 2>"$S/err")
rc=$?
[ $rc -eq 0 ] && [ "$(wc -l <"$S/err")" -eq 1 ] && grep -q "fabriciq: n1: no agent at $S/agent-n1/agent-step.sock.*runs without fabriciq" "$S/err"
ok $? "no agent: the job runs, one line on its stderr" || diag "rc $rc: $(cat "$S/err")"
is "$(grep -Ec '^(FABRICIQ_|NCCL_|LD_LIBRARY_PATH=)' <<<"$out")" 0 "no agent: nothing injected"

# ---- 5. with agents: srun --------------------------------------------------
fake_start n1 answer && fake_start n2 answer
ok $? "fake agents listening on n1 and n2"
out=$(LD_LIBRARY_PATH=/usr/local/x srun -N2 -n4 --fabriciq=control sh -c 'echo "$SLURM_PROCID $SLURM_LOCALID $SLURM_JOB_ID $SLURM_STEP_ID $(hostname) $$ $FABRICIQ_RANK $FABRICIQ_LOCAL_RANK $FABRICIQ_JOB_ID $FABRICIQ_STEP_ID $FABRICIQ_NNODES $FABRICIQ_MODE $NCCL_NET_PLUGIN $LD_LIBRARY_PATH $FABRICIQ_AGENT_SOCKET $FABRICIQ_CLOCK_PAGE $FABRICIQ_PATH_PAGE"' 2>&1)
ok $? "srun -N2 -n4 --fabriciq=control runs" || diag "$out"
is "$(wc -l <<<"$out")" 4 "4 tasks"
# the fake agent tells no paths, as an agent older than Result.paths: the defaults
bad=$(awk -v p="$NET" '!($7 == $1 && $8 == $2 && $9 == $3 && $10 == $4 && $11 == 2 && $12 == "control" &&
	$13 == p && $14 == "/usr/local/x" && $15 == "/run/fabriciq/agent-telemetry.sock" && $16 == "/run/fabriciq/clock" && $17 == "/run/fabriciq/paths")' <<<"$out")
is "$bad" "" "every task: rank, local rank, job, step, nodes, mode, NCCL plugin by path, library path untouched; an agent telling no paths: the default socket, clock and path pages"
job=$(awk 'NR == 1 { print $3 }' <<<"$out")
wait_log "^end $job 0 n2 " 5
want=$(sort -n <<<"$out" | awk '{ r[$5] = r[$5] (r[$5] ? "," : "") $1 ":" $2 ":" $6 } END { for (h in r) print h, r[h] }' | sort)
got=$(agentlog | awk -v j="$job" '$1 == "start" && $2 == j && $3 == 0 && $6 == "control" && $7 == 2 && $8 == 4 { print $4, $9 }' |
	while read -r h r; do echo "$h $(tr , '\n' <<<"$r" | sort -n | paste -sd,)"; done | sort)
is "$got" "$want" "each node's agent got the step once, with every local task's global rank, local rank and pid"
is "$(agentlog | grep -c "^end $job 0 n[12] 0$")" 2 "both nodes unregistered the step at its end, status 0"

# the job's own NCCL_NET_PLUGIN is kept (and said in the log); LD_LIBRARY_PATH is left alone
out=$(NCCL_NET_PLUGIN=mine LD_LIBRARY_PATH=/usr/local/x srun -N1 -w n1 --fabriciq sh -c 'echo "$NCCL_NET_PLUGIN $FABRICIQ_MODE"' 2>&1)
is "$out" "mine monitor" "a job's own NCCL_NET_PLUGIN is kept; a bare --fabriciq means monitor"
grep -q "fabriciq: job [0-9]* step 0: the job sets NCCL_NET_PLUGIN=mine; kept" "$S/log/slurmd-n1.log"
ok $? "the step's log says the job's NCCL_NET_PLUGIN was kept"
out=$(LD_LIBRARY_PATH=/usr/local/x srun -N1 -w n1 --fabriciq printenv LD_LIBRARY_PATH 2>&1)
is "$out" "/usr/local/x" "LD_LIBRARY_PATH: the job's own, untouched"
# a long value, as module and conda trees make (the plugin read at most
# 4096 bytes and took a longer value as unset)
long=$(for ((i = 0; i < 100; i++)); do printf '/opt/conda/envs/e%03d/lib/python3.11/site-packages/x:' "$i"; done)
out=$(NCCL_NET_PLUGIN=${long:0:5000} srun -N1 -w n1 --fabriciq printenv NCCL_NET_PLUGIN 2>&1)
is "$out" "${long:0:5000}" "a job's own 5000-byte NCCL_NET_PLUGIN is kept whole"

# repeated option: the last one wins
is "$(srun -N1 --fabriciq=control --fabriciq=monitor printenv FABRICIQ_MODE 2>&1)" monitor "--fabriciq=control --fabriciq=monitor: monitor"
is "$(srun -N1 --fabriciq=monitor --fabriciq=off sh -c 'env | grep "^FABRICIQ_\|^NCCL_" | wc -l' 2>&1)" 0 "--fabriciq=monitor --fabriciq=off: nothing exported"
is "$(srun -N1 --export=NONE --fabriciq=control /usr/bin/printenv FABRICIQ_MODE 2>&1)" control "srun --export=NONE --fabriciq=control"
# a network class: its DSCP and IB service level for the plugin; an unknown one refused
is "$(srun -N1 --fabriciq=control,class=latency sh -c 'echo "$FABRICIQ_MODE $FABRICIQ_CLASS $FABRICIQ_DSCP $FABRICIQ_IB_SL"' 2>&1)" \
	"control latency 46 1" "--fabriciq=control,class=latency: the class, its DSCP and SL exported"
rm -f "$S/ran"
out=$(srun -N1 --fabriciq=control,class=gold touch "$S/ran" 2>&1)
[ $? -ne 0 ] && grep -q "no network class 'gold'" <<<"$out" && [ ! -e "$S/ran" ]
ok $? "--fabriciq=control,class=gold: refused at submission, nothing ran" || diag "$out"

# ---- 6. sbatch with two steps, salloc, --export=NONE ----------------------
# srun -Q: a step that waits for the previous one's nodes to be released
# says so on the job's stderr ("step creation temporarily disabled"),
# which would land among the lines compared. srun -i none: by default srun
# sends its stdin (here /dev/null: an EOF message) to every node's
# slurmstepd, and a task that ends at once can have its slurmstepd close
# the connection with that message unread; the reset is srun's "error
# reading header: Connection reset by peer ... io error with slurmstepd",
# seen once in a make check, with every line of output there.
cat >"$S/job.sh" <<'JOB'
#!/bin/bash
echo "batch $FABRICIQ_MODE $FABRICIQ_STEP_ID"
/usr/bin/srun -Q -i none -N2 -n2 /bin/sh -c 'echo "s$SLURM_STEP_ID $FABRICIQ_MODE $FABRICIQ_STEP_ID $FABRICIQ_RANK $NCCL_NET_PLUGIN"'
/usr/bin/srun -Q -i none -N2 -n2 /bin/sh -c 'echo "s$SLURM_STEP_ID $FABRICIQ_MODE $FABRICIQ_STEP_ID $FABRICIQ_RANK $NCCL_NET_PLUGIN"'
/usr/bin/srun -Q -i none -N1 -n1 --fabriciq=off /bin/sh -c 'echo "off:$FABRICIQ_MODE:$FABRICIQ_STEP_ID:$NCCL_NET_PLUGIN:"'
JOB
for exp in ALL NONE; do
	out=$(timeout 60 "$TB" slurm sbatch -W -N2 --export=$exp --fabriciq=control -o "$S/out-$exp" "$S/job.sh" 2>&1)
	job=$(awk '/Submitted/ { print $4 }' <<<"$out")
	got=$(sort "$S/out-$exp" 2>/dev/null | tr '\n' ' ')
	is "$got" "batch control batch off:::: s0 control 0 0 $NET s0 control 0 1 $NET s1 control 1 0 $NET s1 control 1 1 $NET " \
		"sbatch --export=$exp --fabriciq=control: batch step and both srun steps get the mode; a step with =off gets nothing"
	wait_log "^end $job 4294967291 n1 " 5
	is "$(agentlog | awk -v j="$job" '$2 == j { print $1, $3, $4 }' | sort | uniq -c | awk '{ print $1, $2, $3, $4 }' | tr '\n' ' ')" \
		"1 end 0 n1 1 end 0 n2 1 end 1 n1 1 end 1 n2 1 end 4294967291 n1 1 start 0 n1 1 start 0 n2 1 start 1 n1 1 start 1 n2 1 start 4294967291 n1 " \
		"sbatch --export=$exp: the agents saw the batch step and both steps on both nodes, each registered and unregistered once"
done
out=$(timeout 60 "$TB" slurm salloc -N2 --fabriciq /bin/sh -c 'srun -N2 -n2 printenv FABRICIQ_MODE; srun -N1 --fabriciq=control printenv FABRICIQ_MODE' 2>/dev/null | tr '\n' ' ')
is "$out" "monitor monitor control " "salloc --fabriciq CMD: its steps get monitor; a step's own --fabriciq=control wins"

# ---- 7. unregistration after a signal --------------------------------------
: >"$S/log/n1.fake.log"
timeout 60 "$TB" slurm srun -N1 -w n1 --fabriciq -J spk-cancel sleep 100 >/dev/null 2>&1 &
spid=$!
wait_log "^start [0-9]+ 0 n1 " 10
job=$(agentlog | awk '$1 == "start" { print $2; exit }')
"$TB" slurm scancel "$job"
wait "$spid"
wait_log "^end $job 0 n1 " 10
st=$(agentlog | awk -v j="$job" '$1 == "end" && $2 == j { print $5 }')
[ -n "$st" ] && [ $((st & 0x7f)) -ne 0 ]
ok $? "scancel: the step is unregistered with a signal status ($st)"
: >"$S/log/n1.fake.log"
timeout 60 "$TB" slurm srun -N1 -w n1 --fabriciq sleep 100 >/dev/null 2>&1 &
spid=$!
wait_log "^start [0-9]+ 0 n1 " 10
read -r job tpid <<<"$(agentlog | awk '$1 == "start" { split($9, r, ":"); print $2, r[3]; exit }')"
tb exec n1 kill -KILL "$tpid"
wait "$spid"
wait_log "^end $job 0 n1 " 10
is "$(agentlog | awk -v j="$job" '$1 == "end" && $2 == j { print $5 }')" 9 "a task killed by SIGKILL: unregistered with status 9"

# ---- 8. a stuck agent costs at most its timeout per call ------------------
fake_stop n1
fake_start n1 silent
t0=$(date +%s%N)
out=$(srun -N1 -w n1 --fabriciq printenv FABRICIQ_MODE 2>&1)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc -eq 0 ] && grep -q '^monitor$' <<<"$out"
ok $? "a silent agent: the step runs" || diag "$out"
[ $ms -lt 4000 ]
ok $? "a silent agent delays the step by its timeouts only ($ms ms; 2 calls x 500 ms)"
grep -q "fabriciq: n1: registering job [0-9]* step 0 with the agent at .* failed: Connection timed out" "$S/log/slurmd-n1.log"
ok $? "the step's log says registration timed out"
fake_stop n1
fake_stop n2

# ---- 9. the real agent -------------------------------------------------------
agent_start n1 n2 && agent_start n2 n1
ok $? "fabriciq-agent running on n1 and n2"
timeout 60 "$TB" slurm srun -N2 -n3 --fabriciq=control sh -c 'echo "$(hostname) $SLURM_JOB_ID $SLURM_PROCID $SLURM_LOCALID $$ $FABRICIQ_AGENT_SOCKET $FABRICIQ_CLOCK_PAGE $FABRICIQ_PATH_PAGE"; sleep 5' >"$S/tasks" 2>&1 &
spid=$!
# each agent rewrites its status every 200 ms: poll until both list the step
for ((n = 0; n < 40; n++)); do
	sleep 0.2
	[ "$(wc -l <"$S/tasks")" -eq 3 ] || continue
	job=$(awk 'NR == 1 { print $2 }' "$S/tasks")
	got=$( (agent_steps n1 | sed 's/^/n1 /'; agent_steps n2 | sed 's/^/n2 /') | tr '\n' ' ')
	want=$(sort -k3n "$S/tasks" | awk '{ r[$1] = r[$1] (r[$1] ? "," : "") $3 ":" $4 ":" $5; j = $2 } END { for (h in r) print h, j ".0 control", r[h] }' | sort | tr '\n' ' ')
	[ "$got" = "$want" ] && break
done
[ -n "$want" ] && [ "$got" = "$want" ]
ok $? "the agents' --status lists the running step with every task's rank, local rank and pid" || diag "got '$got', want '$want'"
# plugstack gives only step_socket=; each agent's run_dir is $S/agent-NODE
is "$(awk -v s="$S" '$6 == s "/agent-" $1 "/agent-telemetry.sock" && $7 == s "/agent-" $1 "/clock" && $8 == s "/agent-" $1 "/paths"' "$S/tasks" | wc -l)" 3 \
	"all 3 tasks got their own node agent's telemetry socket, clock page and path page, told by the agent" || diag "$(cat "$S/tasks")"
wait "$spid"
wait_agentlog n1 "step $job.0 unregistered \(exit status 0\)" 5 && wait_agentlog n2 "step $job.0 unregistered \(exit status 0\)" 5
ok $? "after a normal end both agents unregistered the step (status 0)"
for ((n = 0; n < 20; n++)); do [ -z "$(agent_steps n1; agent_steps n2)" ] && break; sleep 0.1; done
is "$(agent_steps n1; agent_steps n2)" "" "no step left registered in either agent"
timeout 60 "$TB" slurm srun -N1 -w n2 --fabriciq sleep 100 >/dev/null 2>&1 &
spid=$!
for ((n = 0; n < 50; n++)); do [ -n "$(agent_steps n2)" ] && break; sleep 0.2; done
job=$(agent_steps n2 | awk -F. '{ print $1; exit }')
"$TB" slurm scancel "$job"
wait "$spid"
wait_agentlog n2 "step $job.0 unregistered" 10
for ((n = 0; n < 20; n++)); do [ -z "$(agent_steps n2)" ] && break; sleep 0.1; done
st=$(sed -n "s/.*step $job.0 unregistered (exit status \([0-9]*\)).*/\1/p" "$S/log/n2.agent.log")
[ -n "$st" ] && [ $((st & 0x7f)) -ne 0 ] && [ -z "$(agent_steps n2)" ]
ok $? "scancel: the agent unregistered the step with a signal status ($st)"
out=$(timeout 60 "$TB" slurm sbatch -W -N2 --export=NONE --fabriciq=control -o "$S/out-agent" "$S/job.sh" 2>&1)
job=$(awk '/Submitted/ { print $4 }' <<<"$out")
sleep 0.3
is "$(grep -ho "step $job\.[0-9]* \(registered\|unregistered\)" "$S"/log/n[12].agent.log | sort | uniq -c | awk '{ print $1, $3, $4 }' | tr '\n' ' ')" \
	"2 $job.0 registered 2 $job.0 unregistered 2 $job.1 registered 2 $job.1 unregistered 1 $job.4294967291 registered 1 $job.4294967291 unregistered " \
	"sbatch --export=NONE with two steps: each step registered and unregistered once per node, the batch step once"

# ---- 10. required=yes and a site default -------------------------------------
check "up with required=yes default=monitor and a clock_page= override" up --plugstack "optional $PLUGIN $ARGS required=yes default=monitor clock_page=$S/mnt-%n/clock"
agent_start n1 n2
ok $? "fabriciq-agent on n1 only"
is "$(srun -N1 -w n1 --fabriciq printenv FABRICIQ_CLOCK_PAGE FABRICIQ_PATH_PAGE FABRICIQ_AGENT_SOCKET 2>&1 | tr '\n' ' ')" \
	"$S/mnt-n1/clock $S/agent-n1/paths $S/agent-n1/agent-telemetry.sock " "clock_page= in plugstack wins over the agent's; the other paths are the agent's"
is "$(srun -N1 -w n1 printenv FABRICIQ_MODE 2>&1)" monitor "default=monitor: a job without the option gets monitor"
is "$(srun -N1 -w n1 --fabriciq=off sh -c 'env | grep "^FABRICIQ_\|^NCCL_" | wc -l' 2>&1)" 0 "default=monitor: --fabriciq=off opts out"
rm -f "$S/ran"
out=$(srun -N1 -w n2 --fabriciq touch "$S/ran" 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -q "fabriciq: n2: no agent at .* fails (required=yes)" <<<"$out" && [ ! -e "$S/ran" ]
ok $? "required=yes, no agent on n2: the step fails before its command runs, with the reason" || diag "rc $rc: $out"
out=$(srun -N1 -w n2 --fabriciq=off true 2>&1)
ok $? "required=yes: a job with --fabriciq=off still runs on n2" || diag "$out"
out=$(srun -N2 -n2 --fabriciq hostname 2>&1)
[ $? -ne 0 ] && grep -q "^n1$" <<<"$out" && grep -q "n2: no agent" <<<"$out"
ok $? "required=yes: a step over n1 and n2 fails on n2 only, saying so" || diag "$out"

check "down" tb down
