#!/usr/bin/env bash
# Scenario: two jobs that ECMP hashed onto one spine. By default 4 hosts x
# 1 rail on 2 leaves and 2 spines (FQ_COLL="HOSTS RAILS LEAVES SPINES"
# sets others, FQ_COLL_PREFIX the testbed's prefix); job A on the first
# host of the first and of the last leaf (n1 n3), job B on the second of
# each (n2 n4): no NIC in common, so only the fabric can bring them
# together. Each runs an allreduce in control mode with 2 lanes a
# connection (over every rail); once connected, every lane of both is
# pinned to spine1 (fabriciq-testbed pin: as if the leaves' L4 hash had put
# them all there), and leaf1-spine1 is shaped to 20 Mbit/s with a short
# queue (2 ms, so the plugin's own rule, 10 ms over the RTT's base, starts
# no move).
#
# The agents trace each lane's own route (its 5-tuple), the controller sees
# both jobs' lanes delayed on the same switch links and opens a collision
# on one of them (a component: the link, no NIC), attached to both jobs,
# and advises one job (the one with fewer lanes there) to move its lanes
# on it, each by its source port; that job's agents put the advice on
# their path pages and its plugin re-opens exactly those lanes on new
# source ports ("move by=advice lane=K from=ADDR:PORT" in its steering
# trace). The other job is not advised and moves on no advice. Checked
# through the database, the agents' logs, the ranks' traces and `fabriciq
# --json job`.
. "$(dirname "$0")/scenario.sh"
read -r HOSTS RAILS LEAVES SPINES <<<"${FQ_COLL:-4 1 2 2}"
sc_require "${FQ_COLL_PREFIX:-scsp}"
plan 11
sc_up "$HOSTS" "$RAILS" "$LEAVES" "$SPINES" -s "topology_file=$S/topology.conf"
ok $? "up: $HOSTS hosts x $RAILS rail(s), $LEAVES leaves, $SPINES spines; controller and $HOSTS agents reporting"
sc_topology_file >"$S/topology.conf" # the switches' names
# the first two hosts of the first and of the last leaf (as the testbed
# hangs host i off leaf (i-1)*LEAVES/HOSTS+1)
leaf_of() { echo $((($1 - 1) * LEAVES / HOSTS + 1)); }
hosts_of() { for ((i = 1; i <= HOSTS; i++)); do [ "$(leaf_of $i)" -eq "$1" ] && echo "$i"; done | head -2; }
mapfile -t first < <(hosts_of 1)
mapfile -t last < <(hosts_of "$LEAVES")
# a host's rail addresses
addrs() { for ((r = 0; r < RAILS; r++)); do printf '198.19.%d.%d ' "$r" $((2 * $1 + 1)); done; }

