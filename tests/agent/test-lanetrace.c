/* Unit tests of slurmd-agent/lanetrace.h and its wire parts (probe_wire.h):
 * the TCP segments a lane trace sends (IPv4 header, TTL, TCP checksum
 * checked here independently), the parser of routers' time-exceeded
 * quoting them (good and malformed), and the lane table driven with no
 * network (ops injected): matching, the TTL cap, waiting for a route,
 * partial traces retried and reported, forgetting, a full table. */
#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "slurmd-agent/lanetrace.h"
#include "slurmd-agent/probe_wire.h"
#include "tests/unit/tap.h"

#define SEC 1000000000LL

static uint32_t ip4(const char *s)
{
	struct in_addr in;

	inet_pton(AF_INET, s, &in);
	return in.s_addr;
}

static unsigned be16(const uint8_t *p)
{
	return (unsigned)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The one's-complement sum of 16-bit words, written apart from the code
 * under test (RFC 1071, the plain way). */
static uint32_t words(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += be16(p + i);
	if (n % 2)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static unsigned folded(uint32_t sum)
{
	while (sum > 0xffff)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static void test_segment(void)
{
	struct fq_lane_segment s = {.src = ip4("10.1.0.11"),
				    .dst = ip4("10.2.0.21"),
				    .sport = 40001,
				    .dport = 5201,
				    .seq = 0xdeadbeef,
				    .ttl = 3};
	uint8_t b[FQ_LANE_SEGMENT_SIZE], pseudo[12];
	uint32_t sum;

	is_int(fq_lane_segment_encode(&s, b), 0, "segment: encoded");
	is_int(b[0], 0x45, "IPv4, IHL 5");
	is_int(be16(b + 2), 40, "total length 40");
	is_int(be16(b + 4), 3, "IP id = TTL");
	is_int(be16(b + 6), 0x4000, "DF, no fragment offset");
	is_int(b[8], 3, "TTL 3");
	is_int(b[9], IPPROTO_TCP, "protocol 6");
	ok(!memcmp(b + 12, &s.src, 4) && !memcmp(b + 16, &s.dst, 4), "addresses");
	is_int(folded(words(b, 20, 0)), 0xffff, "IP header checksum verifies");
	is_int(be16(b + 20), 40001, "source port");
	is_int(be16(b + 22), 5201, "destination port");
	ok(be32(b + 24) == 0xdeadbeef, "seq");
	ok(be32(b + 28) == 0, "ack 0");
	is_int(b[32], 0x50, "data offset 5");
	is_int(b[33], 0x10, "flags: ACK only");
	is_int(be16(b + 34), 0, "window 0");
	is_int(be16(b + 38), 0, "urgent 0");
	memcpy(pseudo, b + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = 6;
	pseudo[10] = 0;
	pseudo[11] = 20;
	sum = words(pseudo, 12, 0);
	is_int(folded(words(b + 20, 20, sum)), 0xffff, "TCP checksum verifies with the pseudo-header");
	ok(be16(b + 36) != 0, "TCP checksum set");
	s.ttl = 0;
	is_int(fq_lane_segment_encode(&s, b), -EINVAL, "TTL 0 refused");
	s.ttl = FQ_LANE_SEGMENT_TTL_MAX + 1;
	is_int(fq_lane_segment_encode(&s, b), -EINVAL, "TTL over the maximum refused");
	s.ttl = 1;
	s.src = ip4("192.168.7.1");
	s.sport = 65535;
	s.seq = 1;
	fq_lane_segment_encode(&s, b);
	memcpy(pseudo, b + 12, 8);
	is_int(folded(words(b + 20, 20, words(pseudo, 12, 0))), 0xffff,
	       "another segment's checksum verifies");
}

/* A router's time-exceeded quoting seg's first quoted bytes; outer_opts
 * and quote_opts bytes of IP options. The packet's length. */
static size_t answer(uint8_t *pkt, const uint8_t *seg, size_t quoted, const char *router, size_t outer_opts,
		     size_t quote_opts)
{
	size_t ihl = 20 + outer_opts, n;
	uint32_t r = ip4(router);

	memset(pkt, 0, 200);
	pkt[0] = (uint8_t)(0x40 | ihl / 4);
	pkt[8] = 64;
	pkt[9] = IPPROTO_ICMP;
	memcpy(pkt + 12, &r, 4);
	memcpy(pkt + 16, seg + 12, 4);
	pkt[ihl] = 11; /* time exceeded, code 0 */
	memcpy(pkt + ihl + 8, seg, 20);
	pkt[ihl + 8] = (uint8_t)(0x40 | (20 + quote_opts) / 4);
	pkt[ihl + 8 + 8] = 1; /* the TTL that ended */
	memset(pkt + ihl + 8 + 20, 1, quote_opts);
	memcpy(pkt + ihl + 8 + 20 + quote_opts, seg + 20, quoted - 20);
	n = ihl + 8 + quote_opts + quoted;
	pkt[2] = (uint8_t)(n >> 8);
	pkt[3] = (uint8_t)n;
	return n;
}

static void test_parse(void)
{
	struct fq_lane_segment s = {.src = ip4("10.1.0.11"),
				    .dst = ip4("10.2.0.21"),
				    .sport = 40001,
				    .dport = 5201,
				    .seq = 77,
				    .ttl = 2};
	uint8_t seg[FQ_LANE_SEGMENT_SIZE], pkt[200];
	struct fq_lane_icmp m;
	size_t n;

	fq_lane_segment_encode(&s, seg);
	n = answer(pkt, seg, 28, "10.255.1.1", 0, 0);
	is_int(fq_lane_icmp_parse(pkt, n, &m), 0, "quote of IP + 8 TCP bytes parses");
	ok(m.router == ip4("10.255.1.1") && m.src == s.src && m.dst == s.dst, "router and addresses");
	ok(m.sport == 40001 && m.dport == 5201 && m.seq == 77 && m.ttl == 2, "ports, seq, TTL from the id");
	n = answer(pkt, seg, 40, "10.255.1.1", 0, 0);
	is_int(fq_lane_icmp_parse(pkt, n, &m), 0, "whole segment quoted parses");
	n = answer(pkt, seg, 28, "10.255.1.1", 8, 0);
	ok(fq_lane_icmp_parse(pkt, n, &m) == 0 && m.seq == 77 && m.sport == 40001,
	   "outer IP options skipped");
	n = answer(pkt, seg, 28, "10.255.1.1", 0, 4);
	ok(fq_lane_icmp_parse(pkt, n, &m) == 0 && m.seq == 77 && m.dport == 5201,
	   "quoted IP options skipped");
	is_int(fq_lane_icmp_parse(pkt, n - 1, &m), -EBADMSG, "quote with options one byte short refused");

	n = answer(pkt, seg, 28, "10.255.1.1", 0, 0);
	is_int(fq_lane_icmp_parse(pkt, n - 1, &m), -EBADMSG, "TCP quote of 7 bytes refused");
	is_int(fq_lane_icmp_parse(pkt, 20 + 8 + 19, &m), -EBADMSG, "truncated quoted IP header refused");
	is_int(fq_lane_icmp_parse(pkt, 19, &m), -EBADMSG, "shorter than an IP header refused");
	is_int(fq_lane_icmp_parse(pkt, 0, &m), -EBADMSG, "empty refused");
	pkt[9] = IPPROTO_UDP;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "outer protocol not ICMP refused");
	pkt[9] = IPPROTO_ICMP;
	pkt[20] = 3;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "destination unreachable refused");
	pkt[20] = 11;
	pkt[21] = 1;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "time exceeded in reassembly refused");
	pkt[21] = 0;
	pkt[28 + 9] = IPPROTO_UDP;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "quoted UDP refused");
	pkt[28 + 9] = IPPROTO_TCP;
	pkt[28 + 5] = 0;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "quoted id 0 refused");
	pkt[28 + 5] = FQ_LANE_SEGMENT_TTL_MAX + 1;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "quoted id over the TTL maximum refused");
	pkt[28 + 5] = 2;
	pkt[28 + 7] = 1;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "a later fragment refused");
	pkt[28 + 7] = 0;
	pkt[28] = 0x65;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "quoted version 6 refused");
	pkt[28] = 0x44;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "quoted IHL 4 refused");
	pkt[28] = 0x45;
	pkt[0] = 0x44;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "outer IHL 4 refused");
	pkt[0] = 0x4f;
	is_int(fq_lane_icmp_parse(pkt, n, &m), -EBADMSG, "outer IHL past the data refused");
	pkt[0] = 0x45;
	is_int(fq_lane_icmp_parse(pkt, n, &m), 0, "restored parses again");
	{
		struct fq_trace_icmp t;

		is_int(fq_trace_icmp_parse(pkt, n, &t), -EBADMSG,
		       "the UDP TRACE parser refuses a lane quote");
	}
}

