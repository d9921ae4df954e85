#include "slurmd-agent/probe_wire.h"

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <string.h>

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

void fq_probe_encode(const struct fq_probe *p, uint8_t buf[FQ_PROBE_SIZE])
{
	memset(buf, 0, FQ_PROBE_SIZE);
	put32(buf, FQ_PROBE_MAGIC);
	buf[4] = FQ_PROBE_VERSION;
	buf[5] = p->type;
	buf[6] = p->index;
	put32(buf + 8, p->session);
	put64(buf + 16, p->pair);
	put64(buf + 24, (uint64_t)p->t0);
	put64(buf + 32, (uint64_t)p->t1);
	put64(buf + 40, (uint64_t)p->gap_ns);
	if (p->type == FQ_PROBE_FOLLOWUP && p->epoch_valid) {
		buf[7] = FQ_PROBE_FLAG_EPOCH;
		put64(buf + 48, (uint64_t)p->epoch_ns);
	}
}

int fq_probe_decode(const uint8_t *buf, size_t len, struct fq_probe *p)
{
	static const uint8_t zeros[16];
	int epoch;

	if (len != FQ_PROBE_SIZE || get32(buf) != FQ_PROBE_MAGIC)
		return -EBADMSG;
	if (buf[4] != FQ_PROBE_VERSION)
		return -EPROTONOSUPPORT;
	/* only a FOLLOWUP may carry the epoch (flag and bytes 48..55) */
	epoch = buf[5] == FQ_PROBE_FOLLOWUP && buf[7] == FQ_PROBE_FLAG_EPOCH;
	if (buf[5] < FQ_PROBE_REQ || buf[5] > FQ_PROBE_TRACE_ECHO ||
	    buf[6] > (buf[5] >= FQ_PROBE_TRACE ? FQ_PROBE_TRACE_TTL_MAX : 1) ||
	    (buf[5] >= FQ_PROBE_TRACE && buf[6] == 0) || (buf[7] != 0 && !epoch) || get32(buf + 12) != 0 ||
	    memcmp(buf + 48 + (epoch ? 8 : 0), zeros, epoch ? 8 : 16) != 0)
		return -EBADMSG;
	if (buf[5] == FQ_PROBE_FOLLOWUP && buf[6] != 0)
		return -EBADMSG;
	p->type = buf[5];
	p->index = buf[6];
	p->session = get32(buf + 8);
	p->pair = get64(buf + 16);
	p->t0 = (int64_t)get64(buf + 24);
	p->t1 = (int64_t)get64(buf + 32);
	p->gap_ns = (int64_t)get64(buf + 40);
	p->epoch_valid = (uint8_t)epoch;
	p->epoch_ns = epoch ? (int64_t)get64(buf + 48) : 0;
	if (p->type == FQ_PROBE_REQ && (p->gap_ns < 0 || p->gap_ns > 1000000000))
		return -EBADMSG;
	return 0;
}

#define IP_MIN  20
#define ICMP_HL 8
#define UDP_HL  8

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The IPv4 header of the packet a router's time-exceeded quotes, if pkt
 * is one and the quote is of protocol proto with its IP header whole (its
 * length in *qihl); NULL otherwise. The caller checks what follows. */
static const uint8_t *time_exceeded_quote(const uint8_t *pkt, size_t len, uint8_t proto, size_t *qihl)
{
	size_t ihl;
	const uint8_t *icmp, *q;

	if (len < IP_MIN || (pkt[0] >> 4) != 4 || (ihl = (size_t)(pkt[0] & 15) * 4) < IP_MIN ||
	    len < ihl + ICMP_HL + IP_MIN || pkt[9] != IPPROTO_ICMP)
		return NULL;
	icmp = pkt + ihl;
	if (icmp[0] != ICMP_TIME_EXCEEDED || icmp[1] != 0)
		return NULL;
	q = icmp + ICMP_HL;
	if ((q[0] >> 4) != 4 || (*qihl = (size_t)(q[0] & 15) * 4) < IP_MIN || q[9] != proto)
		return NULL;
	return q;
}

