/* Unit tests of slurmd-agent/qpcheck.h: the RDMA netlink answers (device
 * dumps, QP dumps over several datagrams, the single QP's answer) as the
 * kernel lays them out, crafted here, each verdict on an IB lane's QP
 * claim; malformed and truncated messages; the caps; the remembered
 * answers (sockcheck's table); and the kernel asked for real, which
 * without RDMA netlink or a device says it cannot answer. */
#include <dirent.h>
#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurmd-agent/qpcheck.h"
#include "tests/unit/tap.h"

#define QP_RC   2
#define QP_UC   3
#define QP_RTR  2
#define QP_RTS  3
#define QP_ERR  6
#define CMD_QP  RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET)
#define CMD_DEV RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)

/* A datagram being written: messages, their attributes, nests. */
struct dgram {
	uint8_t b[16384];
	size_t len, msg, nest[4];
	int depth;
};

static void msg_begin(struct dgram *d, uint16_t type, uint16_t flags, uint32_t seq)
{
	struct nlmsghdr h = {.nlmsg_type = type, .nlmsg_flags = flags, .nlmsg_seq = seq};

	d->msg = d->len;
	memcpy(d->b + d->len, &h, sizeof(h));
	d->len += NLMSG_HDRLEN;
}

static void msg_end(struct dgram *d)
{
	uint32_t n = (uint32_t)(d->len - d->msg);

	memcpy(d->b + d->msg, &n, sizeof(n));
	d->len = NLMSG_ALIGN(d->len);
}

static void put(struct dgram *d, uint16_t type, const void *v, size_t n)
{
	struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + n), .nla_type = type};

	memcpy(d->b + d->len, &a, sizeof(a));
	if (n)
		memcpy(d->b + d->len + NLA_HDRLEN, v, n);
	d->len += NLA_ALIGN(NLA_HDRLEN + n);
}

static void put_u32(struct dgram *d, uint16_t type, uint32_t v)
{
	put(d, type, &v, sizeof(v));
}

static void put_u8(struct dgram *d, uint16_t type, uint8_t v)
{
	put(d, type, &v, 1);
}

static void put_str(struct dgram *d, uint16_t type, const char *s)
{
	put(d, type, s, strlen(s) + 1);
}

static void nest_begin(struct dgram *d, uint16_t type)
{
	d->nest[d->depth++] = d->len;
	put(d, type | NLA_F_NESTED, NULL, 0);
}

static void nest_end(struct dgram *d)
{
	size_t at = d->nest[--d->depth];
	uint16_t n = (uint16_t)(d->len - at);

	memcpy(d->b + at, &n, sizeof(n));
}

/* One QP as the kernel lists it: pid 0 puts a kernel consumer's name. */
struct qp {
	uint32_t lqpn, rqpn, port, pid;
	uint8_t type, state;
	bool no_rqpn, no_port, no_owner;
};

