/*
 * test-agent-ud: the parts of UD probing that need no RDMA device — peer
 * address syntax, the GRH offset of received packets, address-handle
 * attributes, NIC clock -> CLOCK_MONOTONIC_RAW conversion, IB port
 * discovery on a fixture sysfs tree (fixtures/sysfs-ib), the choice of
 * transport, and the UDP transport itself on the loopback.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_VERBS
#include <infiniband/verbs.h>
#endif

#include "common/clock.h"
#include "common/log.h"
#include "slurmd-agent/nics.h"
#include "slurmd-agent/probe_open.h"
#include "slurmd-agent/probe_transport.h"
#include "slurmd-agent/probe_ud.h"
#include "slurmd-agent/probe_udp.h"
#include "slurmd-agent/probe_wire.h"
#include "slurmd-agent/prober.h"
#include "tests/unit/tap.h"

static char fixture[512];
static char last_error[512];

static void sink(enum fq_log_level level, const char *line, void *arg)
{
	(void)arg;
	if (level == FQ_LOG_ERROR)
		snprintf(last_error, sizeof(last_error), "%s", line);
	fprintf(stderr, "%s\n", line);
}

static void test_addr(void)
{
	struct fq_peer_addr a, b;
	char s[FQ_PEER_ADDR_STRLEN];
	static const char *bad[] = {"",
				    "ud:",
				    "ud:lid=0x12",               /* no qpn */
				    "ud:qpn=0x48",               /* neither lid nor gid */
				    "ud:lid=0x12/qpn=1",         /* QP1 is the GSI */
				    "ud:lid=0x12/qpn=0x1000000", /* > 24 bits */
				    "ud:lid=0/qpn=0x48",
				    "ud:lid=0xc000/qpn=0x48", /* multicast */
				    "ud:lid=0x12/qpn=0x48/",
				    "ud:lid=0x12/qpn=-5",
				    "ud:lid=0x12/qpn=0x48/mtu=4096",
				    "ud:gid=fe80::zz/qpn=0x48",
				    "ud:lid=0x12,qpn=0x48",
				    "198.19.0.256",
				    "n2"};

	ok(fq_peer_addr_parse("198.19.0.5", 4791, &a) == 0 && a.kind == FQ_PEER_IPV4 && a.port == 4791 &&
	       a.ipv4 == inet_addr("198.19.0.5"),
	   "IPv4 address with the default port");
	ok(fq_peer_addr_parse("ud:lid=0x12/qpn=0x48", 4791, &a) == 0 && a.kind == FQ_PEER_UD &&
	       a.lid == 0x12 && a.qpn == 0x48 && !a.has_gid,
	   "ud:lid=0x12/qpn=0x48");
	is_str(fq_peer_addr_format(&a, s, sizeof(s)), "ud:lid=0x12/qpn=0x48", "formatted back the same");
	ok(fq_peer_addr_parse("ud:qpn=72/gid=fe80::2c9:300:1:2", 0, &b) == 0 && b.has_gid && b.qpn == 72 &&
	       b.gid[0] == 0xfe && b.gid[15] == 0x02,
	   "ud:qpn=72/gid=fe80::... (decimal, any order)");
	fq_peer_addr_format(&b, s, sizeof(s));
	ok(fq_peer_addr_parse(s, 0, &a) == 0 && fq_peer_addr_equal(&a, &b), "GID form round-trips (%s)", s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		is_int(fq_peer_addr_parse(bad[i], 0, &a), -EINVAL, "refused: '%s'", bad[i]);
}

/* Hostile text: whatever parses formats back to the same address, and
 * random GRH buffers never put the payload outside the buffer. */
