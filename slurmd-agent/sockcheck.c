/* sockcheck: see sockcheck.h. */
#include "slurmd-agent/sockcheck.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* "IP:port" / "[IPv6]:port" into family, 16 address bytes and port. */
static int parse_end(const char *s, int *family, uint32_t addr[4], uint16_t *port)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long p;
	size_t n;

	if (!colon || colon == s)
		return -EINVAL;
	n = (size_t)(colon - s);
	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']')
			return -EINVAL;
		s++;
		n -= 2;
	}
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = 0;
	if (colon[1] < '0' || colon[1] > '9') /* strtoul would take blanks and signs */
		return -EINVAL;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (*end || errno || p == 0 || p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, host, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, host, addr) == 1)
		*family = AF_INET6;
	else
		return -EINVAL;
	return 0;
}

int fq_tcp_socket_uid(const char *local, const char *remote, uid_t *uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
	    .nlh = {.nlmsg_len = sizeof(req),
		    .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		    .nlmsg_flags = NLM_F_REQUEST},
	    .r = {.sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u},
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval tmo = {.tv_usec = 200000};
	union {
		struct nlmsghdr h;
		char buf[8192];
	} ans;
	const struct inet_diag_msg *m;
	int lfam, rfam, fd, rc;
	uint16_t lport, rport;
	ssize_t n;

	if (parse_end(local, &lfam, req.r.id.idiag_src, &lport) ||
	    parse_end(remote, &rfam, req.r.id.idiag_dst, &rport) || lfam != rfam)
		return -EINVAL;
	req.r.sdiag_family = (uint8_t)lfam;
	req.r.id.idiag_sport = htons(lport);
	req.r.id.idiag_dport = htons(rport);
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) < 0 ||
	    sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	n = recv(fd, &ans, sizeof(ans), 0);
	rc = n < 0 ? -errno : -EPROTO;
	close(fd);
	if (n < (ssize_t)sizeof(struct nlmsghdr) || !NLMSG_OK(&ans.h, (size_t)n))
		return rc;
	if (ans.h.nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(&ans.h);

		return ans.h.nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error < 0 ? e->error : -EPROTO;
	}
	if (ans.h.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    ans.h.nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return -EPROTO;
	m = NLMSG_DATA(&ans.h);
	/* a connection closed (TIME_WAIT, CLOSE) or a listener is held by no one */
	if (m->idiag_state == TCP_TIME_WAIT || m->idiag_state == TCP_CLOSE || m->idiag_state == TCP_LISTEN)
		return -ENOENT;
	*uid = m->idiag_uid;
	return 0;
}

static unsigned place_of(const char *local, const char *remote)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (const char *p = local; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	h = (h ^ '>') * 16777619u;
	for (const char *p = remote; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h & (FQ_SOCKCHECK_SLOTS - 1);
}

/* The pair's slot if remembered; else the slot to ask into: an empty or
 * expired one among its places, else the least recently used. */
static struct fq_sockcheck_slot *slot_for(struct fq_sockcheck *c, const char *local, const char *remote,
					  int64_t now_ns, bool *found)
{
	unsigned at = place_of(local, remote);
	struct fq_sockcheck_slot *free = NULL, *oldest = NULL;

	for (unsigned i = 0; i < FQ_SOCKCHECK_PROBE; i++) {
		struct fq_sockcheck_slot *s = &c->slot[(at + i) & (FQ_SOCKCHECK_SLOTS - 1)];

		if (s->until_ns > now_ns && !strcmp(s->local, local) && !strcmp(s->remote, remote)) {
			*found = true;
			return s;
		}
		if (s->until_ns <= now_ns)
			free = free ? free : s;
		else if (!oldest || s->until_ns < oldest->until_ns)
			oldest = s;
	}
	*found = false;
	if (free)
		return free;
	c->evicted++;
	return oldest;
}

static int ask_tcp(void *ctx, const char *local, const char *remote, uid_t *uid)
{
	(void)ctx;
	return fq_tcp_socket_uid(local, remote, uid);
}

enum fq_lane_hold fq_sockcheck_lane(struct fq_sockcheck *c, const char *local, const char *remote, uid_t uid,
				    int64_t now_ns)
{
	return fq_sockcheck_claim(c, local, remote, uid, now_ns, ask_tcp, NULL);
}

enum fq_lane_hold fq_sockcheck_claim(struct fq_sockcheck *c, const char *local, const char *remote, uid_t uid,
				     int64_t now_ns, fq_claim_ask ask, void *ctx)
{
	struct fq_sockcheck_slot *s;
	bool found;
	uid_t owner;
	int rc;

	if (strlen(local) >= sizeof(s->local) || strlen(remote) >= sizeof(s->remote))
		return FQ_LANE_UNCHECKED;
	s = slot_for(c, local, remote, now_ns, &found);
	if (found) {
		c->remembered++;
	} else {
		c->asked++;
		rc = ask(ctx, local, remote, &owner);
		if (rc < 0 && rc != -ENOENT)
			return FQ_LANE_UNCHECKED; /* nothing remembered: the next report asks again */
		snprintf(s->local, sizeof(s->local), "%s", local);
		snprintf(s->remote, sizeof(s->remote), "%s", remote);
		s->kernel = rc == 0 ? FQ_LANE_HELD : FQ_LANE_CLOSED;
		s->uid = rc == 0 ? owner : 0;
		s->until_ns = now_ns + (rc == 0 ? FQ_SOCKCHECK_YES_NS : FQ_SOCKCHECK_NO_NS);
	}
	if (s->kernel == FQ_LANE_CLOSED)
		return FQ_LANE_CLOSED;
	if (s->uid != uid)
		return FQ_LANE_OTHERS;
	s->until_ns = now_ns + FQ_SOCKCHECK_YES_NS; /* its holder still reports it */
	return FQ_LANE_HELD;
}

const char *fq_lane_hold_name(enum fq_lane_hold h)
{
	switch (h) {
	case FQ_LANE_HELD:
		return "held";
	case FQ_LANE_CLOSED:
		return "closed";
	case FQ_LANE_OTHERS:
		return "another uid's";
	case FQ_LANE_UNCHECKED:
		break;
	}
	return "unchecked";
}
