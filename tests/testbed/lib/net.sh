# fabriciq-testbed: namespaces, the management network and the leaf-spine
# fabric (sourced). Addressing, all inside 198.18.0.0/15:
#   management   198.18.0.0/24     ctl 198.18.0.1, host i 198.18.0.(10+i)
#   leaf-spine   198.18.(100+l).(2s-2)/31  leaf side even, spine side odd
#   host rail r  198.19.r.(2i)/31  leaf side 198.19.r.(2i), host 198.19.r.(2i+1)
# Routing: a host reaches rail r of every other host through its own rail r
# NIC; a leaf reaches each remote host /31 over every spine whose links to
# both leaves are up (ECMP, L4 hash), recomputed when a fabric link changes
# as a routing protocol would; a spine reaches each host /31 through that
# host's leaf. No default route anywhere.

ns_of() { # ns_of NODE -> namespace name (ctl, nI, leafL, spineS)
	echo "${TB_PREFIX}-$1"
}

host_leaf() { echo $((($1 - 1) * TB_LEAVES / TB_HOSTS + 1)); }
host_ip() { echo "198.19.$2.$((2 * $1 + 1))"; }     # host_ip I RAIL
host_leaf_ip() { echo "198.19.$2.$((2 * $1))"; }    # leaf side of that link
mgmt_ip() { echo "198.18.0.$((10 + $1))"; }
ls_leaf_ip() { echo "198.18.$((100 + $1)).$((2 * $2 - 2))"; }  # L S
ls_spine_ip() { echo "198.18.$((100 + $1)).$((2 * $2 - 1))"; } # L S

# Router and host sysctls. Routers forward and hash the 5-tuple for ECMP,
# as a switch does, so different source ports take different spines:
# policy 3 with fields 0x37 (addresses, protocol, ports). Policy 1 would
# reuse the hash a local sender's socket put on the packet (random per
# socket, re-drawn by TCP after a timeout), so neither `ip route get` nor a
# port would tell a flow's spine; kernels without policy 3 (before 5.12)
# get 1. Strict reverse-path filtering would drop asymmetric ECMP returns.
# Routers answer a TTL that ends with time-exceeded from the interface the
# packet came in on, as the agents' path traces expect of switches, and
# without Linux's per-destination limit of one a second (a switch's
# control-plane policer allows far more than the traces' few per second).
ns_sysctls() {
	local ns=$1 kind=$2
	ip netns exec "$ns" sh -c '
		sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
		sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
		if [ "$1" = router ]; then
			sysctl -qw net.ipv4.ip_forward=1
			sysctl -qw net.ipv4.fib_multipath_hash_policy=3 net.ipv4.fib_multipath_hash_fields=0x0037 2>/dev/null ||
				sysctl -qw net.ipv4.fib_multipath_hash_policy=1
			sysctl -qw net.ipv4.conf.all.ignore_routes_with_linkdown=1
			sysctl -qw net.ipv4.icmp_errors_use_inbound_ifaddr=1 net.ipv4.icmp_ratelimit=0
		fi' sh "$kind"
}

netns_create() { # netns_create NAME KIND
	echo "$1" >>"$TB_STATE/netns"
	ip netns add "$1" || return 1
	ip -n "$1" link set lo up
	ns_sysctls "$1" "$2"
}

# A host (or ctl) = named netns + a holder process owning its UTS, time and
# mount namespaces (the mount namespace carries that netns's /sys).
node_start() { # node_start NODE OFFSET_NS
	local node=$1 ns pid
	ns=$(ns_of "$node")
	netns_create "$ns" host || return 1
	pid=$(ip netns exec "$ns" "$TB_HELPERS/tb-hostns" hold "$node" "$2") || return 1
	echo "$pid" >"$TB_STATE/nodes/$node.pid"
	echo "$2" >"$TB_STATE/nodes/$node.offset"
}

node_pid() { cat "$TB_STATE/nodes/$1.pid" 2>/dev/null; }

# veth_link NAME NS_A IF_A NS_B IF_B: one cable, recorded by name so that
# `link` and `shape` can find its two ends.
veth_link() {
	echo "$1 $2 $3 $4 $5" >>"$TB_STATE/links"
	ip link add "$3" netns "$2" type veth peer name "$5" netns "$4" || return 1
	ip -n "$2" link set "$3" up && ip -n "$4" link set "$5" up
}