static void put_qp_attrs(struct dgram *d, const struct qp *q)
{
	if (!q->no_port)
		put_u32(d, RDMA_NLDEV_ATTR_PORT_INDEX, q->port);
	put_u32(d, RDMA_NLDEV_ATTR_RES_LQPN, q->lqpn);
	if (!q->no_rqpn)
		put_u32(d, RDMA_NLDEV_ATTR_RES_RQPN, q->rqpn);
	put_u32(d, RDMA_NLDEV_ATTR_RES_SQ_PSN, 0x1234);
	put_u8(d, RDMA_NLDEV_ATTR_RES_TYPE, q->type);
	put_u8(d, RDMA_NLDEV_ATTR_RES_STATE, q->state);
	if (q->no_owner)
		return;
	if (q->pid)
		put_u32(d, RDMA_NLDEV_ATTR_RES_PID, q->pid);
	else
		put_str(d, RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core");
}

/* A QP dump's message: device (index, name) and its QPs. */
static void qp_msg(struct dgram *d, uint32_t seq, uint32_t index, const char *dev, const struct qp *qps,
		   int n)
{
	msg_begin(d, CMD_QP, NLM_F_MULTI, seq);
	put_u32(d, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	put_str(d, RDMA_NLDEV_ATTR_DEV_NAME, dev);
	nest_begin(d, RDMA_NLDEV_ATTR_RES_QP);
	for (int i = 0; i < n; i++) {
		nest_begin(d, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
		put_qp_attrs(d, &qps[i]);
		nest_end(d);
	}
	nest_end(d);
	msg_end(d);
}

static void done_msg(struct dgram *d, uint32_t seq, int32_t err)
{
	msg_begin(d, NLMSG_DONE, NLM_F_MULTI, seq);
	memcpy(d->b + d->len, &err, sizeof(err));
	d->len += sizeof(err);
	msg_end(d);
}

static void error_msg(struct dgram *d, uint32_t seq, int32_t err)
{
	struct nlmsgerr e = {.error = err};

	msg_begin(d, NLMSG_ERROR, 0, seq);
	memcpy(d->b + d->len, &e, sizeof(e));
	d->len += sizeof(e);
	msg_end(d);
}

static const struct fq_qp_claim claim = {.dev = "mlx5_1", .port = 1, .lqpn = 0x12, .rqpn = 0x22};

/* pids 100-199 are uid 1000's, 200-299 uid 2000's; others unknown */
static int uid_table(pid_t pid, uid_t *uid)
{
	if (pid >= 100 && pid < 300) {
		*uid = pid < 200 ? 1000 : 2000;
		return 0;
	}
	return -ESRCH;
}

/* Feed the datagrams in turn (stopping at the first non-zero return) and
 * give the answer: its rc, *uid, and the scan in *out. */
static int scan(const struct dgram *d, int n, bool single, uid_t *uid, struct fq_qp_scan *out)
{
	struct fq_qp_scan s = {.claim = &claim, .dev_index = 3, .seq = 7, .single = single};
	int rc = 0;

	for (int i = 0; i < n && rc == 0; i++)
		rc = fq_qp_scan_feed(&s, d[i].b, d[i].len);
	if (out)
		*out = s;
	*uid = 4242;
	return fq_qp_scan_answer(&s, rc, uid_table, uid);
}

/* The verdict of one dump (one datagram, then NLMSG_DONE) listing qps. */
static int verdict_of(const struct qp *qps, int n, uid_t *uid)
{
	static struct dgram d[2];

	memset(d, 0, sizeof(d));
	qp_msg(&d[0], 7, 3, "mlx5_1", qps, n);
	done_msg(&d[1], 7, 0);
	return scan(d, 2, false, uid, NULL);
}

/* The lane's QP as it should be (RC, RTS, connected to its remote QP on
 * port 1, made by pid 150 of uid 1000), with one assignment changed: a
 * pointer to a copy of its own. */
static struct qp good_qp(void)
{
	return (struct qp){.lqpn = 0x12, .rqpn = 0x22, .port = 1, .pid = 150, .type = QP_RC, .state = QP_RTS};
}
#define QP(assign)                                                                                           \
	({                                                                                                   \
		static struct qp q_;                                                                         \
		q_ = good_qp();                                                                              \
		q_.assign;                                                                                   \
		&q_;                                                                                         \
	})

static void test_dump_verdicts(void)
{
	static struct dgram d[3];
	struct fq_qp_scan s;
	uid_t uid;
	int rc;
	struct qp others[] = {
	    {.lqpn = 0x10, .port = 1, .pid = 0, .type = 4, .state = QP_RTS},
	    {.lqpn = 0x11, .rqpn = 0x99, .port = 1, .pid = 250, .type = QP_RC, .state = QP_RTS},
	};
	struct qp mine = *QP(pid = 150);

	memset(d, 0, sizeof(d));
	qp_msg(&d[0], 7, 3, "mlx5_1", others, 2);
	qp_msg(&d[1], 7, 3, "mlx5_1", &mine, 1);
	done_msg(&d[2], 7, 0);
	rc = scan(d, 1, false, &uid, &s);
	ok(rc == -EAGAIN && s.entries == 2 && !s.found,
	   "the first datagram, without the lane's QP: read on (answer so far %d, %zu QPs)", rc, s.entries);
	rc = scan(d, 3, false, &uid, &s);
	ok(rc == 0 && uid == 1000 && s.found && s.connected && s.pid == 150 && s.entries == 3,
	   "the second has it, RC, RTS, connected to the lane's remote QP: its creator's uid (%d, uid %u)",
	   rc, (unsigned)uid);
	ok(fq_qp_scan_feed(&s, d[2].b, d[2].len) == 1, "NLMSG_DONE ends a dump");

	mine.pid = 250;
	rc = verdict_of(&mine, 1, &uid);
	ok(rc == 0 && uid == 2000,
	   "another uid's process made it: that uid (the caller's verdict: another's)");
	rc = verdict_of(others, 2, &uid);
	is_int(rc, -ENOENT, "a dump that ends without the lane's QP: no such QP");
	rc = verdict_of(QP(type = QP_UC), 1, &uid);
	is_int(rc, -ENOENT, "the QP is UC, not RC: no");
	rc = verdict_of(QP(state = QP_RTR), 1, &uid);
	is_int(rc, -ENOENT, "the QP is in RTR, not RTS: no");
	rc = verdict_of(QP(state = QP_ERR), 1, &uid);
	is_int(rc, -ENOENT, "the QP is in error: no");
	rc = verdict_of(QP(rqpn = 0x23), 1, &uid);
	is_int(rc, -ENOENT, "connected to another QP than the lane says: no");
	rc = verdict_of(QP(no_rqpn = true), 1, &uid);
	is_int(rc, -ENOENT, "connected to no QP: no");
	rc = verdict_of(QP(port = 2), 1, &uid);
	is_int(rc, -ENOENT, "on the device's other port: no");
	rc = verdict_of(QP(no_port = true), 1, &uid);
	is_int(rc, -ENOENT, "on no port: no");
	rc = verdict_of(QP(pid = 0), 1, &uid);
	ok(rc == 0 && uid == (uid_t)-1, "a kernel consumer's QP: held by no user (uid -1)");
	rc = verdict_of(QP(no_owner = true), 1, &uid);
	is_int(rc, -ESRCH, "a QP whose creating task is gone (no pid): no answer");
	rc = verdict_of(QP(pid = 777), 1, &uid);
	is_int(rc, -ESRCH, "a creator whose uid cannot be read: no answer");

	/* the same QP number on another device, or a stale index */
	memset(d, 0, sizeof(d));
	qp_msg(&d[0], 7, 1, "mlx5_0", QP(pid = 150), 1);
	qp_msg(&d[0], 7, 5, "mlx5_1", QP(pid = 150), 1);
	done_msg(&d[1], 7, 0);
	rc = scan(d, 2, false, &uid, &s);
	ok(rc == -ENOENT && s.entries == 0,
	   "the QP on another device (by name, by index) is not the lane's (%d)", rc);

	memset(d, 0, sizeof(d));
	qp_msg(&d[0], 7, 3, "mlx5_1", others, 2);
	((struct nlmsghdr *)d[0].b)->nlmsg_flags |= NLM_F_DUMP_INTR;
	done_msg(&d[1], 7, 0);
	is_int(scan(d, 2, false, &uid, NULL), -EAGAIN,
	       "an interrupted dump without the QP: no answer, not a no");
	is_int(scan(d, 1, false, &uid, NULL), -EAGAIN, "a dump cut short (no more in time): no answer");
}

static void test_kernel_errors(void)
{
	static struct dgram d[2];
	uid_t uid;

	memset(d, 0, sizeof(d));
	error_msg(&d[0], 7, -EOPNOTSUPP);
	is_int(scan(d, 1, false, &uid, NULL), -EOPNOTSUPP, "NLMSG_ERROR: the kernel's error, no answer");
	is_int(scan(d, 1, true, &uid, NULL), -EOPNOTSUPP, "... also to a single QP's get (the caller dumps)");
	memset(d, 0, sizeof(d));
	error_msg(&d[0], 7, -ENOENT);
	is_int(scan(d, 1, false, &uid, NULL), -ENODEV,
	       "a dump's -ENOENT (no such device): no answer, not a no");
	is_int(scan(d, 1, true, &uid, NULL), -ENOENT, "a single QP's get's -ENOENT: no such QP");
	memset(d, 0, sizeof(d));
	error_msg(&d[0], 7, -EAGAIN);
	is_int(scan(d, 1, true, &uid, NULL), -ENOENT, "... its -EAGAIN: the QP is on another port");
	memset(d, 0, sizeof(d));
	done_msg(&d[0], 7, -EINTR);
	is_int(scan(d, 1, false, &uid, NULL), -EINTR, "NLMSG_DONE carrying an error: that error");
	memset(d, 0, sizeof(d));
	msg_begin(&d[0], NLMSG_ERROR, 0, 7);
	msg_end(&d[0]);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "NLMSG_ERROR without its error: malformed");
}

static void test_single(void)
{
	static struct dgram d[1];
	struct fq_qp_scan s;
	uid_t uid;
	int rc;

	memset(d, 0, sizeof(d));
	msg_begin(&d[0], CMD_QP, 0, 7);
	put_u32(&d[0], RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	put_qp_attrs(&d[0], QP(pid = 120));
	msg_end(&d[0]);
	rc = scan(d, 1, true, &uid, &s);
	ok(rc == 0 && uid == 1000 && s.entries == 1,
	   "a single QP's answer, its attributes at the top: held (%d)", rc);
	memset(d, 0, sizeof(d));
	msg_begin(&d[0], CMD_QP, 0, 7);
	put_u32(&d[0], RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	put_qp_attrs(&d[0], QP(lqpn = 0x13));
	msg_end(&d[0]);
	is_int(scan(d, 1, true, &uid, NULL), -EPROTO, "a single answer naming another QP: malformed");
	memset(d, 0, sizeof(d));
	qp_msg(&d[0], 7, 3, "mlx5_1", QP(pid = 150), 1);
	is_int(scan(d, 1, true, &uid, NULL), -EPROTO, "a dump's table where one QP was asked: malformed");
}

/* Each a copy of a good dump (one message, the lane's QP) broken one way. */
static void test_malformed(void)
{
	static struct dgram good[1], d[1];
	size_t entry;
	uint16_t v16;
	uid_t uid;

	memset(good, 0, sizeof(good));
	qp_msg(&good[0], 7, 3, "mlx5_1", QP(pid = 150), 1);
	is_int(scan(good, 1, false, &uid, NULL), 0, "the good dump is held");
	/* the nest of the one entry: after header, index (8), name (12), table header (4) */
	entry = NLMSG_HDRLEN + 8 + 12 + NLA_HDRLEN;

	d[0] = good[0];
	d[0].len -= 6;
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "a message longer than its datagram (truncated)");
	memset(d, 0, sizeof(d));
	qp_msg(&d[0], 7, 3, "mlx5_1", QP(lqpn = 0x99), 1);
	d[0].len += 3;
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "3 stray bytes after the last message");
	d[0] = good[0];
	((struct nlmsghdr *)d[0].b)->nlmsg_seq = 8;
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "another request's answer (seq)");
	d[0] = good[0];
	((struct nlmsghdr *)d[0].b)->nlmsg_type = CMD_DEV;
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "a message of another command");
	d[0] = good[0];
	((struct nlmsghdr *)d[0].b)->nlmsg_len = 8;
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "a message length under its header's");
	d[0] = good[0];
	v16 = 0xfff0;
	memcpy(d[0].b + entry, &v16, 2);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "an entry longer than its table");
	d[0] = good[0];
	v16 = 2;
	memcpy(d[0].b + entry, &v16, 2);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "an entry shorter than an attribute header");
	d[0] = good[0];
	v16 = NLA_HDRLEN + 2; /* the port index, the entry's first attribute, 2 bytes long */
	memcpy(d[0].b + entry + NLA_HDRLEN, &v16, 2);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "a u32 attribute of 2 bytes");
	d[0] = good[0];
	memcpy(d[0].b + NLMSG_HDRLEN + 8 + NLA_HDRLEN, "mlx5_1\x01\x01", 8);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "a device name without its NUL");

	memset(d, 0, sizeof(d));
	msg_begin(&d[0], CMD_QP, NLM_F_MULTI, 7);
	put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	nest_begin(&d[0], RDMA_NLDEV_ATTR_RES_QP);
	nest_end(&d[0]);
	msg_end(&d[0]);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "a message without its device index");
	memset(d, 0, sizeof(d));
	msg_begin(&d[0], CMD_QP, NLM_F_MULTI, 7);
	put_u32(&d[0], RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	nest_begin(&d[0], RDMA_NLDEV_ATTR_RES_QP);
	nest_begin(&d[0], RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	put_u32(&d[0], RDMA_NLDEV_ATTR_RES_LQPN, 0x12);
	put_u32(&d[0], RDMA_NLDEV_ATTR_RES_TYPE, QP_RC); /* a u8 sent as 4 bytes */
	put_u8(&d[0], RDMA_NLDEV_ATTR_RES_STATE, QP_RTS);
	nest_end(&d[0]);
	nest_end(&d[0]);
	msg_end(&d[0]);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "a u8 attribute of 4 bytes");
	memset(d, 0, sizeof(d));
	msg_begin(&d[0], CMD_QP, NLM_F_MULTI, 7);
	put_u32(&d[0], RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	nest_begin(&d[0], RDMA_NLDEV_ATTR_RES_QP);
	nest_begin(&d[0], RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	put_u8(&d[0], RDMA_NLDEV_ATTR_RES_TYPE, QP_RC);
	put_u8(&d[0], RDMA_NLDEV_ATTR_RES_STATE, QP_RTS);
	nest_end(&d[0]);
	nest_end(&d[0]);
	msg_end(&d[0]);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "an entry without its QP number");
	memset(d, 0, sizeof(d));
	msg_begin(&d[0], CMD_QP, NLM_F_MULTI, 7);
	put_u32(&d[0], RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	nest_begin(&d[0], RDMA_NLDEV_ATTR_RES_QP);
	nest_begin(&d[0], RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	put_qp_attrs(&d[0], QP(pid = 150));
	put_str(&d[0], RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core");
	nest_end(&d[0]);
	nest_end(&d[0]);
	msg_end(&d[0]);
	is_int(scan(d, 1, false, &uid, NULL), -EPROTO, "an entry with both a pid and a kernel name");
}

static void test_caps(void)
{
	static struct dgram d[1];
	struct fq_qp_scan s = {.claim = &claim, .dev_index = 3, .seq = 7};
	struct qp many[100];
	size_t fed = 0;
	uid_t uid;
	int rc = 0;

	for (int i = 0; i < 100; i++)
		many[i] = *QP(lqpn = 0x1000 + (uint32_t)i);
	memset(d, 0, sizeof(d));
	qp_msg(&d[0], 7, 3, "mlx5_1", many, 100);
	while (rc == 0 && fed < 1000) {
		rc = fq_qp_scan_feed(&s, d[0].b, d[0].len);
		fed++;
	}
	ok(rc == -E2BIG && s.entries == FQ_QPCHECK_MAX_ENTRIES + 1,
	   "a dump of more QPs than the cap is cut at %d (datagram %zu, %zu QPs read)",
	   FQ_QPCHECK_MAX_ENTRIES, fed, s.entries);
	is_int(fq_qp_scan_answer(&s, rc, uid_table, &uid), -E2BIG, "... and is no answer, not a no");

	s = (struct fq_qp_scan){.claim = &claim, .dev_index = 3, .seq = 7};
	memset(d, 0, sizeof(d));
	msg_begin(&d[0], CMD_QP, NLM_F_MULTI, 7);
	put_u32(&d[0], RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
	put(&d[0], RDMA_NLDEV_ATTR_DRIVER, d[0].b + 8192, 8000); /* bulk the parser skips */
	nest_begin(&d[0], RDMA_NLDEV_ATTR_RES_QP);
	nest_end(&d[0]);
	msg_end(&d[0]);
	rc = 0;
	for (fed = 0; rc == 0 && fed < 1000; fed++)
		rc = fq_qp_scan_feed(&s, d[0].b, d[0].len);
	ok(rc == -E2BIG && s.bytes > FQ_QPCHECK_MAX_BYTES && s.bytes <= FQ_QPCHECK_MAX_BYTES + d[0].len,
	   "a dump of more bytes than the cap is cut there (%zu bytes)", s.bytes);
}

static void test_devices(void)
{
	static struct dgram d[2];
	struct fq_rdma_dev_scan s = {.name = "mlx5_1", .seq = 1};
	const char *names[] = {"mlx5_0", "mlx5_1", "mlx5_2"};
	int rc;

	memset(d, 0, sizeof(d));
	for (unsigned i = 0; i < 3; i++) {
		msg_begin(&d[0], CMD_DEV, NLM_F_MULTI, 1);
		put_u32(&d[0], RDMA_NLDEV_ATTR_DEV_INDEX, 2 * i + 1);
		put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, names[i]);
		put(&d[0], RDMA_NLDEV_ATTR_NODE_GUID, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
		msg_end(&d[0]);
	}
	done_msg(&d[1], 1, 0);
	rc = fq_rdma_dev_feed(&s, d[0].b, d[0].len);
	ok(rc == 0 && s.found && s.index == 3,
	   "the device dump names mlx5_1's index (%u), read on to its end", s.index);
	is_int(fq_rdma_dev_feed(&s, d[1].b, d[1].len), 1, "... NLMSG_DONE ends it");
	s = (struct fq_rdma_dev_scan){.name = "mlx5_9", .seq = 1};
	ok(fq_rdma_dev_feed(&s, d[0].b, d[0].len) == 0 && fq_rdma_dev_feed(&s, d[1].b, d[1].len) == 1 &&
	       !s.found,
	   "a device not in the dump: not found when it is done");
	memset(d, 0, sizeof(d));
	msg_begin(&d[0], CMD_DEV, NLM_F_MULTI, 1);
	put_str(&d[0], RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1");
	msg_end(&d[0]);
	s = (struct fq_rdma_dev_scan){.name = "mlx5_1", .seq = 1};
	is_int(fq_rdma_dev_feed(&s, d[0].b, d[0].len), -EPROTO, "a device without its index: malformed");
}

/* A fake kernel for the remembered answers: what it says, how often asked. */
struct fake {
	int rc;
	uid_t uid;
	int asked;
};

static int fake_ask(void *ctx, const char *local, const char *remote, uid_t *uid)
{
	struct fake *f = ctx;

	(void)local, (void)remote;
	f->asked++;
	if (f->rc == 0)
		*uid = f->uid;
	return f->rc;
}

static void test_remembered(void)
{
	static struct fq_sockcheck c;
	struct fake f = {.rc = 0, .uid = 1000};
	int64_t t = 1000000000LL;
	enum fq_lane_hold h;

	h = fq_sockcheck_claim(&c, "qp:18@ib0", "qp:34", 1000, t, fake_ask, &f);
	ok(h == FQ_LANE_HELD && f.asked == 1, "the sender's QP: held");
	h = fq_sockcheck_claim(&c, "qp:18@ib0", "qp:34", 1000, t + FQ_SOCKCHECK_YES_NS / 2, fake_ask, &f);
	ok(h == FQ_LANE_HELD && f.asked == 1, "... remembered while it reports");
	h = fq_sockcheck_claim(&c, "qp:18@ib0", "qp:34", 2000, t + FQ_SOCKCHECK_YES_NS / 2, fake_ask, &f);
	ok(h == FQ_LANE_OTHERS && f.asked == 1, "... and another uid claiming it: another's");
	f = (struct fake){.rc = -ENOENT};
	h = fq_sockcheck_claim(&c, "qp:19@ib0", "qp:35", 1000, t, fake_ask, &f);
	ok(h == FQ_LANE_CLOSED, "no such QP: closed");
	for (int i = 0; i < 50; i++)
		h = fq_sockcheck_claim(&c, "qp:19@ib0", "qp:35", 1000, t + i * (FQ_SOCKCHECK_NO_NS / 50),
				       fake_ask, &f);
	ok(h == FQ_LANE_CLOSED && f.asked == 1, "a claim repeated 50 times in a second asks the kernel once");
	h = fq_sockcheck_claim(&c, "qp:19@ib0", "qp:35", 1000, t + FQ_SOCKCHECK_NO_NS, fake_ask, &f);
	ok(f.asked == 2, "... and again after the second");
	f = (struct fake){.rc = -EPROTONOSUPPORT};
	h = fq_sockcheck_claim(&c, "qp:20@ib0", "qp:36", 1000, t, fake_ask, &f);
	h = fq_sockcheck_claim(&c, "qp:20@ib0", "qp:36", 1000, t, fake_ask, &f);
	ok(h == FQ_LANE_UNCHECKED && f.asked == 2,
	   "a kernel that cannot be asked: unchecked, nothing remembered");
}

/* The real kernel: this process's uid by pid, and the RDMA netlink. */
static void test_kernel(void)
{
	static struct fq_sockcheck c;
	struct fq_qpcheck_counts n = {0};
	struct fq_qp_claim none = {.dev = "fq-no-such-rdma-dev", .port = 1, .lqpn = 0xfffffe, .rqpn = 1};
	const char *srcdir = getenv("srcdir");
	char fixture[4096];
	struct fq_qp_lane lane = {.sysfs = fixture, .nic = "ib0", .lqpn = 0x12, .rqpn = 0x22};
	enum fq_lane_hold h, h2;
	uid_t uid = 4242;
	int rc;

	snprintf(fixture, sizeof(fixture), "%s/tests/agent/fixtures/sysfs-ib", srcdir ? srcdir : ".");
	rc = fq_pid_uid(getpid(), &uid);
	ok(rc == 0 && uid == geteuid(), "this process's uid, by its pid (%u)", (unsigned)uid);
	ok(fq_pid_uid(0, &uid) == -ESRCH && fq_pid_uid(0x3ffffff0, &uid) == -ESRCH, "pid 0, or none: -ESRCH");
	rc = fq_rdma_qp_uid(&none, &uid);
	ok(rc < 0 && rc != -ENOENT, "a device the kernel does not have: no answer, never a no (%d: %s)", rc,
	   strerror(-rc));
	if (rc == -EPROTONOSUPPORT)
		diag("this kernel has no RDMA netlink (no CONFIG_INFINIBAND): every IB lane is unchecked "
		     "here");
	h = fq_qpcheck_lane(&c, &lane, getuid(), 1, &n);
	ok(h != FQ_LANE_HELD && n.asked == 1,
	   "an IB lane on NIC ib0 (mlx5_1 port 1 in the fixture sysfs): the kernel asked, the QP not ours "
	   "(%s)",
	   fq_lane_hold_name(h));
	h2 = fq_qpcheck_lane(&c, &lane, getuid(), 2, &n);
	ok(h2 == h && n.asked == (h == FQ_LANE_UNCHECKED ? 2u : 1u),
	   "... asked again at once only if it had no answer (asked %llu times)",
	   (unsigned long long)n.asked);
	lane.nic = "eth9";
	n.asked = 0;
	ok(fq_qpcheck_lane(&c, &lane, getuid(), 1, &n) == FQ_LANE_UNCHECKED && n.asked == 0,
	   "a NIC with no RDMA port: unchecked, the kernel not asked");
	lane.nic = "ib0";
	lane.rqpn = 0;
	ok(fq_qpcheck_lane(&c, &lane, getuid(), 1, &n) == FQ_LANE_UNCHECKED && n.asked == 0,
	   "a lane that does not say its remote QP: unchecked");
}

/* A real RDMA device, if this machine has one: a QP number nobody has is
 * no QP (the kernel's own answer, through the single QP's get or a dump). */
static void test_device(void)
{
	struct fq_qp_claim q = {.port = 1, .lqpn = 0xfffffe, .rqpn = 1};
	struct dirent *e;
	DIR *dir = opendir("/sys/class/infiniband");
	uid_t uid;
	int rc;

	while (dir && (e = readdir(dir)) && e->d_name[0] == '.')
		;
	if (!dir || !e) {
		if (dir)
			closedir(dir);
		skip(1, "no RDMA device here (/sys/class/infiniband is empty or absent)");
		return;
	}
	snprintf(q.dev, sizeof(q.dev), "%.63s", e->d_name);
	closedir(dir);
	rc = fq_rdma_qp_uid(&q, &uid);
	is_int(rc, -ENOENT, "%s: QP %#x on port 1, which nobody has: no such QP", q.dev, q.lqpn);
}

int main(void)
{
	test_dump_verdicts();
	test_kernel_errors();
	test_single();
	test_malformed();
	test_caps();
	test_devices();
	test_remembered();
	test_kernel();
	test_device();
	return done_testing();
}
