#!/usr/bin/env bash
# Topology from the probe mesh: 5 hosts x 2 rails on 3 leaves and 2 spines
# (hosts spread unevenly: 2, 2 and 1 per leaf). Every agent traces every
# path it probes hop by hop with the probes' own 5-tuple; the controller
# stores each path's route (fabriciq.path_routes) and infers the fabric
# from them (`fabriciq topology`). Checked against the testbed's wiring:
# each route is the leaf, the spine the source leaf's ECMP hash picks for
# that 5-tuple (asked of the leaf's own routing table), and the far leaf,
# each named by the interface the probe came in on.
. "$(dirname "$0")/scenario.sh"
sc_require topo
plan 5

HOSTS=5 RAILS=2 LEAVES=3 SPINES=2
sc_agent_args+=(-s trace_interval=5s) # re-traced often: the route change below is seen in seconds
sc_up $HOSTS $RAILS $LEAVES $SPINES
ok $? "up: $HOSTS hosts x $RAILS rails, $LEAVES leaves, $SPINES spines; controller and agents reporting"

# The probed paths, and when every one of them has a route stored.
paths_sql="select count(distinct (src_node, src_nic, dst_node, dst_nic)) from fabriciq.probe_windows
	where window_end > now() - interval '5 seconds'"
routes_sql="select count(*) from fabriciq.path_routes_current r where exists (select 1 from fabriciq.probe_windows w
	where w.src_node = r.node and w.src_nic = r.nic and w.dst_node = r.remote_node and w.dst_nic = r.remote_nic)"
t0=$(date +%s%N)
while [ $(($(date +%s%N) - t0)) -lt 60000000000 ]; do
	paths=$(psql_ctl "$paths_sql")
	routes=$(psql_ctl "$routes_sql")
	[ "${paths:-0}" -gt 0 ] && [ "$routes" = "$paths" ] && break
	sleep 0.2
done
want=$((HOSTS * (HOSTS - 1) * RAILS))
is "$routes/$paths" "$want/$want" \
	"every probed path's route is stored ($(((($(date +%s%N) - t0) / 1000000))) ms after the agents were ready)"

# host_leaf I -> leaf (as the testbed spreads hosts); the truth of one path.
leaf_of() { echo $((($1 - 1) * LEAVES / HOSTS + 1)); }
expect_route() { # SRC_I DST_I RAIL -> "{hop,hop,...}" as PostgreSQL prints an inet[]
	local i=$1 j=$2 r=$3 li lj sp s
	li=$(leaf_of "$i") lj=$(leaf_of "$j")
	if [ "$li" = "$lj" ]; then
		echo "{198.19.$r.$((2 * i))}"
		return
	fi
	sp=$(sc_probe_spine "n$i" "rail$r" "n$j" "rail$r")
	s=${sp#spine}
	echo "{198.19.$r.$((2 * i)),198.18.$((100 + li)).$((2 * s - 1)),198.18.$((100 + lj)).$((2 * s - 2))}"
}
psql_ctl "select node, nic, remote_node, remote_nic, hops, reached from fabriciq.path_routes_current
	order by 1, 2, 3, 4" | tr '|' ' ' >"$S/routes"
n=$(wc -l <"$S/routes")
wrong=$([ "$n" = "$want" ] || echo "$n routes, $want paths"
while read -r node nic rnode rnic hops reached; do
	want=$(expect_route "${node#n}" "${rnode#n}" "${nic#rail}")
	[ "$nic" = "$rnic" ] && [ "$hops" = "$want" ] && [ "$reached" = t ] ||
		echo "$node/$nic -> $rnode/$rnic: $hops reached=$reached, expected $want"
done <"$S/routes")
is "$wrong" "" "every route is the testbed's: leaf, the spine its ECMP hash picks, far leaf ($n routes)"
diag "spines crossed: $(awk '{ print $5 }' "$S/routes" | grep -o '198\.18\.[0-9]*\.[0-9]*' | sort | uniq -c | xargs)"

# No route changes on a fabric that did not change, and one when it does:
# a leaf-spine link down re-routes every path that crossed it.
is "$(psql_ctl "select count(*) from fabriciq.route_changes")" 0 "no route change while nothing changed"
# the first leaf-spine link a route crosses from its leaf (198.18.(100+L).(2S-1): spine S's side)
addr=$(grep -o '198\.18\.[0-9]*\.[0-9]*[13579]\b' "$S/routes" | head -1)
L=$(($(cut -d. -f3 <<<"$addr") - 100)) SP=$((($(cut -d. -f4 <<<"$addr") + 1) / 2))
peer=${addr%.*}.$((${addr##*.} - 1)) # leaf L's side: the paths into leaf L over spine SP
moved=$(grep -cE "(${addr//./\\.}|${peer//./\\.})[,}]" "$S/routes")
tb link down "leaf$L-spine$SP"
sleep 15
psql_ctl "select node, nic, remote_node, remote_nic from fabriciq.route_changes" >"$S/changes"
tb link up "leaf$L-spine$SP"
is "$(wc -l <"$S/changes")/$(psql_ctl "select count(*) from fabriciq.path_routes_current where '$addr'::inet = any(hops) or '$peer'::inet = any(hops)")" \
	"$moved/0" "leaf$L-spine$SP down: the $moved paths that crossed it changed route, none crosses it now" ||
	diag "$(cat "$S/changes")"