link_lookup() { # link_lookup NAME -> "NS_A IF_A NS_B IF_B"
	local name rest
	while read -r name rest; do
		[ "$name" = "$1" ] && { echo "$rest"; return 0; }
	done <"$TB_STATE/links"
	return 1
}

leaf_up_spines() { # leaf_up_spines L -> spines whose link to leaf L is up
	local s
	for ((s = 1; s <= TB_SPINES; s++)); do
		ip -n "$(ns_of "leaf$1")" -br link show "s$s" 2>/dev/null | grep -q ' UP ' && printf '%d ' "$s"
	done
}

# Static routes of one namespace, all with `replace`: called at `up` and
# again after any link comes back (an admin-down device loses its routes).
routes_apply() {
	local node=$1 ns i r l s nh
	ns=$(ns_of "$node")
	case $node in
	n*)
		i=${node#n}
		for ((r = 0; r < TB_RAILS; r++)); do
			ip -n "$ns" route replace "198.19.$r.0/24" via "$(host_leaf_ip "$i" "$r")" dev "rail$r" \
				src "$(host_ip "$i" "$r")" 2>/dev/null
		done
		;;
	leaf*)
		# What a routing protocol would converge to: the hosts of leaf m are
		# reached over the spines whose links to both leaves are up.
		l=${node#leaf}
		local m up_l up_m
		up_l=$(leaf_up_spines "$l")
		for ((m = 1; m <= TB_LEAVES; m++)); do
			[ "$m" -eq "$l" ] && continue
			up_m=$(leaf_up_spines "$m")
			nh=""
			for s in $up_l; do
				[[ " $up_m " == *" $s "* ]] && nh+=" nexthop via $(ls_spine_ip "$l" "$s") dev s$s"
			done
			for ((i = 1; i <= TB_HOSTS; i++)); do
				[ "$(host_leaf "$i")" -eq "$m" ] || continue
				for ((r = 0; r < TB_RAILS; r++)); do
					if [ -n "$nh" ]; then
						echo "route replace 198.19.$r.$((2 * i))/31$nh"
					else
						echo "route del 198.19.$r.$((2 * i))/31"
					fi
				done
			done
		done | ip -n "$ns" -force -batch - 2>/dev/null
		;;
	spine*)
		s=${node#spine}
		for ((i = 1; i <= TB_HOSTS; i++)); do
			l=$(host_leaf "$i")
			for ((r = 0; r < TB_RAILS; r++)); do
				echo "route replace 198.19.$r.$((2 * i))/31 via $(ls_leaf_ip "$l" "$s") dev l$l"
			done
		done | ip -n "$ns" -force -batch - 2>/dev/null
		;;
	esac
	return 0
}

net_up() {
	local i r l s ns
	: >"$TB_STATE/links"
	mkdir -p "$TB_STATE/nodes"

	# management: ctl holds the bridge; slurmctld, PostgreSQL, munged live there
	node_start ctl 0 || return 1
	ns=$(ns_of ctl)
	ip -n "$ns" link add br0 type bridge && ip -n "$ns" link set br0 up &&
		ip -n "$ns" addr add 198.18.0.1/24 dev br0 || return 1

	for ((s = 1; s <= TB_SPINES; s++)); do netns_create "$(ns_of "spine$s")" router || return 1; done
	for ((l = 1; l <= TB_LEAVES; l++)); do
		netns_create "$(ns_of "leaf$l")" router || return 1
		for ((s = 1; s <= TB_SPINES; s++)); do
			veth_link "leaf$l-spine$s" "$(ns_of "leaf$l")" "s$s" "$(ns_of "spine$s")" "l$l" || return 1
			ip -n "$(ns_of "leaf$l")" addr add "$(ls_leaf_ip "$l" "$s")/31" dev "s$s"
			ip -n "$(ns_of "spine$s")" addr add "$(ls_spine_ip "$l" "$s")/31" dev "l$l"
		done
	done

	for ((i = 1; i <= TB_HOSTS; i++)); do
		node_start "n$i" "$(offset_of "n$i")" || return 1
		ns=$(ns_of "n$i")
		veth_link "n$i-eth0" "$ns" eth0 "$(ns_of ctl)" "n$i" || return 1
		ip -n "$(ns_of ctl)" link set "n$i" master br0
		ip -n "$ns" addr add "$(mgmt_ip "$i")/24" dev eth0
		l=$(host_leaf "$i")
		for ((r = 0; r < TB_RAILS; r++)); do
			veth_link "n$i-rail$r" "$ns" "rail$r" "$(ns_of "leaf$l")" "n${i}r$r" || return 1
			ip -n "$ns" addr add "$(host_ip "$i" "$r")/31" dev "rail$r"
			ip -n "$(ns_of "leaf$l")" addr add "$(host_leaf_ip "$i" "$r")/31" dev "n${i}r$r"
		done
	done

	for ((i = 1; i <= TB_HOSTS; i++)); do routes_apply "n$i"; done
	for ((l = 1; l <= TB_LEAVES; l++)); do routes_apply "leaf$l"; done
	for ((s = 1; s <= TB_SPINES; s++)); do routes_apply "spine$s"; done

	[ -n "$TB_HOST_RATE" ] && for ((i = 1; i <= TB_HOSTS; i++)); do
		for ((r = 0; r < TB_RAILS; r++)); do link_shape "n$i-rail$r" "$TB_HOST_RATE" || return 1; done
	done
	[ -n "$TB_SPINE_RATE" ] && for ((l = 1; l <= TB_LEAVES; l++)); do
		for ((s = 1; s <= TB_SPINES; s++)); do link_shape "leaf$l-spine$s" "$TB_SPINE_RATE" || return 1; done
	done
	return 0
}

