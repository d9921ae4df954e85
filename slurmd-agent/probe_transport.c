/* probe_transport: stamp kinds and peer addresses (see probe_transport.h). */
#include "slurmd-agent/probe_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fq_stamp_kind_name(enum fq_stamp_kind k)
{
	switch (k) {
	case FQ_STAMP_USER:
		return "user";
	case FQ_STAMP_KERNEL:
		return "kernel";
	case FQ_STAMP_NIC:
		return "nic";
	default:
		return "none";
	}
}

/* "0x12" or "18", within max: 0 or -EINVAL. */
static int parse_num(const char *s, size_t n, unsigned long max, unsigned long *out)
{
	char tmp[24], *end;

	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (tmp[0] == '-' || tmp[0] == '+')
		return -EINVAL;
	errno = 0;
	*out = strtoul(tmp, &end, 0);
	return errno || *end || *out > max ? -EINVAL : 0;
}

static int parse_ud(const char *s, struct fq_peer_addr *out)
{
	bool have_qpn = false, have_lid = false;

	while (*s) {
		const char *end = strchr(s, '/'), *eq;
		size_t n = end ? (size_t)(end - s) : strlen(s);
		unsigned long v;

		eq = memchr(s, '=', n);
		if (!eq)
			return -EINVAL;
		if (eq - s == 3 && !strncmp(s, "lid", 3)) {
			/* 0 and the multicast range 0xc000.. are no unicast LIDs */
			if (parse_num(eq + 1, n - 4, 0xbfff, &v) < 0 || v == 0)
				return -EINVAL;
			out->lid = (uint16_t)v;
			have_lid = true;
		} else if (eq - s == 3 && !strncmp(s, "qpn", 3)) {
			if (parse_num(eq + 1, n - 4, 0xffffff, &v) < 0 || v < 2)
				return -EINVAL; /* QP0/QP1 are the management QPs */
			out->qpn = (uint32_t)v;
			have_qpn = true;
		} else if (eq - s == 3 && !strncmp(s, "gid", 3)) {
			char tmp[INET6_ADDRSTRLEN];
			if (n - 4 == 0 || n - 4 >= sizeof(tmp))
				return -EINVAL;
			memcpy(tmp, eq + 1, n - 4);
			tmp[n - 4] = '\0';
			if (inet_pton(AF_INET6, tmp, out->gid) != 1)
				return -EINVAL;
			out->has_gid = true;
		} else
			return -EINVAL;
		s = end ? end + 1 : s + n;
		if (end && !*s)
			return -EINVAL; /* trailing '/' */
	}
	return have_qpn && (have_lid || out->has_gid) ? 0 : -EINVAL;
}

int fq_peer_addr_parse(const char *s, uint16_t default_port, struct fq_peer_addr *out)
{
	struct in_addr in;

	memset(out, 0, sizeof(*out));
	if (!s)
		return -EINVAL;
	if (!strncmp(s, "ud:", 3)) {
		out->kind = FQ_PEER_UD;
		if (parse_ud(s + 3, out) == 0)
			return 0;
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	if (inet_pton(AF_INET, s, &in) != 1)
		return -EINVAL;
	out->kind = FQ_PEER_IPV4;
	out->ipv4 = in.s_addr;
	out->port = default_port;
	return 0;
}

const char *fq_peer_addr_format(const struct fq_peer_addr *a, char *buf, size_t len)
{
	char g[INET6_ADDRSTRLEN];

	if (a->kind == FQ_PEER_IPV4) {
		struct in_addr in = {.s_addr = a->ipv4};
		if (!inet_ntop(AF_INET, &in, buf, (socklen_t)len))
			snprintf(buf, len, "?");
	} else if (a->kind == FQ_PEER_UD && a->has_gid && a->lid) {
		inet_ntop(AF_INET6, a->gid, g, sizeof(g)); /* IB with a GRH: both */
		snprintf(buf, len, "ud:lid=%#x/gid=%s/qpn=%#x", a->lid, g, a->qpn);
	} else if (a->kind == FQ_PEER_UD && a->has_gid) {
		inet_ntop(AF_INET6, a->gid, g, sizeof(g));
		snprintf(buf, len, "ud:gid=%s/qpn=%#x", g, a->qpn);
	} else if (a->kind == FQ_PEER_UD)
		snprintf(buf, len, "ud:lid=%#x/qpn=%#x", a->lid, a->qpn);
	else
		snprintf(buf, len, "?");
	return buf;
}

bool fq_peer_addr_matches(const struct fq_peer_addr *configured, const struct fq_peer_addr *seen)
{
	if (configured->kind != seen->kind)
		return false;
	if (configured->kind == FQ_PEER_IPV4)
		return configured->ipv4 == seen->ipv4;
	if (configured->kind != FQ_PEER_UD || configured->qpn != seen->qpn)
		return false;
	/* An IB sender without GRH is known by its LID only; one configured
	 * by GID (RoCE, routed IB) sends with a GRH carrying it. */
	if (configured->has_gid)
		return seen->has_gid && !memcmp(configured->gid, seen->gid, 16);
	return configured->lid == seen->lid;
}

bool fq_peer_addr_equal(const struct fq_peer_addr *a, const struct fq_peer_addr *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == FQ_PEER_IPV4)
		return a->ipv4 == b->ipv4 && a->port == b->port;
	return a->qpn == b->qpn && a->lid == b->lid && a->has_gid == b->has_gid &&
	       (!a->has_gid || !memcmp(a->gid, b->gid, 16));
}