static void test_hostile(void)
{
	static const char *key[] = {"lid", "qpn", "gid", "qpn", "xyz", ""};
	static const char *val[] = {"0x12",
				    "18",
				    "0",
				    "0xbfff",
				    "0xc000",
				    "1",
				    "0xffffff",
				    "0x1000000",
				    "-1",
				    "",
				    "fe80::1",
				    "::",
				    "fe80::zz",
				    "0x",
				    "12z",
				    "::ffff:198.19.0.1",
				    "0X1F",
				    "077",
				    "99999999999999999999"};
	unsigned seed = 12345, accepted = 0, roundtrip = 0, inside = 1;
	uint8_t buf[128];

	for (int i = 0; i < 200000; i++) {
		char s[160] = "ud:", f[FQ_PEER_ADDR_STRLEN];
		int n = 1 + (int)(rand_r(&seed) % 4);
		struct fq_peer_addr a, b;

		for (int k = 0; k < n; k++) {
			size_t l = strlen(s);
			snprintf(s + l, sizeof(s) - l, "%s%s=%s", k ? "/" : "", key[rand_r(&seed) % 6],
				 val[rand_r(&seed) % (sizeof(val) / sizeof(val[0]))]);
		}
		if (rand_r(&seed) % 8 == 0)
			strcat(s, "/");
		if (fq_peer_addr_parse(s, 7, &a) == 0) {
			accepted++;
			fq_peer_addr_format(&a, f, sizeof(f));
			roundtrip += fq_peer_addr_parse(f, 7, &b) == 0 && fq_peer_addr_equal(&a, &b);
		}
	}
	ok(accepted > 100 && accepted == roundtrip,
	   "200000 random addresses: every accepted one (%u) round-trips", accepted);
	for (int i = 0; i < 10000; i++) {
		const uint8_t *p;
		size_t len;
		bool g;
		uint8_t gid[16];
		uint32_t bl = (uint32_t)(rand_r(&seed) % sizeof(buf));

		for (size_t j = 0; j < sizeof(buf); j++)
			buf[j] = (uint8_t)rand_r(&seed);
		if (fq_ud_rx_payload(buf, bl, rand_r(&seed) % 2, &p, &len, &g, gid) == 0 &&
		    (p < buf || p + len > buf + bl))
			inside = 0;
	}
	ok(inside, "10000 random UD buffers: the payload always lies inside byte_len");
}

static void test_match(void)
{
	struct fq_peer_addr cfg, seen;

	fq_peer_addr_parse("198.19.0.5", 4791, &cfg);
	fq_peer_addr_parse("198.19.0.5", 40000, &seen);
	ok(fq_peer_addr_matches(&cfg, &seen) && !fq_peer_addr_equal(&cfg, &seen),
	   "IPv4: the host matches on any port, equality needs the port");
	fq_peer_addr_parse("ud:lid=0x12/qpn=0x48", 0, &cfg);
	seen = cfg;
	ok(fq_peer_addr_matches(&cfg, &seen), "UD: same LID and QPN match");
	seen.has_gid = true; /* an IB sender that added a GRH */
	ok(fq_peer_addr_matches(&cfg, &seen), "UD configured by LID: a GRH on the packet does not matter");
	seen.qpn = 0x49;
	ok(!fq_peer_addr_matches(&cfg, &seen), "UD: another QPN (a restarted agent) does not match");
	fq_peer_addr_parse("ud:gid=fe80::1/qpn=0x48", 0, &cfg);
	fq_peer_addr_parse("ud:lid=0x12/qpn=0x48", 0, &seen);
	ok(!fq_peer_addr_matches(&cfg, &seen), "UD configured by GID: a packet without GRH does not match");
	fq_peer_addr_parse("ud:gid=fe80::1/qpn=0x48", 0, &seen);
	ok(fq_peer_addr_matches(&cfg, &seen), "UD configured by GID: the same SGID matches");
	fq_peer_addr_parse("198.19.0.5", 4791, &seen);
	ok(!fq_peer_addr_matches(&cfg, &seen), "kinds never match each other");
}