# Pins: TCP flows sent over a chosen spine, as if the fabric's L4 hash had
# put them there. Each leaf gets, per spine S, table 100+S: every host
# under another leaf over S. A pin is a policy rule on the flow's source
# leaf (from, to, ipproto tcp, sport, dport) into its spine's table; what
# matches no rule (a lane re-opened on a new source port) takes the main
# table's ECMP hash. Pins are recorded ("LEAF SRC SPORT DST DPORT SPINE")
# in $TB_STATE/pins for pin_clear.
pin_tables() {
	local l s i r
	for ((l = 1; l <= TB_LEAVES; l++)); do
		for ((s = 1; s <= TB_SPINES; s++)); do
			for ((i = 1; i <= TB_HOSTS; i++)); do
				[ "$(host_leaf "$i")" -eq "$l" ] && continue
				for ((r = 0; r < TB_RAILS; r++)); do
					echo "route replace 198.19.$r.$((2 * i))/31 via $(ls_spine_ip "$l" "$s") dev s$s table $((100 + s))"
				done
			done
		done | ip -n "$(ns_of "leaf$l")" -batch - || return 1
	done
}

# The host index of a rail address 198.19.R.(2I+1); empty if it is none.
host_of_ip() {
	local a b c d
	IFS=. read -r a b c d <<<"$1"
	[ "$a.$b" = 198.19 ] && is_uint "$c" && [ "$c" -lt "$TB_RAILS" ] && is_uint "$d" && [ $((d % 2)) -eq 1 ] &&
		[ $(((d - 1) / 2)) -ge 1 ] && [ $(((d - 1) / 2)) -le "$TB_HOSTS" ] && echo $(((d - 1) / 2))
}

# Pin the flows on stdin ("SRC SPORT DST DPORT SPINE"): rules added in one
# batch per leaf, then each checked with `ip route get` (its 5-tuple, in at
# its host port) to leave by its spine. Prints how many; 1 on a bad line or
# a FIB that disagrees.
pin_flows() {
	local src sport dst dport s i j l n=0 want got
	pin_tables || return 1
	: >"$TB_STATE/pins.new"
	while read -r src sport dst dport s; do
		[ -n "$src" ] || continue
		i=$(host_of_ip "$src") j=$(host_of_ip "$dst")
		if [ -z "$i" ] || [ -z "$j" ] || ! is_uint "$sport" || ! is_uint "$dport" || ! is_uint "$s" ||
			[ "$s" -lt 1 ] || [ "$s" -gt "$TB_SPINES" ]; then
			echo "pin: bad line '$src $sport $dst $dport $s' (SRC SPORT DST DPORT SPINE, rail addresses, spine 1-$TB_SPINES)" >&2
			return 1
		fi
		l=$(host_leaf "$i")
		[ "$l" -ne "$(host_leaf "$j")" ] || { echo "pin: $src and $dst are under one leaf: no spine to pin" >&2; return 1; }
		echo "$l $src $sport $dst $dport $s" >>"$TB_STATE/pins.new"
	done
	for ((l = 1; l <= TB_LEAVES; l++)); do
		awk -v l="$l" '$1 == l { printf "rule add from %s to %s ipproto tcp sport %s dport %s lookup %d pref 1000\n", $2, $4, $3, $5, 100 + $6 }' \
			"$TB_STATE/pins.new" | ip -n "$(ns_of "leaf$l")" -batch - || return 1
	done
	cat "$TB_STATE/pins.new" >>"$TB_STATE/pins"
	for ((l = 1; l <= TB_LEAVES; l++)); do
		want=$(awk -v l="$l" '$1 == l { print $6 }' "$TB_STATE/pins.new")
		[ -n "$want" ] || continue
		got=$(awk -v l="$l" '$1 == l { split($2, a, "."); printf "route get to %s from %s iif n%dr%d ipproto tcp sport %s dport %s\n", $4, $2, (a[4] - 1) / 2, a[3], $3, $5 }' \
			"$TB_STATE/pins.new" | ip -n "$(ns_of "leaf$l")" -batch - 2>&1 | grep -o ' dev s[0-9]*' | sed 's/ dev s//')
		[ "$want" = "$got" ] || { echo "pin: leaf$l's FIB does not send the flows where they were pinned" >&2; return 1; }
		n=$((n + $(wc -l <<<"$want")))
	done
	rm -f "$TB_STATE/pins.new"
	echo "$n"
}

