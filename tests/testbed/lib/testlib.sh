# Shared by the testbed's integration tests (sourced after tests/lib/tap.sh).
# Each test gets its own state directory and namespace prefix, and tears
# the testbed down on any exit.

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
TB="$top_srcdir/tests/testbed/fabriciq-testbed"
export FQTB_HELPERS="$top_builddir/tests/testbed"

tb_require() {
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (network, UTS and time namespaces)"
	ip netns add "fqtbprobe$$" 2>/dev/null || skip_all "cannot create network namespaces here"
	ip netns del "fqtbprobe$$"
	unshare --time true 2>/dev/null || skip_all "kernel without time namespaces (CONFIG_TIME_NS)"
	[ -x "$FQTB_HELPERS/tb-hostns" ] || skip_all "tests/testbed helpers not built"
}

# tb_setup PREFIX: private state dir + prefix, torn down on exit.
# $FQTB_TAG (a few lowercase letters/digits) is appended to the prefix, so
# two checkouts can run the same test at once; the prefix is cut to leave
# room for it (the testbed takes 8 characters).
tb_setup() {
	local tag=${FQTB_TAG:-}
	TB_PFX=${1:0:$((8 - ${#tag}))}$tag
	export FQTB_STATE="${TMPDIR:-/tmp}/fqtb-$TB_PFX-$$"
	trap 'tb_teardown' EXIT
	trap 'exit 130' INT TERM
}

# With $FQTB_KEEP set, a test that fails leaves its state's text (the
# jobs' output, the daemons' logs, the agents' status) in $FQTB_KEEP/PREFIX-PID.
tb_teardown() {
	local rc=$?
	if { [ $rc -ne 0 ] || [ "${_tap_fail:-0}" -ne 0 ]; } && [ -n "${FQTB_KEEP:-}" ] && [ -d "$FQTB_STATE" ]; then
		mkdir -p "$FQTB_KEEP/${FQTB_STATE##*/fqtb-}" &&
			(cd "$FQTB_STATE" && find . -maxdepth 2 -type f \( -name '*.out' -o -name '*.log' -o -name '*.json' -o -name '*.rows' \) \
				-size -64M -exec cp --parents {} "$FQTB_KEEP/${FQTB_STATE##*/fqtb-}/" \;)
	fi
	"$TB" down >/dev/null 2>&1
	exit $rc
}

tb() { "$TB" "$@"; }

# The testbed's own fabric helpers (function definitions only), for what a
# test must do faster than a `tb` run: tbf_set NS DEV RATE BURST LATENCY.
. "$top_srcdir/tests/testbed/lib/net.sh"

# psql_ctl SQL: one query to the testbed's PostgreSQL (in ctl), unaligned.
psql_ctl() { "$TB" exec ctl psql -h 198.18.0.1 -U postgres -d fabriciq -tAX -c "$1"; }

# tb_controller_start CONTROLLER [ARG...]: fabriciq-controller in ctl on the
# testbed's PostgreSQL and munge, agents' port 198.18.0.1:7100, HTTP
# 198.18.0.1:7180, spool in $FQTB_STATE/spool/ctl; ARGs (-s key=value) are
# added. Returns once it runs (pid recorded).
tb_controller_start() {
	local ctl=$1
	shift
	mkdir -p "$FQTB_STATE/spool"
	"$TB" daemon start ctl controller -- "$ctl" -c /dev/null -s listen=198.18.0.1:7100 \
		-s http_listen=198.18.0.1:7180 -s "db=host=198.18.0.1 port=5432 user=postgres dbname=fabriciq" \
		-s "munge_socket=$FQTB_STATE/munge/munge.socket" -s "spool_dir=$FQTB_STATE/spool/ctl" "$@" >/dev/null
}

# tb_agents_start AGENT [ARG...]: fabriciq-agent on every host, probing
# every other host on every rail (static peers), status in
# $FQTB_STATE/agent-HOST.json, sockets and pages in $FQTB_STATE/run/HOST,
# spool in $FQTB_STATE/spool/HOST; ARGs (e.g. -s controller=...) are added.
tb_agents_start() {
	local agent=$1 hosts i
	shift
	hosts=$(awk -F= '$1 == "TB_HOSTS" { print $2 }' "$FQTB_STATE/topology.env")
	for ((i = 1; i <= hosts; i++)); do
		tb_agent_start "n$i" "$agent" "$@" || return 1
	done
}

# tb_agent_start HOST AGENT [ARG...]: the same for one host (a restart).
tb_agent_start() {
	local host=$1 agent=$2 hosts rails j r peers
	shift 2
	hosts=$(awk -F= '$1 == "TB_HOSTS" { print $2 }' "$FQTB_STATE/topology.env")
	rails=$(awk -F= '$1 == "TB_RAILS" { print $2 }' "$FQTB_STATE/topology.env")
	peers=
	for ((j = 1; j <= hosts; j++)); do
		[ "n$j" = "$host" ] && continue
		for ((r = 0; r < rails; r++)); do peers+=",n$j:rail$r@198.19.$r.$((2 * j + 1))"; done
	done
	mkdir -p "$FQTB_STATE/run/$host"
	"$TB" daemon start "$host" agent -- "$agent" -c /dev/null -s "nics=$(seq -s, -f 'rail%g' 0 $((rails - 1)))" \
		-s "peers=${peers#,}" -s "status_file=$FQTB_STATE/agent-$host.json" -s "node=$host" \
		-s "run_dir=$FQTB_STATE/run/$host" -s "spool_dir=$FQTB_STATE/spool/$host" "$@" >/dev/null
}

# tb_clocks_published [SECONDS]: wait (default 20 s) until every agent's
# status file says its clock page is published with the controller's
# correction applied (the lanes' one-way delays are measured only on the
# global timeline, from a job's first chunk if it starts after this).
# Fails, naming the agents that are not, after the wait.
tb_clocks_published() {
	local limit=$((${1:-20} * 2)) i left
	for ((i = 0; i < limit; i++)); do
		left=$(python3 -c 'import json, os, sys
for f in sys.argv[1:]:
    try:
        g = json.load(open(f))["global_time"]
        ready = g["published"] and g.get("correction_epoch", 0) > 0
    except (OSError, ValueError, KeyError):
        ready = False
    if not ready:
        print(os.path.basename(f), end=" ")' "$FQTB_STATE"/agent-*.json)
		[ -z "$left" ] && return 0
		sleep 0.5
	done
	diag "clock page not published: $left"
	return 1
}

# tb_agents_ready [SECONDS]: wait (default 60 s) until the controller has
# stored probe windows from every host and every agent's clock page is
# published with the controller's correction (tb_clocks_published). Says
# how long it took; on failure says which hosts are missing, each agent's
# clock state and the controller's last lines.
tb_agents_ready() {
	local limit=$((${1:-60} * 2)) hosts i have t0=$SECONDS rc=1
	hosts=$(awk -F= '$1 == "TB_HOSTS" { print $2 }' "$FQTB_STATE/topology.env")
	for ((i = 0; i < limit; i++)); do
		have=$(psql_ctl "select count(distinct src_node) from fabriciq.probe_windows" 2>/dev/null)
		[ "$have" = "$hosts" ] && break
		sleep 0.5
	done
	if [ "$have" != "$hosts" ]; then
		diag "probe windows stored from ${have:-?} of $hosts hosts after $((SECONDS - t0)) s:" \
			"$(psql_ctl "select string_agg(distinct src_node, ' ') from fabriciq.probe_windows" 2>&1)"
	elif tb_clocks_published $((${1:-60} - (SECONDS - t0) > 10 ? ${1:-60} - (SECONDS - t0) : 10)); then
		diag "agents ready in $((SECONDS - t0)) s: probe windows from $hosts hosts, clock pages published"
		return 0
	fi
	for f in "$FQTB_STATE"/agent-*.json; do
		diag "${f##*/}: $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("global_time"))' "$f" 2>&1)"
	done
	diag "controller: $(tail -n 15 "$FQTB_STATE"/log/ctl.controller.log 2>&1)"
	return $rc
}

# tb_delays_ready [SECONDS]: waits (60 s unless told) until every host has
# stored a probe window with one-way delays both ways: a path's delays come a
# few windows after its first answers, once its pairwise offset is
# estimated. Says how long it took, or what it had when it gave up.
tb_delays_ready() {
	local limit=${1:-60} hosts have t0=$SECONDS
	hosts=$(awk -F= '$1 == "TB_HOSTS" { print $2 }' "$FQTB_STATE/topology.env")
	while :; do
		have=$(psql_ctl "select count(distinct src_node) from fabriciq.probe_windows
			where owd_fwd_p50_ns is not null and owd_rev_p50_ns is not null" 2>/dev/null)
		[ "$have" = "$hosts" ] && break
		[ $((SECONDS - t0)) -ge "$limit" ] && break
		sleep 0.5
	done
	if [ "$have" = "$hosts" ]; then
		diag "one-way delays from all $hosts hosts in $((SECONDS - t0)) s"
		return 0
	fi
	diag "one-way delays from ${have:-?} of $hosts hosts after $((SECONDS - t0)) s; the last windows:" \
		"$(psql_ctl "select window_start::time, src_node, dst_node, answered, owd_fwd_p50_ns, owd_rev_p50_ns
			from fabriciq.probe_windows order by window_start desc limit 6" 2>&1)"
	# what each agent's prober has: the probe pairs that passed its filter
	# each way (its clock fit's samples), whether it has an estimate
	diag "the agents' paths (sent answered pure_fwd pure_rev synchronised rtt_p50):" \
		"$(for f in "$FQTB_STATE"/agent-*.json; do python3 -c 'import json, sys
for p in json.load(open(sys.argv[1])).get("paths", []):
	print(sys.argv[2], p["local_nic"], "->", p["peer_node"], p["peer_nic"], p["sent"], p["answered"], p["pure_fwd"],
		p["pure_rev"], p["synchronised"], p.get("rtt_ns", {}).get("p50"))' "$f" "${f##*/agent-}" 2>&1; done)"
	return 1
}

# tb_offsets_match TOLERANCE_NS: every host's MONOTONIC_RAW differs from the
# machine's by its `truth` offset within the tolerance (read by setns, not
# by starting a process). Prints a diag line per host that does not.
tb_offsets_match() {
	local tol=$1 bad=0 host off diff unc err
	while read -r host off; do
		read -r diff unc <<<"$("$FQTB_HELPERS/tb-hostns" clockdiff "$(cat "$FQTB_STATE/nodes/$host.pid")")"
		err=$((diff - off))
		[ "${err#-}" -le "$tol" ] || { bad=1; diag "$host: truth $off ns, measured $diff ns (+-$unc)"; }
	done < <(tb truth)
	return $bad
}