/* A UD receive buffer as the HCA writes it: GRH room, then the probe. */
static void test_grh(void)
{
	uint8_t buf[FQ_UD_GRH_BYTES + FQ_PROBE_SIZE] = {0}, gid[16];
	const uint8_t *payload;
	size_t len;
	bool has_gid;
	struct fq_probe in = {.type = FQ_PROBE_REQ, .index = 1, .session = 7, .pair = 99, .gap_ns = 0}, out;

	fq_probe_encode(&in, buf + FQ_UD_GRH_BYTES);
	ok(fq_ud_rx_payload(buf, sizeof(buf), false, &payload, &len, &has_gid, gid) == 0 &&
	       payload == buf + 40 && len == FQ_PROBE_SIZE && !has_gid,
	   "payload 40 bytes in, byte_len minus the GRH room");
	ok(fq_probe_decode(payload, len, &out) == 0 && out.pair == 99 && out.index == 1,
	   "the probe decodes from there");
	is_int(fq_ud_rx_payload(buf, 39, false, &payload, &len, &has_gid, gid), -EBADMSG,
	       "a completion shorter than the GRH room is refused");
	/* IB GRH: IPVer 6 in the first nibble, SGID at byte 8 */
	buf[0] = 0x60;
	for (int i = 0; i < 16; i++)
		buf[8 + i] = (uint8_t)(0xa0 + i), buf[24 + i] = 0xee;
	ok(fq_ud_rx_payload(buf, sizeof(buf), true, &payload, &len, &has_gid, gid) == 0 && has_gid &&
	       gid[0] == 0xa0 && gid[15] == 0xaf,
	   "IB/RoCEv1 GRH: the sender's GID is bytes 8..23");
	/* RoCEv2 over IPv4: 20 zero bytes, then an IPv4 header (src at +12) */
	memset(buf, 0, 40);
	buf[20] = 0x45;
	memcpy(buf + 32, (uint8_t[]){198, 19, 1, 7}, 4);
	ok(fq_ud_rx_payload(buf, sizeof(buf), true, &payload, &len, &has_gid, gid) == 0 && has_gid &&
	       gid[10] == 0xff && gid[11] == 0xff && gid[12] == 198 && gid[15] == 7 && gid[0] == 0,
	   "RoCEv2/IPv4: the GID is the IPv4-mapped source address");
	ok(len == FQ_PROBE_SIZE && fq_probe_decode(payload, len, &out) == 0,
	   "... and the payload still at 40");
}

static void test_ah(void)
{
	struct fq_peer_addr to;
	struct fq_ud_ah ah;

	fq_peer_addr_parse("ud:lid=0x12/qpn=0x48", 0, &to);
	ok(fq_ud_ah_for(&to, 1, false, 0, &ah) == 0 && ah.dlid == 0x12 && !ah.is_global && ah.port_num == 1,
	   "IB by LID: DLID, no GRH, our port");
	fq_peer_addr_parse("ud:lid=0x12/gid=fe80::7/qpn=0x48", 0, &to);
	ok(fq_ud_ah_for(&to, 2, false, 3, &ah) == 0 && ah.dlid == 0x12 && ah.is_global && ah.dgid[15] == 7 &&
	       ah.sgid_index == 3 && ah.hop_limit == 64 && ah.port_num == 2,
	   "IB with a GID: DLID plus a GRH (DGID, SGID index, hop limit)");
	fq_peer_addr_parse("ud:gid=fe80::7/qpn=0x48", 0, &to);
	ok(fq_ud_ah_for(&to, 1, true, 0, &ah) == 0 && ah.dlid == 0 && ah.is_global, "RoCE: GID only, no LID");
	is_int(fq_ud_ah_for(&to, 1, false, 0, &ah), -EINVAL, "IB without a LID: refused");
	fq_peer_addr_parse("ud:lid=0x12/qpn=0x48", 0, &to);
	is_int(fq_ud_ah_for(&to, 1, true, 0, &ah), -EINVAL, "RoCE without a GID: refused");
	fq_peer_addr_parse("198.19.0.5", 1, &to);
	is_int(fq_ud_ah_for(&to, 1, false, 0, &ah), -EINVAL, "an IPv4 peer has no address handle");
}

/*
 * NIC clock conversion, with the numbers of a ConnectX-5 (core clock
 * 156.25 MHz, 6.4 ns a cycle; a free-running 64-bit counter that is large
 * after weeks of uptime). The crystal is 30 ppm fast against the host's
 * raw clock here, as such crystals are.
 */