# Remove every pin (the tables stay: without rules nothing looks them up).
pin_clear() {
	local l
	[ -s "$TB_STATE/pins" ] || return 0
	for ((l = 1; l <= TB_LEAVES; l++)); do
		awk -v l="$l" '$1 == l { printf "rule del from %s to %s ipproto tcp sport %s dport %s lookup %d pref 1000\n", $2, $4, $3, $5, 100 + $6 }' \
			"$TB_STATE/pins" | ip -n "$(ns_of "leaf$l")" -force -batch - 2>/dev/null
	done
	rm -f "$TB_STATE/pins"
}

# Routers touched by a link, to re-apply their routes when it comes back.
link_nodes() { # NS_A NS_B -> node names
	echo "${1#"$TB_PREFIX"-} ${2#"$TB_PREFIX"-}"
}

# Link down/up. A host link goes down at the switch port (leaf side): the
# host NIC sees carrier loss, as when an optic dies. A fabric link goes down
# at both ends, as a routing protocol would withdraw it: the leaf's ECMP
# route drops that spine and the spine forgets the leaf's hosts at once
# (their own ports went down), and the other leaves re-converge
# $FQTB_CONVERGE_MS later (default 300 ms: a BFD detection and a BGP
# withdrawal on a real fabric), meanwhile sending the leaf's traffic to a
# spine that can no longer reach it, as they do there.
link_set() { # link_set NAME up|down
	local ends nsa ifa nsb ifb n t
	ends=$(link_lookup "$1") || die "unknown link '$1' (see: $TB_PROG status)"
	read -r nsa ifa nsb ifb <<<"$ends"
	case $1 in
	*-eth0) die "'$1' is a management link; only fabric links can be cut" ;;
	n*-rail*) ip -n "$nsb" link set "$ifb" "$2" ;;
	*) ip -n "$nsa" link set "$ifa" "$2" && ip -n "$nsb" link set "$ifb" "$2" ;;
	esac || return 1
	t=$(now_ns) # the event's time: the link changed now; routes follow
	if [ "$2" = up ]; then
		# Neighbours that failed while the link was down would hold off
		# ARP for up to a second; a switch port coming up starts afresh.
		ip -n "$nsa" neigh flush dev "$ifa" 2>/dev/null
		ip -n "$nsb" neigh flush dev "$ifb" 2>/dev/null
	fi
	if [[ "$1" == leaf* ]]; then
		# a fabric link: its leaf re-converges now, the others after the
		# routing protocol's time (down), the spine relearns its routes
		local near=${1%%-*}
		routes_apply "$near"
		[ "$2" = down ] && sleep "$(awk -v ms="${FQTB_CONVERGE_MS:-300}" 'BEGIN { printf "%.3f", ms / 1000 }')"
		for ((n = 1; n <= TB_LEAVES; n++)); do [ "leaf$n" = "$near" ] || routes_apply "leaf$n"; done
		[ "$2" = up ] && routes_apply "${nsb#"$TB_PREFIX"-}"
	elif [ "$2" = up ]; then
		for n in $(link_nodes "$nsa" "$nsb"); do routes_apply "$n"; done
	fi
	echo "$t link $2 $1" >>"$TB_STATE/events"
}