int fq_trace_icmp_parse(const uint8_t *pkt, size_t len, struct fq_trace_icmp *out)
{
	size_t qihl;
	const uint8_t *q, *udp;
	struct fq_probe pr;

	/* the quoted probe: its IP header ... */
	if (!(q = time_exceeded_quote(pkt, len, IPPROTO_UDP, &qihl)) ||
	    (size_t)(q - pkt) + qihl + UDP_HL + FQ_PROBE_SIZE > len)
		return -EBADMSG;
	udp = q + qihl; /* ... its UDP header and the probe itself */
	if (fq_probe_decode(udp + UDP_HL, FQ_PROBE_SIZE, &pr) < 0 || pr.type != FQ_PROBE_TRACE)
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	memcpy(&out->router, pkt + 12, 4);
	memcpy(&out->src, q + 12, 4);
	memcpy(&out->dst, q + 16, 4);
	out->sport = get16(udp);
	out->dport = get16(udp + 2);
	out->id = pr.pair;
	out->ttl = pr.index;
	return 0;
}

uint16_t fq_inet_checksum(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;

	for (; len > 1; len -= 2, p += 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)(p[0] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

#define TCP_HL      20
#define TCP_ACK     0x10
#define IP_DF       0x4000
#define IP_FRAGMENT 0x1fff /* the offset bits */

int fq_lane_segment_encode(const struct fq_lane_segment *s, uint8_t buf[FQ_LANE_SEGMENT_SIZE])
{
	uint8_t *ip = buf, *tcp = buf + IP_MIN, pseudo[12];
	uint32_t sum = 0;

	if (s->ttl < 1 || s->ttl > FQ_LANE_SEGMENT_TTL_MAX)
		return -EINVAL;
	memset(buf, 0, FQ_LANE_SEGMENT_SIZE);
	ip[0] = 0x45;
	put16(ip + 2, FQ_LANE_SEGMENT_SIZE);
	put16(ip + 4, (uint16_t)s->ttl);
	put16(ip + 6, IP_DF);
	ip[8] = (uint8_t)s->ttl;
	ip[9] = IPPROTO_TCP;
	memcpy(ip + 12, &s->src, 4);
	memcpy(ip + 16, &s->dst, 4);
	put16(ip + 10, fq_inet_checksum(ip, IP_MIN, 0));
	put16(tcp, s->sport);
	put16(tcp + 2, s->dport);
	put32(tcp + 4, s->seq);
	tcp[12] = (TCP_HL / 4) << 4;
	tcp[13] = TCP_ACK;
	/* window (14), urgent pointer (18) and ack (8) stay 0 */
	memcpy(pseudo, &s->src, 4);
	memcpy(pseudo + 4, &s->dst, 4);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_TCP;
	put16(pseudo + 10, TCP_HL);
	for (size_t i = 0; i < sizeof(pseudo); i += 2)
		sum += (uint32_t)(pseudo[i] << 8 | pseudo[i + 1]);
	put16(tcp + 16, fq_inet_checksum(tcp, TCP_HL, sum));
	return 0;
}

#define TCP_QUOTED 8 /* ports and seq: what every router quotes */

int fq_lane_icmp_parse(const uint8_t *pkt, size_t len, struct fq_lane_icmp *out)
{
	size_t qihl;
	const uint8_t *q, *tcp;
	unsigned id;

	/* the quoted segment: its IP header ... */
	if (!(q = time_exceeded_quote(pkt, len, IPPROTO_TCP, &qihl)) || (get16(q + 6) & IP_FRAGMENT) != 0 ||
	    (size_t)(q - pkt) + qihl + TCP_QUOTED > len)
		return -EBADMSG;
	id = get16(q + 4);
	if (id < 1 || id > FQ_LANE_SEGMENT_TTL_MAX)
		return -EBADMSG;
	tcp = q + qihl; /* ... and its TCP header's first 8 bytes */
	memset(out, 0, sizeof(*out));
	memcpy(&out->router, pkt + 12, 4);
	memcpy(&out->src, q + 12, 4);
	memcpy(&out->dst, q + 16, 4);
	out->sport = get16(tcp);
	out->dport = get16(tcp + 2);
	out->seq = get32(tcp + 4);
	out->ttl = id;
	return 0;
}