static void test_clock(void)
{
	int64_t before[4] = {1000, 5000, 9000, 13000}, after[4] = {1900, 5300, 9800, 14000}, raw;
	uint64_t hca[4] = {111, 222, 333, 444}, h;
	struct fq_ud_clock c = {.khz = 156250};
	const uint64_t h0 = 0x00003a5f12345678ull; /* ~42 h of cycles */
	const int64_t r0 = 5000 * FQ_NSEC_PER_SEC;
	/* raw ns per cycle: 6.4 / (1 + 30e-6) */
	const long double ns_per_cycle = 6.4L / (1.0L + 30e-6L);

	ok(fq_ud_cross_pick(before, hca, after, 4, &h, &raw) == 0 && h == 222 && raw == 5150,
	   "cross-stamp: the narrowest bracket, its midpoint");
	is_int(fq_ud_cross_pick(before, hca, after, 0, &h, &raw), -EINVAL, "no sample: refused");
	is_int(fq_ud_clock_to_raw(&c, h0), 0, "no cross point yet: 0");
	fq_ud_clock_add(&c, h0, r0);
	is_int(fq_ud_clock_to_raw(&c, h0 + 156250), r0 + 1000000,
	       "one point: 156250 cycles are 1 ms (nominal)");
	is_int(fq_ud_clock_to_raw(&c, h0 - 15625), r0 - 100000,
	       "a completion before the point: 100 us earlier");
	/* 2 s later, a second cross point with the true (fast) rate */
	{
		uint64_t h1 = h0 + (uint64_t)(2e9L / ns_per_cycle);
		int64_t r1 = r0 + 2 * FQ_NSEC_PER_SEC, got, want;
		uint64_t hx = h1 + 78125000; /* 0.5 s of cycles later */

		fq_ud_clock_add(&c, h1, r1);
		want = r1 + (int64_t)(78125000.0L * ns_per_cycle);
		got = fq_ud_clock_to_raw(&c, hx);
		ok(llabs(got - want) <= 5, "two points 2 s apart: the measured rate (error %lld ns)",
		   (long long)(got - want));
		ok(llabs((r1 + 500000000) - want) > 10000,
		   "(the nominal rate would be %lld ns off: the slope matters)",
		   (long long)((r1 + 500000000) - want));
		/* 20 s on: the older point slides to the latest one */
		fq_ud_clock_add(&c, h1 + (uint64_t)(20e9L / ns_per_cycle), r1 + 20 * FQ_NSEC_PER_SEC);
		ok(c.raw[0] == r1 && c.raw[1] == r1 + 20 * FQ_NSEC_PER_SEC, "after 10 s the baseline slides");
		fq_ud_clock_add(&c, h1 + (uint64_t)(20.1e9L / ns_per_cycle), r1 + 20100000000LL);
		want = r1 + 20100000000LL + (int64_t)(78125000.0L * ns_per_cycle);
		got = fq_ud_clock_to_raw(&c, h1 + (uint64_t)(20.1e9L / ns_per_cycle) + 78125000);
		ok(c.raw[0] == r1 + 20 * FQ_NSEC_PER_SEC && llabs(got - want) <= 5,
		   "a new baseline 100 ms long keeps the measured rate, not the nominal one (error %lld ns)",
		   (long long)(got - want));
	}
	/* a million seconds of cycles: no overflow in the product */
	c = (struct fq_ud_clock){.khz = 156250};
	fq_ud_clock_add(&c, 0, 0);
	is_int(fq_ud_clock_to_raw(&c, 156250000ull * 1000000ull), 1000000 * FQ_NSEC_PER_SEC,
	       "10^6 s of cycles converts exactly (no 64-bit overflow)");
}

static void test_discovery(void)
{
	char names[8][FQ_NIC_NAME_MAX];
	struct fq_ib_port ib;
	int n = fq_nics_discover(fixture, "", names, 8);

	ok(n == 4 && !strcmp(names[0], "ens3f0") && !strcmp(names[1], "ib0") && !strcmp(names[2], "mlx5_0") &&
	       !strcmp(names[3], "mlx5_1.2"),
	   "discovery: netdevs, plus IB ports without one (mlx5_0, mlx5_1.2); not an Ethernet port without "
	   "one "
	   "(%d)",
	   n);
	n = fq_nics_discover(fixture, "ib0", names, 8);
	ok(n == 3 && strcmp(names[1], "ib0") != 0, "the front-end NIC is still left out");
	ok(fq_nics_ib_port(fixture, "mlx5_0", &ib) == 0 && !strcmp(ib.dev, "mlx5_0") && ib.port == 1 &&
	       !strcmp(ib.link_layer, "InfiniBand") && !ib.netdev[0],
	   "mlx5_0: device mlx5_0 port 1, InfiniBand, no netdev");
	ok(fq_nics_ib_port(fixture, "mlx5_1.2", &ib) == 0 && !strcmp(ib.dev, "mlx5_1") && ib.port == 2 &&
	       !ib.netdev[0],
	   "mlx5_1.2: port 2 of mlx5_1");
	ok(fq_nics_ib_port(fixture, "ib0", &ib) == 0 && !strcmp(ib.dev, "mlx5_1") && ib.port == 1 &&
	       !strcmp(ib.netdev, "ib0"),
	   "ib0: the IPoIB netdev of mlx5_1 port 1");
	ok(fq_nics_ib_port(fixture, "mlx5_1", &ib) == 0 && !strcmp(ib.netdev, "ib0"),
	   "mlx5_1 (port 1) knows its netdev ib0");
	ok(fq_nics_ib_port(fixture, "ens3f0", &ib) == 0 && !strcmp(ib.link_layer, "Ethernet"),
	   "ens3f0: a RoCE port");
	ok(fq_nics_ib_port(fixture, "mlx5_0.2", &ib) == -ENOENT &&
	       fq_nics_ib_port(fixture, "eth7", &ib) == -ENOENT &&
	       fq_nics_ib_port(fixture, "../mlx5_0", &ib) == -ENOENT &&
	       fq_nics_ib_port("/nonexistent", "mlx5_0", &ib) == -ENOENT,
	   "no such port, no such NIC, no path tricks, no tree: -ENOENT");
}