link_state() { # link_state NAME -> up|down (as seen at the switch side)
	local nsa ifa nsb ifb
	read -r nsa ifa nsb ifb <<<"$(link_lookup "$1")"
	if ip -n "$nsb" -br link show "$ifb" 2>/dev/null | awk '{print $2}' | grep -qx UP; then
		echo up
	else
		echo down
	fi
}

# tbf_set NS DEV RATE BURST LATENCY: a fresh TBF. Not `tc qdisc replace`:
# a changed TBF keeps its queue, and a packet queued under a larger burst
# than the new one can never be sent, so the link stops for good with that
# packet at its head (seen: a job stalled on a re-shaped spine).
tbf_set() {
	ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null
	ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$3" burst "$4" latency "$5"
}

# link_both NAME FN ARG...: FN NS DEV ARG... on both ends of link NAME;
# link_both NAME off: their root qdiscs removed.
link_both() {
	local ends nsa ifa nsb ifb fn=$2
	ends=$(link_lookup "$1") || die "unknown link '$1' (see: $TB_PROG status)"
	read -r nsa ifa nsb ifb <<<"$ends"
	shift 2
	if [ "$fn" = off ]; then
		ip netns exec "$nsa" tc qdisc del dev "$ifa" root 2>/dev/null
		ip netns exec "$nsb" tc qdisc del dev "$ifb" root 2>/dev/null
		return 0
	fi
	"$fn" "$nsa" "$ifa" "$@" && "$fn" "$nsb" "$ifb" "$@"
}

# Parse a tc rate (e.g. 200mbit, 1gbit, 500kbit, 10000000bit) into bits/s.
rate_bps() {
	local r=$1 n u
	[[ "$r" =~ ^([0-9]+)(bit|kbit|mbit|gbit|tbit)$ ]] || return 1
	n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
	case $u in
	bit) echo "$n" ;;
	kbit) echo $((n * 1000)) ;;
	mbit) echo $((n * 1000000)) ;;
	gbit) echo $((n * 1000000000)) ;;
	tbit) echo $((n * 1000000000000)) ;;
	esac
}

# link_burst BPS: a shaped link's TBF burst, at least 4 ms of line rate (and
# 16 KB): smaller bursts starve TSO-sized packets.
link_burst() { local b=$(($1 / 8 / 250)); echo $((b > 16384 ? b : 16384)); }

# TBF on both ends of a link: a real bottleneck with a real queue, its
# burst BURST_BYTES (- or none: link_burst's); `latency` bounds the queue,
# so the delay a loaded link adds.
link_shape() { # link_shape NAME RATE|off [LATENCY_MS [BURST_BYTES|-]]
	local bps burst=${4:--} lat=${3:-20}
	[ "$2" = off ] && { link_both "$1" off; return; }
	bps=$(rate_bps "$2") || die "bad rate '$2' (examples: 200mbit, 1gbit, 500kbit)"
	[ "$burst" = - ] && burst=$(link_burst "$bps")
	link_both "$1" tbf_set "$2" "$burst" "${lat}ms"
}

# loss_set NS DEV PCT: DEV drops PCT % of the IPv4 packets it sends, at
# random (the kernel has no netem here): a classic BPF classifier draws a
# random number per packet and sends that share to an HTB class that
# cannot send (8 bit/s, a 1-packet FIFO), the rest to an unlimited one.
# The draw is 16 bits (the classic-to-eBPF conversion compares with a
# sign-extended immediate: a threshold at or above 2^31 never matches).
loss_set() {
	local k=$((65536 * (100 - $3) / 100))
	ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null
	ip netns exec "$1" tc qdisc add dev "$2" root handle 1: htb default 10 r2q 100000 &&
		ip netns exec "$1" tc class add dev "$2" parent 1: classid 1:10 htb rate 100gbit 2>/dev/null &&
		ip netns exec "$1" tc class add dev "$2" parent 1: classid 1:20 htb rate 8bit ceil 8bit quantum 1500 &&
		ip netns exec "$1" tc qdisc add dev "$2" parent 1:20 pfifo limit 1 &&
		ip netns exec "$1" tc filter add dev "$2" parent 1: protocol ip prio 1 bpf \
			bytecode "5,32 0 0 4294963256,84 0 0 65535,37 0 1 $k,6 0 0 4294967295,6 0 0 0" classid 1:20
}

