#!/usr/bin/env bash
# Topology from the probe mesh: 5 hosts x 2 rails on 3 leaves and 2 spines
# (hosts spread unevenly: 2, 2 and 1 per leaf). Every agent traces every
# path it probes hop by hop with the probes' own 5-tuple; the controller
# stores each path's route (fabriciq.path_routes) and infers the fabric
# from them (`fabriciq topology`). Checked against the testbed's wiring:
# each route is the leaf, the spine the source leaf's ECMP hash picks for
# that 5-tuple (asked of the leaf's own routing table), and the far leaf,
# each named by the interface the probe came in on. The cross-check by
# delay groups each leaf's NICs by their probes' delay floors.
. "$(dirname "$0")/scenario.sh"
sc_require topo
plan 10

# Other sizes: FQ_TOPO="HOSTS RAILS LEAVES SPINES" (e.g. "8 2 4 4").
read -r HOSTS RAILS LEAVES SPINES <<<"${FQ_TOPO:-5 2 3 2}"
sc_agent_args+=(-s trace_interval=5s) # re-traced often: the route change below is seen in seconds
sc_up $HOSTS $RAILS $LEAVES $SPINES -s "topology_file=$S/topology.conf"
ok $? "up: $HOSTS hosts x $RAILS rails, $LEAVES leaves, $SPINES spines; controller and agents reporting"
# The site's expected topology, as the testbed is wired (sc_topology_file).
sc_topology_file >"$S/topology.conf"

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
# routes_wrong FILE: the stored routes (into FILE) that are not the testbed's now.
routes_wrong() {
	local n node nic rnode rnic hops reached want_r
	psql_ctl "select node, nic, remote_node, remote_nic, hops, reached from fabriciq.path_routes_current
		order by 1, 2, 3, 4" | tr '|' ' ' >"$1"
	n=$(wc -l <"$1")
	[ "$n" = "$want" ] || echo "$n routes, $want paths"
	while read -r node nic rnode rnic hops reached; do
		want_r=$(expect_route "${node#n}" "${rnode#n}" "${nic#rail}")
		[ "$nic" = "$rnic" ] && [ "$hops" = "$want_r" ] && [ "$reached" = t ] ||
			echo "$node/$nic -> $rnode/$rnic: $hops reached=$reached, expected $want_r"
	done <"$1"
}
wrong=$(routes_wrong "$S/routes")
n=$(wc -l <"$S/routes")
is "$wrong" "" "every route is the testbed's: leaf, the spine its ECMP hash picks, far leaf ($n routes)"
diag "spines crossed: $(awk '{ print $5 }' "$S/routes" | grep -o '198\.18\.[0-9]*\.[0-9]*' | sort | uniq -c | xargs)"

# The fabric inferred from the routes, as the operator reads it, once
# every flow of every path is traced (the database keeps each path's
# first flow's route; the topology is built from all of them).
t0=$(date +%s%N)
while [ $(($(date +%s%N) - t0)) -lt 30000000000 ]; do
	fq --json topology >"$S/topology.json"
	[ "$(json 'j.get("flow_paths", 0)' <"$S/topology.json")" = $((want * (SC_PROBE_FLOWS - 1))) ] && break
	sleep 0.5