/* A verbs device of that name exists on this host (then the fixture's name
 * would open the real device). */
static bool real_device(const char *name)
{
	bool found = false;
#ifdef HAVE_VERBS
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);

	for (int i = 0; l && i < n; i++)
		found |= strcmp(ibv_get_device_name(l[i]), name) == 0;
	if (l)
		ibv_free_device_list(l);
#else
	(void)name;
#endif
	return found;
}

static void test_choice(void)
{
	struct fq_probe_transport *t = NULL;
	struct event_base *base = event_base_new();
	struct fq_prober_config pc = {.node = "n1",
				      .port = 0,
				      .probe_interval_ns = 10000000,
				      .guard_ns = 5000,
				      .window_ns = 4000000000,
				      .bucket_ns = 250000000,
				      .down_after_ns = 250000000,
				      .sysfs = fixture};
	struct fq_prober *p = fq_prober_create(base, &pc, NULL, NULL);
	int want = FQ_PROBE_UD_BUILT ? -ENODEV : -EPROTONOSUPPORT;
	char addr[FQ_PEER_ADDR_STRLEN];

	is_int(fq_probe_choose(true, true, true), FQ_PROBE_USE_UDP, "an IPv4 address: UDP (even on IPoIB)");
	is_int(fq_probe_choose(false, true, true), FQ_PROBE_USE_UD, "no IPv4, an RDMA port, verbs built: UD");
	is_int(fq_probe_choose(false, true, false), FQ_PROBE_NO_VERBS,
	       "no IPv4, RDMA port, no verbs: refused");
	is_int(fq_probe_choose(false, false, true), FQ_PROBE_NO_ADDRESS, "no IPv4, no RDMA port: refused");
	if (real_device("mlx5_0"))
		skip(4, "this host has a real mlx5_0");
	else {
		is_int(fq_probe_transport_open(fixture, "mlx5_0", 0, &t), want,
		       "configured UD NIC mlx5_0 with no verbs device: %s",
		       FQ_PROBE_UD_BUILT ? "-ENODEV" : "-EPROTONOSUPPORT");
		like(last_error, FQ_PROBE_UD_BUILT ? "ibv_get_device_list" : "without verbs",
		     "the error names the reason");
		like(last_error, "mlx5_0", "... and the NIC");
		is_int(fq_prober_add_nic(p, "mlx5_0"), want,
		       "... and the prober refuses the NIC the same way");
	}
	is_int(fq_probe_transport_open(fixture, "fqnone9", 0, &t), -EADDRNOTAVAIL,
	       "neither IPv4 nor RDMA: -EADDRNOTAVAIL");
	ok(fq_prober_add_nic(p, "lo") == 0, "the loopback (IPv4) gets UDP");
	is_int(fq_prober_add_peer(p, "lo", "n2", "ib0", "ud:lid=0x12/qpn=0x48"), -EAFNOSUPPORT,
	       "a UD peer on a UDP NIC: -EAFNOSUPPORT");
	is_int(fq_prober_add_peer(p, "lo", "n2", "lo", "127.0.0.2"), 0, "an IPv4 peer on it: added");
	ok(fq_prober_nic_address(p, "lo", addr, sizeof(addr)) == 0 && !strcmp(addr, "127.0.0.1"),
	   "its own probe address: %s", addr);
	fq_prober_destroy(p);
	event_base_free(base);
}

