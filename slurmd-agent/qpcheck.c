/* qpcheck: see qpcheck.h. */
#include "slurmd-agent/qpcheck.h"

#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "slurmd-agent/nics.h"

/* The kernel's enum ib_qp_type and enum ib_qp_state values (RES_TYPE,
 * RES_STATE; iproute2's rdma tool names them in the same order). */
#define QP_TYPE_RC   2
#define QP_STATE_RTS 3

#define ATTR_MAX RDMA_NLDEV_ATTR_MAX

/* The next attribute of [*p, *p + *left): 1 and *a, 0 at the end, or
 * -EPROTO for one that does not fit. */
static int next_attr(const uint8_t **p, size_t *left, const uint8_t **a)
{
	struct nlattr h;
	size_t step;

	if (*left < (size_t)NLA_HDRLEN)
		return *left ? -EPROTO : 0;
	memcpy(&h, *p, sizeof(h));
	if (h.nla_len < NLA_HDRLEN || h.nla_len > *left)
		return -EPROTO;
	*a = *p;
	step = (size_t)NLA_ALIGN(h.nla_len) < *left ? (size_t)NLA_ALIGN(h.nla_len) : *left;
	*p += step;
	*left -= step;
	return 1;
}

static uint16_t attr_type(const uint8_t *a)
{
	uint16_t t;

	memcpy(&t, a + 2, sizeof(t));
	return t & NLA_TYPE_MASK;
}

/* A checked attribute's payload length. */
static size_t attr_len(const uint8_t *a)
{
	uint16_t n;

	memcpy(&n, a, sizeof(n));
	return (size_t)n - NLA_HDRLEN;
}

/* The attributes in [p, p + len) into tb (the last of each type below
 * ATTR_MAX; others skipped): 0, or -EPROTO. */
static int attrs(const uint8_t *p, size_t len, const uint8_t *tb[ATTR_MAX])
{
	const uint8_t *a;
	int rc;

	memset(tb, 0, sizeof(tb[0]) * ATTR_MAX);
	while ((rc = next_attr(&p, &len, &a)) == 1)
		if (attr_type(a) < ATTR_MAX)
			tb[attr_type(a)] = a;
	return rc;
}

/* An attribute's value of exactly its type's size: 0, or -EPROTO. */
static int get_u32(const uint8_t *a, uint32_t *v)
{
	if (attr_len(a) != sizeof(*v))
		return -EPROTO;
	memcpy(v, a + NLA_HDRLEN, sizeof(*v));
	return 0;
}

static int get_u8(const uint8_t *a, uint8_t *v)
{
	if (attr_len(a) != 1)
		return -EPROTO;
	*v = a[NLA_HDRLEN];
	return 0;
}

/* A string attribute equal to s (NUL-terminated inside it): 1, 0 if not,
 * -EPROTO if it is not a string. */
static int str_is(const uint8_t *a, const char *s)
{
	size_t n = attr_len(a);
	const char *v = (const char *)a + NLA_HDRLEN;

	if (!n || !memchr(v, 0, n))
		return -EPROTO;
	return strcmp(v, s) == 0;
}

/* Walk the netlink messages of one datagram: each of type `type` goes to
 * msg(arg, payload, len) (its return, when not 0, ends the walk); the
 * rest as fq_qp_scan_feed says. */
static int walk(const void *buf, size_t len, uint16_t type, uint32_t seq, size_t *bytes, bool *intr,
		int (*msg)(void *arg, const uint8_t *p, size_t n), void *arg)
{
	const uint8_t *p = buf;

	while (len) {
		struct nlmsghdr h;
		int32_t err;
		int rc;

		if (len < NLMSG_HDRLEN)
			return -EPROTO;
		memcpy(&h, p, sizeof(h));
		if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > len || h.nlmsg_seq != seq)
			return -EPROTO;
		*bytes += h.nlmsg_len;
		if (*bytes > FQ_QPCHECK_MAX_BYTES)
			return -E2BIG;
		if (h.nlmsg_flags & NLM_F_DUMP_INTR)
			*intr = true;
		if (h.nlmsg_type == NLMSG_DONE || h.nlmsg_type == NLMSG_ERROR) {
			/* NLMSG_DONE's payload is the dump's error, NLMSG_ERROR's starts with it */
			if (h.nlmsg_len < NLMSG_HDRLEN + sizeof(err))
				return h.nlmsg_type == NLMSG_DONE ? 1 : -EPROTO;
			memcpy(&err, p + NLMSG_HDRLEN, sizeof(err));
			return err < 0 ? (err < -4095 ? -EPROTO : err) : 1;
		}
		if (h.nlmsg_type == NLMSG_OVERRUN)
			return -ENOBUFS;
		if (h.nlmsg_type != NLMSG_NOOP) {
			if (h.nlmsg_type != type)
				return -EPROTO;
			rc = msg(arg, p + NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN);
			if (rc)
				return rc;
		}
		if (NLMSG_ALIGN(h.nlmsg_len) >= len)
			break;
		p += NLMSG_ALIGN(h.nlmsg_len);
		len -= NLMSG_ALIGN(h.nlmsg_len);
	}
	return 0;
}

