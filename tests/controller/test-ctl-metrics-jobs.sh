#!/usr/bin/env bash
# test-ctl-metrics-jobs: /metrics and the controller's memory stay bounded
# by the job steps running, not by every step ever run (issue 15 item 2).
# Real munged, real PostgreSQL, the real controller; fq-agentsim drives
# 10,000 one-node job steps through it (StepStart, 4 lane reports,
# StepEnd each, every frame stored and acknowledged), then 100 steps whose
# StepEnd never comes. Prints the figures.
[ -n "${FQ_TEST_PG:-}" ] || exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
. "$(dirname "$0")/ctl-lib.sh"
metrics() { curl -s "http://127.0.0.1:$HTTP_PORT/metrics"; }
metric() { metrics | awk -v m="$1" '$1 == m { print $2 }'; }
lane_series() { metrics | grep -c '^fabriciq_job_lane_bytes_total{'; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$CTL_PID/status"; }

munge_up || skip_all "private munged did not start"
plan 16
ctl_up step_idle=5s; ok $? "controller starts"

# 10,000 steps in 4 runs of 2,500 (4 agents x 625 each, as fast as the
# acks come): the first run sets the allocator's high-water mark, the
# other three must not grow it by more than the capped caches hold
sizes= rss=
for run in 1 2 3 4; do
	out=$(sim --agents 4 --prefix "j$run" --job-base $((run * 100000)) --jobs 625 --drain 300 2>&1)
	ok $? "run $run: 2,500 job steps, every frame acknowledged ($out)"
	sleep 1.5 # rendered each report window
	sizes="$sizes $(metrics | wc -c)" rss="$rss $(rss_kib)"
done
is "$(q "select count(*) from fabriciq.lane_windows where src_node like 'j%'")" 40000 \
	"the 40,000 lane reports of the 10,000 steps are stored"
is "$(lane_series)" 0 "after 10,000 ended steps: no lane series"
is "$(metric 'fabriciq_metrics_steps_expired_total{reason="ended"}')" 10000 "... 10,000 steps left at their StepEnd"
is "$(metric fabriciq_metrics_steps)" 0 "... none held"
is "$(metric fabriciq_ingest_cached_steps) $(metric fabriciq_ingest_cached_rank_nics)" "0 0" \
	"... and ingest keeps no step's start nor its ranks' NICs (each forgotten when its node ended it)"
set -- $sizes
diag "/metrics bytes after 2,500 / 5,000 / 7,500 / 10,000 steps:$sizes"
[ $(($4 - $1)) -lt 64 ]
ok $? "/metrics after 10,000 steps within 64 bytes of after 2,500 ($1 -> $4: counters' digits)"
set -- $rss
diag "controller RSS (KiB) after 2,500 / 5,000 / 7,500 / 10,000 steps:$rss"
[ $(($4 - $1)) -lt 6144 ]
ok $? "controller RSS grew less than 6 MiB over the last 7,500 steps ($1 -> $4 KiB)"

# 100 steps that never end: their 400 series stay while they report,
# and leave step_idle (5 s) after their last frame
out=$(sim --agents 4 --prefix jc --job-base 200000 --jobs 25 --jobs-open --drain 60 2>&1)
sleep 1.5
is "$(lane_series)" 400 "100 running steps (4 lanes each): 400 series ($out)"
is "$(metric fabriciq_ingest_cached_steps)" 100 "... ingest keeps their 100 starts"
sleep 5
is "$(lane_series)" 0 "5 s after their last frame, no StepEnd: their series are gone"
is "$(metric 'fabriciq_metrics_steps_expired_total{reason="idle"}')" 100 "... 100 steps counted as idle"
done_testing