/* The UDP transport on the loopback: a packet to itself comes back with a
 * kernel RX stamp, and its TX stamp with the key the send returned. The
 * kernel turns RX stamping on a moment after the first socket asks
 * (net_enable_timestamp() flips a static key from a work queue), so the
 * first packets may come back with the agent's own stamp: try a few. */
static void test_udp_loopback(void)
{
	struct fq_probe_transport *t;
	struct fq_peer_addr me;
	uint8_t buf[FQ_PROBE_SIZE] = {1, 2, 3}, in[FQ_PROBE_SIZE + 1];
	uint16_t port = (uint16_t)(20000 + getpid() % 20000);
	uint32_t key = 99, tkey = 77;
	int64_t t0 = 0, tx = 0, t1 = 0;
	long len = -EAGAIN;
	int got_tx = 0, sends_ok = 1, round;
	struct fq_probe_rx rx = {0};

	if (fq_probe_udp_open("lo", port, &t) < 0) {
		skip(5, "no UDP socket on lo");
		return;
	}
	t->ops->local_addr(t, &me);
	for (round = 0; round < 50; round++) {
		len = -EAGAIN;
		got_tx = 0;
		t0 = fq_now_ns();
		if (t->ops->send(t, &me, buf, sizeof(buf), &key) < 0 || key != (uint32_t)round)
			sends_ok = 0;
		for (int i = 0; i < 100 && (len < 0 || got_tx != 1); i++) {
			struct pollfd pfd = {.fd = t->ops->fd(t), .events = POLLIN};
			poll(&pfd, 1, 10);
			t->ops->ready(t);
			if (got_tx != 1)
				got_tx = t->ops->tx_stamp(t, &tkey, &tx);
			if (len < 0)
				len = t->ops->recv(t, in, sizeof(in), &rx);
		}
		t1 = fq_now_ns();
		if (len >= 0 && rx.stamp == FQ_STAMP_KERNEL)
			break;
		usleep(20000);
	}
	ok(sends_ok, "sends to itself: keys 0, 1, ... (%d rounds until kernel RX stamps)", round + 1);
	ok(len == FQ_PROBE_SIZE && !memcmp(in, buf, sizeof(buf)) && rx.from.kind == FQ_PEER_IPV4 &&
	       rx.from.port == port,
	   "received from 127.0.0.1:%u", port);
	if (!ok(rx.stamp == FQ_STAMP_KERNEL && rx.rx_ns >= t0 - 1000000 && rx.rx_ns <= t1 + 1000000,
		"kernel RX stamp on the raw clock (%lld ns after the send call)", (long long)(rx.rx_ns - t0)))
		diag("stamp kind %s, t0 %lld rx %lld t1 %lld", fq_stamp_kind_name(rx.stamp), (long long)t0,
		     (long long)rx.rx_ns, (long long)t1);
	ok(got_tx == 1 && tkey == key, "TX stamp for the last key (%u)", key);
	ok(got_tx == 1 && tx <= rx.rx_ns + 100000 && tx >= t0 - 1000000, "TX before RX (%lld ns)",
	   (long long)(rx.rx_ns - tx));
	t->ops->destroy(t);
}

int main(void)
{
	const char *srcdir = getenv("srcdir");

	snprintf(fixture, sizeof(fixture), "%s/tests/agent/fixtures/sysfs-ib", srcdir ? srcdir : ".");
	if (access(fixture, R_OK) != 0) {
		/* run by hand from the build tree */
		snprintf(fixture, sizeof(fixture), "%s/../tests/agent/fixtures/sysfs-ib",
			 srcdir ? srcdir : ".");
	}
	fq_log_init("test-agent-ud", FQ_LOG_ERROR, FQ_LOG_STDERR);
	fq_log_set_sink(sink, NULL);
	test_addr();
	test_hostile();
	test_match();
	test_grh();
	test_ah();
	test_clock();
	test_discovery();
	test_choice();
	test_udp_loopback();
	return done_testing();
}