/* One QP's attributes (a dump's RDMA_NLDEV_ATTR_RES_QP_ENTRY, or the
 * whole answer of a single QP's get): 1 if it is the claim's QP (s then
 * says what it is), 0 if another, -EPROTO if malformed. */
static int qp_entry(struct fq_qp_scan *s, const uint8_t *const tb[ATTR_MAX])
{
	uint32_t lqpn, rqpn = 0, port = 0, pid = 0;
	uint8_t type, state;

	if (!tb[RDMA_NLDEV_ATTR_RES_LQPN] || !tb[RDMA_NLDEV_ATTR_RES_TYPE] ||
	    !tb[RDMA_NLDEV_ATTR_RES_STATE] || get_u32(tb[RDMA_NLDEV_ATTR_RES_LQPN], &lqpn) ||
	    get_u8(tb[RDMA_NLDEV_ATTR_RES_TYPE], &type) || get_u8(tb[RDMA_NLDEV_ATTR_RES_STATE], &state) ||
	    (tb[RDMA_NLDEV_ATTR_RES_RQPN] && get_u32(tb[RDMA_NLDEV_ATTR_RES_RQPN], &rqpn)) ||
	    (tb[RDMA_NLDEV_ATTR_PORT_INDEX] && get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX], &port)) ||
	    (tb[RDMA_NLDEV_ATTR_RES_PID] && get_u32(tb[RDMA_NLDEV_ATTR_RES_PID], &pid)) ||
	    (tb[RDMA_NLDEV_ATTR_RES_PID] && tb[RDMA_NLDEV_ATTR_RES_KERN_NAME]))
		return -EPROTO;
	if (++s->entries > FQ_QPCHECK_MAX_ENTRIES)
		return -E2BIG;
	if (lqpn != s->claim->lqpn)
		return 0;
	s->found = true;
	s->connected = type == QP_TYPE_RC && state == QP_STATE_RTS && tb[RDMA_NLDEV_ATTR_RES_RQPN] &&
		       rqpn == s->claim->rqpn && tb[RDMA_NLDEV_ATTR_PORT_INDEX] && port == s->claim->port;
	/* a user QP's creator whose task is gone has neither */
	s->kernel = tb[RDMA_NLDEV_ATTR_RES_KERN_NAME] != NULL;
	s->pid = pid;
	return 1;
}

/* One message of a QP dump (a device and a table of its QPs), or the
 * answer of a single QP's get (a device and the QP's attributes). */
static int qp_message(void *arg, const uint8_t *p, size_t n)
{
	struct fq_qp_scan *s = arg;
	const uint8_t *tb[ATTR_MAX], *line[ATTR_MAX], *table, *e;
	uint32_t index;
	size_t left;
	int rc;

	if (attrs(p, n, tb) < 0 || !tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME] ||
	    get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX], &index))
		return -EPROTO;
	rc = str_is(tb[RDMA_NLDEV_ATTR_DEV_NAME], s->claim->dev);
	if (rc < 0)
		return rc;
	table = tb[RDMA_NLDEV_ATTR_RES_QP];
	if (s->single) /* the QP asked for, on the device asked, or nothing */
		return table || !rc || index != s->dev_index || qp_entry(s, tb) != 1 ? -EPROTO : 1;
	if (!table)
		return -EPROTO;
	if (!rc || index != s->dev_index) /* another device's QPs: none is the lane's */
		return 0;
	left = attr_len(table);
	p = table + NLA_HDRLEN;
	while ((rc = next_attr(&p, &left, &e)) == 1) {
		if (attr_type(e) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
			continue;
		rc = attrs(e + NLA_HDRLEN, attr_len(e), line);
		if (rc == 0)
			rc = qp_entry(s, line);
		if (rc)
			return rc;
	}
	return rc;
}