/* ---- the lane table, no network ----------------------------------------- */

#define MAX_SENT 64
static struct {
	int routers; /* what routers() says (-ENOENT: no route) */
	int send_rc;
	unsigned n_sent;
	uint8_t sent[MAX_SENT][FQ_LANE_SEGMENT_SIZE];
	uint32_t sent_src[MAX_SENT];
	unsigned n_reported;
	struct fq_lane_route last;
} f;

static int fake_routers(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic)
{
	(void)arg;
	(void)local_nic;
	(void)peer_node;
	(void)peer_nic;
	return f.routers;
}

static int fake_send(void *arg, const uint8_t *pkt, size_t len, uint32_t src, uint32_t dst)
{
	(void)arg;
	(void)dst;
	if (f.send_rc)
		return f.send_rc;
	if (f.n_sent < MAX_SENT && len == FQ_LANE_SEGMENT_SIZE) {
		memcpy(f.sent[f.n_sent], pkt, len);
		f.sent_src[f.n_sent] = src;
	}
	f.n_sent++;
	return 0;
}

static void reported(void *arg, const struct fq_lane_route *r)
{
	(void)arg;
	f.n_reported++;
	f.last = *r;
}

static void lane(struct fq_lane_id *id, unsigned n, uint16_t sport)
{
	memset(id, 0, sizeof(*id));
	id->job_id = 42;
	id->step_id = 0;
	id->src_rank = 0;
	id->dst_rank = 1;
	id->lane = n;
	snprintf(id->local_nic, sizeof(id->local_nic), "eth1");
	snprintf(id->remote_node, sizeof(id->remote_node), "node2");
	snprintf(id->remote_nic, sizeof(id->remote_nic), "eth1");
	snprintf(id->local_address, sizeof(id->local_address), "10.1.0.11:%u", sport);
	snprintf(id->remote_address, sizeof(id->remote_address), "10.2.0.21:5201");
}