# A lossy link, both ways (replaces any shaping); off removes it.
link_loss() { # link_loss NAME PCT|off
	[ "$2" = off ] && { link_both "$1" off; return; }
	link_both "$1" loss_set "$2"
}

# qos_set NS DEV RATE LAT_MS BURST|- CLASS...: the link shaped to RATE as by
# link_shape (its bucket BURST bytes, - for link_burst's), with the
# scheduling a switch port gives fabriciq's network classes
# (spank_fabriciq(8)), from their plugstack words
# "NAME,dscp=D,prio=P" or "NAME,dscp=D,weight=W" (other keys ignored).
# The kernel here has HTB, TBF and u32 but no prio, ETS or DRR qdisc. The
# link is a TBF (its rate a hard cap); under it an
# HTB that shapes nothing (every class far above the link's rate, so always
# within its rate) only orders the packets: by HTB priority first (a prio
# class at P, the weighted classes and unmarked packets at 7), then round
# robin by quantum (in the weights' ratio; unmarked packets weigh 1). HTB
# alone cannot be the link: a class within its own rate sends whatever its
# parent's rate says, so guarantees summing above the link would exceed
# it. Each class queues in its own bfifo of LAT_MS at line rate (TBF's
# queue bound); u32 sends each DSCP to its class.
qos_set() {
	local ns=$1 dev=$2 rate=$3 lat=$4 burst=$5 bps k=10 c dscp prio weight
	shift 5
	bps=$(rate_bps "$rate") || return 1
	[ "$burst" = - ] && burst=$(link_burst "$bps")
	ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null
	{
		qos_head "$dev" "$bps" "$lat" "$burst"
		qos_class "$dev" 99 7 1 "$((bps / 8 * lat / 1000))"
		for c in "$@"; do
			dscp=$(qos_key "$c" dscp) || return 1
			if prio=$(qos_key "$c" prio); then
				weight=1
			else
				prio=7 weight=$(qos_key "$c" weight) || return 1
			fi
			qos_class "$dev" "$k" "$prio" "$weight" "$((bps / 8 * lat / 1000))"
			echo "filter add dev $dev parent 2: protocol ip prio 1 u32 match ip dsfield $((dscp << 2)) 0xfc flowid 2:$k"
			k=$((k + 1))
		done
	} | ip netns exec "$ns" tc -batch -
}
qos_key() { # qos_key WORD KEY -> its value (digits); status 1 if absent
	local v
	v=$(tr ',' '\n' <<<"${1#*,}" | sed -n "s/^$2=//p" | head -1)
	[[ "$v" =~ ^[0-9]+$ ]] && echo "$v"
}
# qos_head DEV BPS LAT_MS [BURST]: tc batch lines of the link qos_set
# makes, less its classes: the TBF (the link; its burst link_burst's
# unless given) and the HTB under it that only orders, its classes under
# 2:1 (qos_class), what no filter sends elsewhere to 2:99
qos_head() {
	echo "qdisc add dev $1 root handle 1: tbf rate $2 burst ${4:-$(link_burst "$2")} latency ${3}ms"
	echo "qdisc add dev $1 parent 1:1 handle 2: htb default 99"
	echo "class add dev $1 parent 2: classid 2:1 htb rate 100gbit quantum 60000"
}
# qos_class DEV MINOR HTB_PRIO WEIGHT QUEUE_BYTES: tc batch lines of one
# class, never limited by its rate (the TBF above is the link)
qos_class() {
	local quantum=$((3028 * $4))
	[ "$quantum" -le 200000 ] || quantum=200000
	echo "class add dev $1 parent 2:1 classid 2:$2 htb rate 100gbit prio $3 quantum $quantum"
	echo "qdisc add dev $1 parent 2:$2 bfifo limit $5"
}

# Both ends of a link scheduled by class (qos_set).
link_qos() { # link_qos NAME RATE LAT_MS BURST|- CLASS...
	link_both "$1" qos_set "${@:2}"
}

link_rate() { # link_rate NAME -> tbf rate or "-"
	local nsa ifa nsb ifb
	read -r nsa ifa nsb ifb <<<"$(link_lookup "$1")"
	ip netns exec "$nsa" tc qdisc show dev "$ifa" root 2>/dev/null |
		awk '$2 == "tbf" { for (i = 1; i < NF; i++) if ($i == "rate") { print $(i+1); f=1 } } END { if (!f) print "-" }'
}