done
diag "$(fq topology | head -12)"
diag "routes of flows beyond each path's first: $(json 'j.get("flow_paths")' <"$S/topology.json") of $((want * (SC_PROBE_FLOWS - 1))) ($((($(date +%s%N) - t0) / 1000000)) ms)"
diag "probe paths per leaf-spine link: $(json '" ".join(l["a"] + "~" + l["b"] + ":" + str(l.get("probe_paths")) for l in j["links"])' <"$S/topology.json")"
# the leaf-spine links some flow of some path crosses, by the testbed's ECMP
crossed=$(for ((i = 1; i <= HOSTS; i++)); do
	for ((j = 1; j <= HOSTS; j++)); do
		li=$(leaf_of $i) lj=$(leaf_of $j)
		[ $i = $j ] || [ "$li" = "$lj" ] && continue
		for ((r = 0; r < RAILS; r++)); do
			for ((f = 0; f < SC_PROBE_FLOWS; f++)); do
				sp=$(sc_probe_spine "n$i" "rail$r" "n$j" "rail$r" $f)
				echo "leaf$li~$sp"
				echo "leaf$lj~$sp"
			done
		done
	done
done | sort -u)
got=$(python3 - "$S/topology.json" "$HOSTS" "$RAILS" "$LEAVES" "$SPINES" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
hosts, rails, leaves, spines = map(int, sys.argv[2:])
out = []
sw = {s["name"]: s for s in j["switches"]}
want = {f"leaf{l}": ("leaf", 1) for l in range(1, leaves + 1)}
want.update({f"spine{s}": ("spine", 2) for s in range(1, spines + 1)})
for n, (role, tier) in want.items():
    if n not in sw or sw[n]["role"] != role or sw[n]["tier"] != tier:
        out.append(f"switch {n}: {sw.get(n)}")
for n in sw:
    if n not in want:
        out.append(f"unexpected switch {n}")
hl = {(h["node"], h["nic"]): h["switch"] for h in j["host_links"]}
for i in range(1, hosts + 1):
    for r in range(rails):
        leaf = f"leaf{(i - 1) * leaves // hosts + 1}"
        if hl.get((f"n{i}", f"rail{r}")) != leaf:
            out.append(f"n{i}/rail{r} on {hl.get((f'n{i}', f'rail{r}'))}, not {leaf}")
if len(hl) != hosts * rails:
    out.append(f"{len(hl)} host links")
print("\n".join(out))
for l in sorted(f"{x['a']}~{x['b']}" for x in j["links"]):
    print("link", l)
for d in j["differences"]:
    print("diff", d["kind"], d["text"])
EOF
)
is "$(grep -v '^link \|^diff ' <<<"$got")" "" \
	"topology: $LEAVES leaves (tier 1) and $SPINES spines (tier 2) named from the expected file, every NIC on its leaf"
is "$(sed -n 's/^link //p' <<<"$got" | xargs)" "$(echo $crossed)" \
	"topology: exactly the leaf-spine links the routes cross ($(wc -w <<<"$crossed") of $((LEAVES * SPINES)))"
is "$(grep '^diff ' <<<"$got" | grep -vc '^diff link_not_seen')/$(grep -c '^diff link_not_seen' <<<"$got")" \
	"0/$((LEAVES * SPINES - $(wc -w <<<"$crossed")))" \
	"differences from the expected topology: none but the links no probe crosses" || diag "$(grep '^diff ' <<<"$got")"

# The cross-check by delay: the NICs nearest each other by their probes'
# delay floors are each leaf's on one rail (a hop through a leaf-spine-leaf
# path costs more than through one leaf), and no NIC's nearest by delay
# differ from its nearest by route. The floors need 5 windows a path.
delay_groups() {
	fq --json topology | python3 -c '
import json, sys
j = json.load(sys.stdin)
for g in j["delay_groups"]:
    print(" ".join(g["nics"]) + " @" + ",".join(g["switches"]))
for d in j["differences"]:
    if d["kind"] == "delay_disagrees":
        print("diff " + d["text"])
print("unresolved", j["delay_unresolved"])'
}
want_groups=$(for ((l = 1; l <= LEAVES; l++)); do
	for ((r = 0; r < RAILS; r++)); do
		on=$(for ((i = 1; i <= HOSTS; i++)); do [ "$(leaf_of $i)" = $l ] && echo "n$i/rail$r"; done | sort | xargs)
		[ "$(wc -w <<<"$on")" -ge 2 ] && echo "$on @leaf$l"
	done
done | sort)
t0=$(date +%s%N)
while [ $(($(date +%s%N) - t0)) -lt 30000000000 ]; do
	got=$(delay_groups)
	[ "$(grep -v '^unresolved' <<<"$got" | sort)" = "$want_groups" ] && break
	sleep 1
done
is "$(grep -v '^unresolved' <<<"$got" | sort)" "$want_groups" \
	"delay groups: each leaf's NICs of one rail nearest each other, no NIC's nearest by delay other than by route ($((($(date +%s%N) - t0) / 1000000)) ms; $(grep '^unresolved' <<<"$got"))"