/* The answer of router (named by its last octet) to the i-th segment sent. */
static void answer_sent(struct fq_lanetrace *lt, unsigned i, unsigned router, int64_t now)
{
	uint8_t pkt[200];
	char r[32];
	size_t n;

	snprintf(r, sizeof(r), "10.255.0.%u", router);
	n = answer(pkt, f.sent[i], 28, r, 0, 0);
	fq_lanetrace_icmp(lt, pkt, n, now);
}

static uint64_t status_u64(struct fq_lanetrace *lt, const char *key)
{
	struct json_object *st = fq_lanetrace_status(lt), *v;
	uint64_t x = UINT64_MAX;

	if (json_object_object_get_ex(st, key, &v))
		x = json_object_get_uint64(v);
	json_object_put(st);
	return x;
}

static void test_table(void)
{
	struct fq_lanetrace_ops ops = {.routers = fake_routers, .send = fake_send};
	struct fq_lanetrace *lt = fq_lanetrace_create_with(&ops, reported, NULL);
	struct fq_lane_id id;
	int64_t t = 1000 * SEC;
	unsigned max_ttl = 0;
	uint32_t seq;

	ok(lt != NULL, "created with injected ops");
	memset(&f, 0, sizeof(f));
	ok(fq_lanetrace_create_with(NULL, reported, NULL) == NULL && errno == EINVAL, "no ops: EINVAL");

	/* a lane of a NIC pair with 3 routers: traced at TTL 1..3, not above */
	f.routers = 3;
	lane(&id, 0, 40001);
	is_int(fq_lanetrace_lane(lt, &id, t), 0, "lane added");
	is_int(fq_lanetrace_lane(lt, &id, t), 0, "the same lane again");
	is_int((int)status_u64(lt, "lanes"), 1, "one lane, not two");
	fq_lanetrace_tick(lt, t);
	is_int(f.n_sent, 3, "3 segments for 3 routers");
	seq = be32(f.sent[0] + 24);
	for (unsigned i = 0; i < f.n_sent && i < MAX_SENT; i++) {
		if (f.sent[i][8] > max_ttl)
			max_ttl = f.sent[i][8];
		ok(f.sent[i][8] == i + 1 && be16(f.sent[i] + 4) == i + 1 && be32(f.sent[i] + 24) == seq &&
		       be16(f.sent[i] + 20) == 40001 && be16(f.sent[i] + 22) == 5201 &&
		       f.sent_src[i] == ip4("10.1.0.11"),
		   "segment %u: TTL and id %u, the trace's seq, the lane's ports and source", i, i + 1);
	}
	is_int(max_ttl, 3, "TTL never above N");
	answer_sent(lt, 0, 1, t + 1000);
	answer_sent(lt, 2, 3, t + 1000);
	is_int(f.n_reported, 0, "two of three hops: not yet");
	{
		uint8_t pkt[200], bad[FQ_LANE_SEGMENT_SIZE];
		size_t n;

		memcpy(bad, f.sent[1], sizeof(bad));
		bad[27] ^= 1; /* another seq */
		n = answer(pkt, bad, 28, "10.255.0.9", 0, 0);
		fq_lanetrace_icmp(lt, pkt, n, t + 2000);
		memcpy(bad, f.sent[1], sizeof(bad));
		bad[21] ^= 1; /* another source port */
		n = answer(pkt, bad, 28, "10.255.0.9", 0, 0);
		fq_lanetrace_icmp(lt, pkt, n, t + 2000);
		is_int(f.n_reported, 0, "answers of another seq or port not matched");
		is_int((int)status_u64(lt, "unmatched"), 2, "counted unmatched");
	}
	answer_sent(lt, 1, 2, t + 3000);
	is_int(f.n_reported, 1, "all 3 hops: reported at once");
	ok(f.last.n_hops == 3 && f.last.hops[0] == ip4("10.255.0.1") && f.last.hops[1] == ip4("10.255.0.2") &&
	       f.last.hops[2] == ip4("10.255.0.3") && f.last.tries == 1,
	   "hops in TTL order, one try");
	ok(f.last.id.job_id == 42 && f.last.id.dst_rank == 1 && !strcmp(f.last.id.remote_node, "node2"),
	   "the lane's identity");
	answer_sent(lt, 1, 2, t + 4000);
	is_int((int)status_u64(lt, "unmatched"), 3, "a late answer: unmatched");
	fq_lanetrace_tick(lt, t + 30 * SEC);
	is_int(f.n_sent, 3, "done: not traced again");

	/* its NIC pair's route changed: traced again, reported only if changed */
	fq_lanetrace_route_changed(lt, "eth1", "node2", "eth1");
	fq_lanetrace_tick(lt, t + 31 * SEC);
	is_int(f.n_sent, 6, "route changed: traced again");
	answer_sent(lt, 3, 1, t + 31 * SEC);
	answer_sent(lt, 4, 2, t + 31 * SEC);
	answer_sent(lt, 5, 3, t + 31 * SEC);
	is_int(f.n_reported, 1, "the same hops: not reported again");
	fq_lanetrace_route_changed(lt, "eth1", "node2", "eth1");
	fq_lanetrace_tick(lt, t + 32 * SEC);
	answer_sent(lt, 6, 1, t + 32 * SEC);
	answer_sent(lt, 7, 4, t + 32 * SEC);
	answer_sent(lt, 8, 3, t + 32 * SEC);
	ok(f.n_reported == 2 && f.last.hops[1] == ip4("10.255.0.4"), "other hops: reported");

	/* forgotten when not reported for 60 s */
	fq_lanetrace_lane(lt, &id, t + 40 * SEC);
	fq_lanetrace_tick(lt, t + 99 * SEC);
	is_int((int)status_u64(lt, "lanes"), 1, "reported 59 s ago: kept");
	fq_lanetrace_tick(lt, t + 101 * SEC);
	is_int((int)status_u64(lt, "lanes"), 0, "not reported for 61 s: forgotten");

	/* partial: retried after 10 s, reported as it is after 3 tries */
	t = 2000 * SEC;
	f.n_sent = 0;
	f.n_reported = 0;
	f.routers = 2;
	lane(&id, 1, 40002);
	fq_lanetrace_lane(lt, &id, t);
	for (unsigned k = 0; k < 3; k++) {
		int64_t at = t + k * 11 * SEC;

		fq_lanetrace_lane(lt, &id, at);
		fq_lanetrace_tick(lt, at);
		is_int(f.n_sent, 2 * (k + 1), "try %u: 2 segments", k + 1);
		if (k > 0)
			ok(be32(f.sent[2 * k] + 24) != be32(f.sent[2 * k - 2] + 24), "try %u: a new seq",
			   k + 1);
		answer_sent(lt, 2 * k, 1, at + 1000);
		fq_lanetrace_tick(lt, at + SEC / 2);
		is_int(f.n_reported, 0, "try %u: waiting for hop 2 within 1 s", k + 1);
		fq_lanetrace_tick(lt, at + SEC);
		is_int(f.n_reported, k == 2 ? 1 : 0, "try %u: timed out, %s", k + 1,
		       k == 2 ? "reported as it is" : "not reported");
		fq_lanetrace_tick(lt, at + 5 * SEC);
		is_int(f.n_sent, 2 * (k + 1), "try %u: no retry before 10 s", k + 1);
	}
	ok(f.last.n_hops == 2 && f.last.hops[0] == ip4("10.255.0.1") && f.last.hops[1] == 0 &&
	       f.last.tries == 3,
	   "partial route: hop 2 unanswered, 3 tries");

	/* no route yet: waits, sends nothing; then traced */
	f.n_sent = 0;
	f.n_reported = 0;
	f.routers = -ENOENT;
	lane(&id, 2, 40003);
	fq_lanetrace_lane(lt, &id, t + 100 * SEC);
	fq_lanetrace_tick(lt, t + 100 * SEC);
	is_int(f.n_sent, 0, "no route: nothing sent");
	ok(status_u64(lt, "waiting") >= 1, "counted waiting");
	f.routers = 1;
	fq_lanetrace_tick(lt, t + 100 * SEC + SEC / 2);
	is_int(f.n_sent, 0, "route known: looked at again only after 1 s");
	fq_lanetrace_tick(lt, t + 101 * SEC);
	ok(f.n_sent == 1 && f.sent[0][8] == 1, "then traced: one segment, TTL 1");
	{
		uint8_t pkt[200], forged[FQ_LANE_SEGMENT_SIZE];
		size_t n;

		memcpy(forged, f.sent[0], sizeof(forged));
		forged[5] = 2; /* an answer for a TTL never sent */
		n = answer(pkt, forged, 28, "10.255.0.8", 0, 0);
		fq_lanetrace_icmp(lt, pkt, n, t + 101 * SEC);
		is_int(f.n_reported, 0, "an answer at a TTL above N ignored");
	}
	answer_sent(lt, 0, 7, t + 101 * SEC);
	ok(f.n_reported == 1 && f.last.n_hops == 1 && f.last.hops[0] == ip4("10.255.0.7"),
	   "one hop reported");

	/* no router between: reported with no hops, nothing sent */
	f.n_sent = 0;
	f.n_reported = 0;
	f.routers = 0;
	lane(&id, 3, 40004);
	fq_lanetrace_lane(lt, &id, t + 102 * SEC);
	fq_lanetrace_tick(lt, t + 102 * SEC);
	ok(f.n_sent == 0 && f.n_reported == 1 && f.last.n_hops == 0, "N = 0: no hops, nothing sent");

	/* send errors: retried later */
	f.routers = 2;
	f.send_rc = -ENETUNREACH;
	lane(&id, 4, 40005);
	fq_lanetrace_lane(lt, &id, t + 103 * SEC);
	fq_lanetrace_tick(lt, t + 103 * SEC);
	ok(status_u64(lt, "send_errors") == 1, "send error counted");
	f.send_rc = 0;
	fq_lanetrace_tick(lt, t + 104 * SEC);
	is_int(f.n_sent, 0, "not retried at once");
	fq_lanetrace_tick(lt, t + 114 * SEC);
	is_int(f.n_sent, 2, "retried after 10 s");

	/* bad lanes, a full table */
	lane(&id, 5, 40006);
	snprintf(id.local_address, sizeof(id.local_address), "[fe80::1]:40006");
	is_int(fq_lanetrace_lane(lt, &id, t), -EINVAL, "IPv6 lane refused");
	snprintf(id.local_address, sizeof(id.local_address), "10.1.0.11:0");
	is_int(fq_lanetrace_lane(lt, &id, t), -EINVAL, "port 0 refused");
	snprintf(id.local_address, sizeof(id.local_address), "10.1.0.11:70000");
	is_int(fq_lanetrace_lane(lt, &id, t), -EINVAL, "port 70000 refused");
	snprintf(id.local_address, sizeof(id.local_address), "10.1.0.11");
	is_int(fq_lanetrace_lane(lt, &id, t), -EINVAL, "no port refused");
	lane(&id, 5, 40006);
	id.remote_node[0] = 0;
	is_int(fq_lanetrace_lane(lt, &id, t), -EINVAL, "no far node refused");
	{
		int rc = 0;
		unsigned added = 0;

		for (unsigned i = 0; i < FQ_LANETRACE_MAX_LANES + 1 && rc == 0; i++) {
			lane(&id, 100 + i, (uint16_t)(1000 + i));
			rc = fq_lanetrace_lane(lt, &id, t + 114 * SEC);
			added += rc == 0;
		}
		is_int(rc, -ENOSPC, "full table: -ENOSPC");
		is_int((int)status_u64(lt, "lanes"), FQ_LANETRACE_MAX_LANES, "table holds its maximum");
		is_int((int)status_u64(lt, "full"), 1, "counted full");
		f.routers = 1;
		f.n_sent = 0;
		fq_lanetrace_tick(lt, t + 115 * SEC);
		ok(f.n_sent <= FQ_LANETRACE_PER_TICK, "at most %d traces started per tick",
		   FQ_LANETRACE_PER_TICK);
		fq_lanetrace_tick(lt, t + 200 * SEC);
		is_int((int)status_u64(lt, "lanes"), 0, "all forgotten after 60 s");
		lane(&id, 9999, 9999);
		is_int(fq_lanetrace_lane(lt, &id, t + 200 * SEC), 0, "room again");
	}
	{
		struct json_object *st = fq_lanetrace_status(lt), *routes;

		ok(json_object_object_get_ex(st, "routes", &routes) &&
		       json_object_array_length(routes) <= FQ_LANETRACE_LAST &&
		       json_object_array_length(routes) > 0,
		   "status lists the last lane routes, bounded");
		json_object_put(st);
	}
	fq_lanetrace_destroy(lt);
	is_int(fq_lanetrace_lane(NULL, &id, t), 0, "no lane tracer: nothing");
}

int main(void)
{
	test_segment();
	test_parse();
	test_table();
	return done_testing();
}
