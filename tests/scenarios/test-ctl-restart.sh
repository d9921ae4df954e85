#!/usr/bin/env bash
# Scenario: the controller restarted while a rail flaps under a
# control-mode job: the agents spool what it missed, and the job report
# still holds every lane failure the ranks logged, once.
. "$(dirname "$0")/scenario.sh"
sc_require sctl
plan 7
sc_up 4 2 2 2
ok $? "up: 4 hosts x 2 rails; controller and 4 agents reporting"
sc_job hit control 'n[1-3]' allreduce 4M 800 17331
sc_job_running hit && sleep 1
tb daemon stop ctl controller >/dev/null
tb flap n3 1 --count 6 --period 800 >/dev/null
sleep 2
sc_controller_start
ok $? "the controller stopped through 6 flaps of n3/rail1, then started again"
sc_job_wait hit; rc=$?; hit=$SC_JOB
sc_verified hit && [ $rc = 0 ]; ok $? "the job (job $hit) completed, verified every interval"
sleep 5
sc_failovers_match hit "$hit"
sc_flaps_hit "$hit" hit
sc_report_counts "$hit"
sc_outages_through "$hit" n3 rail1