int fq_qp_scan_feed(struct fq_qp_scan *s, const void *buf, size_t len)
{
	return walk(buf, len, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET), s->seq, &s->bytes,
		    &s->interrupted, qp_message, s);
}

static int dev_message(void *arg, const uint8_t *p, size_t n)
{
	struct fq_rdma_dev_scan *s = arg;
	const uint8_t *tb[ATTR_MAX];
	uint32_t index;
	int rc;

	if (attrs(p, n, tb) < 0 || !tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME] ||
	    get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX], &index))
		return -EPROTO;
	rc = str_is(tb[RDMA_NLDEV_ATTR_DEV_NAME], s->name);
	if (rc == 1) {
		s->found = true;
		s->index = index;
	}
	return rc < 0 ? rc : 0; /* read to its end: the socket asks again */
}

int fq_rdma_dev_feed(struct fq_rdma_dev_scan *s, const void *buf, size_t len)
{
	bool intr = false;

	return walk(buf, len, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), s->seq, &s->bytes, &intr,
		    dev_message, s);
}

int fq_pid_uid(pid_t pid, uid_t *uid)
{
	char path[64], line[256];
	unsigned long real, eff;
	FILE *f;
	int rc = -EPROTO;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %lu %lu", &real, &eff) == 2) {
			*uid = (uid_t)eff;
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

int fq_qp_scan_answer(const struct fq_qp_scan *s, int rc, int (*uid_of)(pid_t, uid_t *), uid_t *uid)
{
	if (rc < 0 && s->single && (rc == -ENOENT || rc == -EAGAIN))
		return -ENOENT; /* no such QP (in our pid namespace), or on another port */
	if (rc < 0)
		return rc == -ENOENT ? -ENODEV : rc;
	if (rc == 0 || (!s->found && s->interrupted))
		return -EAGAIN;
	if (!s->found || !s->connected)
		return -ENOENT;
	if (s->kernel) {
		*uid = (uid_t)-1;
		return 0;
	}
	return uid_of((pid_t)s->pid, uid);
}

/* A request: cmd with flags and up to three u32 attributes. */
struct request {
	struct nlmsghdr h;
	struct {
		struct nlattr a;
		uint32_t v;
	} attr[3];
};

static void request_u32(struct request *r, uint16_t type, uint32_t v)
{
	unsigned i = (r->h.nlmsg_len - NLMSG_HDRLEN) / sizeof(r->attr[0]);

	r->attr[i].a = (struct nlattr){.nla_len = NLA_HDRLEN + sizeof(v), .nla_type = type};
	r->attr[i].v = v;
	r->h.nlmsg_len += sizeof(r->attr[0]);
}

/* Send r and feed the answer's datagrams to feed(scan) until it returns
 * non-zero (that), or none comes within the socket's timeout (0). */
static int exchange(int fd, struct request *r, int (*feed)(void *, const void *, size_t), void *scan,
		    uint8_t *buf, size_t buflen)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	int rc = 0;

	if (sendto(fd, r, r->h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	while (rc == 0) {
		ssize_t n = recv(fd, buf, buflen, MSG_TRUNC);

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		if (n == 0 || (size_t)n > buflen)
			return -EMSGSIZE;
		rc = feed(scan, buf, (size_t)n);
	}
	return rc;
}

static int feed_dev(void *s, const void *buf, size_t len)
{
	return fq_rdma_dev_feed(s, buf, len);
}

static int feed_qp(void *s, const void *buf, size_t len)
{
	return fq_qp_scan_feed(s, buf, len);
}

#define ANSWER_BUF (64 * 1024) /* a dump's datagrams are at most 32 KiB */
#define TYPE(cmd)  RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd)

/* q's device index, then q's QP: the one QP asked for (kernels from 5.1),
 * else (a kernel that refuses that: -EINVAL, -EOPNOTSUPP) the device's
 * QPs dumped until it turns up. */
static int ask(int fd, const struct fq_qp_claim *q, uint8_t *buf, uid_t *uid)
{
	struct fq_rdma_dev_scan ds = {.name = q->dev, .seq = 1};
	struct fq_qp_scan qs = {.claim = q, .seq = 2, .single = true};
	struct request r = {.h = {.nlmsg_len = NLMSG_HDRLEN,
				  .nlmsg_type = TYPE(RDMA_NLDEV_CMD_GET),
				  .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
				  .nlmsg_seq = ds.seq}};
	int rc = exchange(fd, &r, feed_dev, &ds, buf, ANSWER_BUF);

	if (rc <= 0)
		return rc < 0 ? rc : -EAGAIN;
	if (!ds.found)
		return -ENODEV;
	qs.dev_index = ds.index;
	r = (struct request){.h = {.nlmsg_len = NLMSG_HDRLEN,
				   .nlmsg_type = TYPE(RDMA_NLDEV_CMD_RES_QP_GET),
				   .nlmsg_flags = NLM_F_REQUEST,
				   .nlmsg_seq = qs.seq}};
	request_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, ds.index);
	request_u32(&r, RDMA_NLDEV_ATTR_PORT_INDEX, q->port);
	request_u32(&r, RDMA_NLDEV_ATTR_RES_LQPN, q->lqpn);
	rc = exchange(fd, &r, feed_qp, &qs, buf, ANSWER_BUF);
	if (rc != -EINVAL && rc != -EOPNOTSUPP)
		return fq_qp_scan_answer(&qs, rc, fq_pid_uid, uid);
	qs = (struct fq_qp_scan){.claim = q, .dev_index = ds.index, .seq = 3};
	r = (struct request){.h = {.nlmsg_len = NLMSG_HDRLEN,
				   .nlmsg_type = TYPE(RDMA_NLDEV_CMD_RES_QP_GET),
				   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
				   .nlmsg_seq = qs.seq}};
	request_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, ds.index);
	rc = exchange(fd, &r, feed_qp, &qs, buf, ANSWER_BUF);
	return fq_qp_scan_answer(&qs, rc, fq_pid_uid, uid);
}