diag "$(fq topology | sed -n '/NEAREST EACH OTHER BY DELAY/,/^$/p')"

# No route changes on a fabric that did not change; when a leaf-spine link
# goes down, every path that crossed it changes route (and others too:
# dropping a next hop re-hashes a leaf's flows over the spines left), and
# the routes are again the testbed's, none over that link.
is "$(psql_ctl "select count(*) from fabriciq.route_changes")" 0 "no route change while nothing changed"
# the first leaf-spine link a route crosses from its leaf (198.18.(100+L).(2S-1): spine S's side)
addr=$(grep -o '198\.18\.[0-9]*\.[0-9]*[13579]\b' "$S/routes" | head -1)
L=$(($(cut -d. -f3 <<<"$addr") - 100)) SP=$((($(cut -d. -f4 <<<"$addr") + 1) / 2))
peer=${addr%.*}.$((${addr##*.} - 1)) # leaf L's side: the paths into leaf L over spine SP
grep -E "(${addr//./\\.}|${peer//./\\.})[,}]" "$S/routes" | awk '{ print $1 "|" $2 "|" $3 "|" $4 }' | sort >"$S/crossing"
crossing_sql="select count(*) from fabriciq.path_routes_current where '$addr'::inet = any(hops) or '$peer'::inet = any(hops)"
tb link down "leaf$L-spine$SP"
t0=$(date +%s%N)
while [ $(($(date +%s%N) - t0)) -lt 45000000000 ] && [ "$(psql_ctl "$crossing_sql")" != 0 ]; do sleep 0.5; done
took=$((($(date +%s%N) - t0) / 1000000))
sleep 6 # one more trace interval: the re-hashed paths' new routes
wrong=$(routes_wrong "$S/routes-after")
psql_ctl "select distinct node, nic, remote_node, remote_nic from fabriciq.route_changes" | sort >"$S/changes"
crossing_after=$(psql_ctl "$crossing_sql") # before the link is back: a trace then may cross it again
tb link up "leaf$L-spine$SP"
is "$(comm -23 "$S/crossing" "$S/changes" | wc -l)/$crossing_after/$wrong" "0/0/" \
	"leaf$L-spine$SP down: the $(wc -l <"$S/crossing") paths that crossed it changed route (none crosses it $took ms after), $(wc -l <"$S/changes") changed in all, every route the testbed's" ||
	diag "not changed: $(comm -23 "$S/crossing" "$S/changes" | xargs)"

# The site's file declares n1's rail0 on another leaf (a cable moved, or
# the file wrong): that difference is an anomaly (topology_mismatch) while
# the file says so, and closes once the file is right again.
leaf1=leaf$(leaf_of 1) other=leaf$(($(leaf_of 1) % LEAVES + 1))
sed -i "s/^host n1 rail0 $leaf1\$/host n1 rail0 $other/" "$S/topology.conf"
mismatch_sql="select count(*) from fabriciq.anomalies where kind = 'topology_mismatch' and end_time is null
	and summary like '%n1/rail0%'"
t0=$(date +%s%N)
while [ $(($(date +%s%N) - t0)) -lt 20000000000 ] && [ "$(psql_ctl "$mismatch_sql")" = 0 ]; do sleep 0.5; done
opened=$(psql_ctl "$mismatch_sql") took=$((($(date +%s%N) - t0) / 1000000))
diag "$(psql_ctl "select summary from fabriciq.anomalies where kind = 'topology_mismatch'")"
sc_topology_file >"$S/topology.conf"
t0=$(date +%s%N)
while [ $(($(date +%s%N) - t0)) -lt 20000000000 ] && [ "$(psql_ctl "$mismatch_sql")" != 0 ]; do sleep 0.5; done
is "$opened/$(psql_ctl "$mismatch_sql")/$(psql_ctl "select count(*) from fabriciq.anomalies where kind = 'topology_mismatch'
	and summary like '%n1/rail0%'")" \
	"1/0/1" "n1/rail0 declared on $other: one topology_mismatch anomaly ($took ms after the file changed), closed once the file is right"
