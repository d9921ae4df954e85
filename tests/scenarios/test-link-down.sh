#!/usr/bin/env bash
# Scenario: a host link down for 10 s. 6 hosts x 2 rails on 3 leaves; a
# control-mode allreduce on n1-n4 while rail0 of n2 is cut for 10 s, and a
# healthy job on n5-n6. Every lane failure the ranks logged is stored once,
# each outage crossed n2/rail0 and came back, the healthy job is quiet,
# and the cut is one incident in the job's report.
. "$(dirname "$0")/scenario.sh"
sc_require sclink
plan 17
sc_up 6 2 3 2 -s incident_gap=5s
ok $? "up: 6 hosts x 2 rails, 3 leaves, 2 spines; controller and 6 agents reporting"
sc_job hit control 'n[1-4]' allreduce 4M 700 17321
sc_job calm control 'n[5-6]' allreduce 4M 700 17322
sc_job_running hit && sleep 1
tb link down n2 0
sleep 10
tb link up n2 0
sc_job_wait hit; rc=$?; hit=$SC_JOB
ok $rc "the job on n1-n4 (job $hit) completes through 10 s without n2/rail0" || diag "$(tail -5 "$S/hit.out")"
sc_job_wait calm; rc=$?; calm=$SC_JOB
sc_verified hit && sc_verified calm && [ $rc = 0 ]; ok $? "both jobs completed, verified every interval"
sleep 4
sc_failovers_match hit "$hit"
[ "${SC_FO_LOGGED:-0}" -gt 0 ]; ok $? "the ranks of job $hit logged lane failures ($SC_FO_LOGGED)"
sc_report_counts "$hit"
sc_outages_through "$hit" n2 rail0
sc_quiet "$calm" calm
sc_incident "$hit" n2 rail0
json 'j[0]["events"] == 1 and 9.5e9 < j[0]["duration_ns"] < 12e9' <<<"$SC_INCIDENT" | grep -qx True
ok $? "... one DOWN, the incident lasting the 10 s the link was down (and its detection)"
sc_end_line hit "$hit"