# job NAME NODES PORT: an allreduce in control mode, 2 lanes a connection,
# waiting after connecting for $S/go; its ranks trace their steering to
# $S/trace.NAME.RANK
job() {
	local boot=${2%%,*}
	timeout 300 "$TB" slurm srun -w "$2" -N2 -n2 -J "$1" --fabriciq=control sh -c '
		[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"
		name=$1; shift
		FABRICIQ_LANES=2 FABRICIQ_STEER_TRACE=$0/trace.$name.$SLURM_PROCID "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' \
		"$S" "$1" "$CB" --bootstrap "198.19.0.$((2 * ${boot#n} + 1)):$3" --coll allreduce -b 1M -e 1M -n 20 -w 1 \
		--timeout 150 --timeline 1000 --start-file "$S/go" >"$S/$1.out" 2>&1 &
	echo $! >"$S/$1.pid"
}
pa=$(free_port) pb=$(free_port)
job A "n${first[0]},n${last[0]}" "$pa"
job B "n${first[1]},n${last[1]}" "$pb"
# the dialing side's connections of both jobs ("SRC SPORT DST DPORT"): the
# rail connections whose local port listens nowhere, but the bootstraps':
# the lanes, and collbench's own between its ranks
lanes() {
	local i
	for i in "${first[@]}" "${last[@]}"; do
		tb exec "n$i" ss -Htn state established 2>/dev/null |
			awk -v lp="$(tb exec "n$i" ss -Htln 2>/dev/null | awk '{ n = split($4, a, ":"); printf "%s,", a[n] }')" \
				-v pa="$pa" -v pb="$pb" '
			BEGIN { n = split(lp, a, ","); for (k = 1; k <= n; k++) listen[a[k]] = 1 }
			$3 ~ /^198\.19\./ { split($3, l, ":"); split($4, p, ":")
				if (!(l[2] in listen) && p[2] != pa && p[2] != pb) print l[1], l[2], p[1], p[2] }'
	done
}
for ((t = 0; t < 120; t++)); do # both jobs connected, their 8 lanes up (at most 60 s)
	[ "$(cat "$S/A.out" "$S/B.out" 2>/dev/null | grep -c '^\[r0\] # connected')" = 2 ] &&
		[ "$(lanes | wc -l)" -ge 8 ] && break
	sleep 0.5
done
lanes >"$S/lanes"
n=$(awk '{ print $1, $2, $3, $4, 1 }' "$S/lanes" | tb pin)
[ "$(wc -l <"$S/lanes")" -ge 8 ] && [ "$n" = "$(wc -l <"$S/lanes")" ]
ok $? "both jobs connected; their lanes (2 a connection, both ways) and other connections, $n in all, pinned to spine1, each checked in its leaf's FIB" ||
	diag "$(cat "$S/lanes"; tail -n 3 "$S/A.out" "$S/B.out")"
tb shape leaf1-spine1 20mbit --latency 2 >/dev/null
touch "$S/go"
sc_job_wait A; ra=$? ja=$SC_JOB
sc_job_wait B; rb=$? jb=$SC_JOB
sc_verified A && sc_verified B && [ "$ra $rb" = "0 0" ]
ok $? "jobs $ja (n${first[0]} n${last[0]}) and $jb (n${first[1]} n${last[1]}): both allreduces complete, every interval verified" ||
	diag "$(tail -n 4 "$S/A.out" "$S/B.out")"
sleep 2
# the job to move: the incident's (the rule's choice, controller/rules.h:
# the fewer lanes there, ties the higher id); its name, its ranks'
# addresses; the other
mv=$(psql_ctl "select evidence->>'move_job' from fabriciq.anomalies where kind = 'collision' and incident_id is null
	order by id limit 1")
if [ "$mv" = "$jb" ]; then
	mv=$jb m=B msrc="$(addrs "${first[1]}")$(addrs "${last[1]}")" ot=$ja o=A
else
	mv=$ja m=A msrc="$(addrs "${first[0]}")$(addrs "${last[0]}")" ot=$jb o=B
fi

# 1. the controller: collisions on links of spine1, job B (the higher id)
# to move; the first is the incident, the others its members (the same two
# jobs), and the incident is attached to both jobs
rows=$(psql_ctl "select component, evidence->>'link', evidence->>'move_job', evidence->>'other_job',
	coalesce(node, '-'), coalesce(incident_id::text, 'incident') from fabriciq.anomalies where kind = 'collision' order by id")
links=$(cut -d'|' -f1 <<<"$rows" | sort -u | paste -sd' ')
inc=$(awk -F'|' '$6 == "incident" { print $1 }' <<<"$rows")
bad=$(awk -F'|' -v m="$mv" -v o="$ot" -v l="$LEAVES" '$1 !~ "^(leaf(1|" l ")>spine1|spine1>leaf(1|" l "))$" || $2 != $1 || $3 != m || $4 != o || $5 != "-"' <<<"$rows")
[ -n "$rows" ] && [ -z "$bad" ] && [ "$(grep -c . <<<"$inc")" = 1 ] &&
	[ "$(psql_ctl "select count(*) from fabriciq.anomalies where kind = 'collision' and incident_id is distinct from
		(select id from fabriciq.anomalies where kind = 'collision' and incident_id is null)")" = 1 ]
ok $? "collisions on links of spine1 ($links), each a component with no NIC, job $mv advised to move, job $ot the other; one incident ($inc), the rest its members" ||
	diag "$(psql_ctl "select kind, component, node, nic, incident_id, summary from fabriciq.anomalies order by id")"
is "$(psql_ctl "select string_agg(distinct job_id::text, ' ' order by job_id::text) from fabriciq.anomaly_jobs j
	join fabriciq.anomalies a on a.id = j.anomaly_id where a.kind = 'collision' and a.incident_id is null")" \
	"$(printf '%s\n' "$ja" "$jb" | sort | paste -sd' ')" "the incident is attached to both jobs"

# 2. the agents: advice for the moved job's lanes by their source ports,
# on those links; a port is one of its lanes: pinned at the start, or
# re-opened by a move (its steering trace names each lane's socket,
# path=LOCAL>PEER)
adv=$(grep -h "controller advice: job $mv move off rail[0-9]* -> " "$S"/log/n*.agent.log)
ports=$(grep -o 'the lane from port [0-9]*' <<<"$adv" | awk '{ print $NF }' | sort -u)
{
	awk -v src=" $msrc " 'index(src, " " $1 " ") { print $2 }' "$S/lanes"
	cat "$S"/trace.$m.* 2>/dev/null | grep -o 'path=[0-9.]*:[0-9]*' | sed 's/.*://'
} | sort -u >"$S/lanes.$m"
badport=$(comm -23 <(echo "$ports") "$S/lanes.$m")
badlink=$(grep -o "collides with job [0-9]* on [^)]*" <<<"$adv" | awk -v o="$ot" -v l=" $links " '$4 != o || index(l, " " $6 " ") == 0' | sort -u)
[ -n "$ports" ] && [ -z "$badport$badlink" ]
ok $? "job $mv's agents took advice for its lanes from ports $(paste -sd' ' <<<"$ports"): each a lane of job $mv, on a collision's link" ||
	diag "$(head -5 <<<"$adv") bad: $badport $badlink"
is "$(cat "$S"/log/n*.agent.log | grep -c "controller advice: job $ot ")" 0 "job $ot's agents got no advice"

# 3. the plugin: the advised job moved exactly the advised lanes; the other none on advice
moves=$(cat "$S"/trace.$m.* 2>/dev/null | grep -o ' move by=advice lane=[0-9]* from=[0-9.]*:[0-9]*')
moved=$(sed 's/.*://' <<<"$moves" | sort -u)
[ -n "$moves" ] && [ -z "$(comm -23 <(echo "$moved") <(echo "$ports"))" ]
ok $? "job $mv re-opened $(grep -c . <<<"$moves") lane(s) on new source ports on the advice, each one the advice named (from ports $(paste -sd' ' <<<"$moved"))" ||
	diag "moves: $moves; advised: $ports"
is "$(cat "$S"/trace.$o.* 2>/dev/null | grep -c ' move by=advice ')" 0 "job $ot, not advised: no move on advice"

# 4. what the job reports say: the incident, on its link
for j in "$ja" "$jb"; do
	got=$(fq --json job "$j" | json '" ".join(sorted(set(a["component"] for s in j["steps"] for a in s["anomalies"] if a["kind"] == "collision")))')
	is "$got" "$inc" "job $j's report lists the collision on $inc"
done
diag "$(psql_ctl "select summary from fabriciq.anomalies where kind = 'collision' order by id limit 1")"
diag "advice: $(grep -c . <<<"$adv") line(s), e.g. $(head -1 <<<"$adv" | sed 's/.*controller advice: //')"
for f in "$S"/trace.*; do diag "${f##*/}: $(grep -o ' move by=[a-z]*' "$f" | sort | uniq -c | tr -s ' ' | paste -sd,)"; done
done_testing