int fq_rdma_qp_uid(const struct fq_qp_claim *q, uid_t *uid)
{
	struct timeval tmo = {.tv_usec = 200000};
	uint8_t *buf;
	int fd, rc;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	buf = malloc(ANSWER_BUF);
	if (!buf) {
		rc = -ENOMEM;
		goto out_fd;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) < 0)
		rc = -errno;
	else
		rc = ask(fd, q, buf, uid);
	free(buf);
out_fd:
	close(fd); /* a dump left unread goes with its socket */
	return rc;
}

struct qp_ask {
	const struct fq_qp_lane *l;
	struct fq_qpcheck_counts *counts;
};

static int ask_qp(void *ctx, const char *local, const char *remote, uid_t *uid)
{
	struct qp_ask *a = ctx;
	struct fq_qp_claim q = {.lqpn = a->l->lqpn, .rqpn = a->l->rqpn};
	struct fq_ib_port port;
	int rc;

	(void)local, (void)remote;
	if (fq_nics_ib_port(a->l->sysfs, a->l->nic, &port) < 0 || strlen(port.dev) >= sizeof(q.dev))
		return -ENODEV;
	snprintf(q.dev, sizeof(q.dev), "%s", port.dev);
	q.port = port.port;
	a->counts->asked++;
	rc = fq_rdma_qp_uid(&q, uid);
	a->counts->cut += rc == -E2BIG;
	return rc;
}

enum fq_lane_hold fq_qpcheck_lane(struct fq_sockcheck *c, const struct fq_qp_lane *l, uid_t uid,
				  int64_t now_ns, struct fq_qpcheck_counts *counts)
{
	struct qp_ask a = {l, counts};
	char local[56], remote[56];

	if (!l->lqpn || !l->rqpn || !l->nic || !*l->nic ||
	    snprintf(local, sizeof(local), "qp:%u@%s", l->lqpn, l->nic) >= (int)sizeof(local))
		return FQ_LANE_UNCHECKED;
	snprintf(remote, sizeof(remote), "qp:%u", l->rqpn);
	return fq_sockcheck_claim(c, local, remote, uid, now_ns, ask_qp, &a);
}
