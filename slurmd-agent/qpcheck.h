/*
 * qpcheck: does an IB lane's RC queue pair exist where the lane says, and
 * whose is it? An IB lane's report names its TCP side channel's addresses
 * (sockcheck.h checks that connection) and its two QP numbers; the kernel's
 * RDMA netlink (NETLINK_RDMA, the RDMA_NL_NLDEV client: what `rdma
 * resource show qp` reads) says which QPs a device has: a dump of the
 * devices gives the device's index, then the lane's QP is asked for by
 * device, port and number (one QP, one answer), or, on a kernel without
 * that (before 5.1), the device's QPs are dumped until it turns up. The
 * claim holds when that QP is on the device and port of the lane's local
 * NIC, RC, in RTS, connected to the lane's remote QP, and created by a
 * process (or thread) of the sender's uid.
 *
 * A dump is bounded: FQ_QPCHECK_MAX_ENTRIES QPs and FQ_QPCHECK_MAX_BYTES
 * bytes read at most (the kernel queries each QP it lists from the
 * device: a long dump is slow), each read waits at most 200 ms; a dump
 * cut there without the QP in it is no answer (unchecked: the lane stays
 * unverified and its next report asks again), never a no.
 *
 * A kernel without RDMA netlink (no CONFIG_INFINIBAND: socket() says
 * EPROTONOSUPPORT), a NIC with no RDMA port in sysfs, or a device the
 * kernel does not list cannot be asked: the lane is unchecked, kept in
 * the job's own report, taken by no rule of the controller.
 */
#ifndef FQ_AGENT_QPCHECK_H
#define FQ_AGENT_QPCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "slurmd-agent/sockcheck.h"

#define FQ_QPCHECK_MAX_ENTRIES 16384
#define FQ_QPCHECK_MAX_BYTES   (4u << 20)

/* The QP an IB lane claims, on the RDMA port of its local NIC. */
struct fq_qp_claim {
	char dev[64];  /* the verbs device ("mlx5_0") */
	uint32_t port; /* 1-based */
	uint32_t lqpn; /* the lane's QP */
	uint32_t rqpn; /* the QP it says it is connected to */
};

/* The kernel's answer to RDMA_NLDEV_CMD_RES_QP_GET, read so far: a dump
 * of one device's QPs, or (single) the one QP asked for by its device,
 * port and number. Zero it, set claim, dev_index, seq (the request's) and
 * single, then feed it the datagrams the kernel sends. */
struct fq_qp_scan {
	const struct fq_qp_claim *claim;
	uint32_t dev_index;
	uint32_t seq;
	bool single;
	size_t entries, bytes; /* QPs and bytes read */
	bool found;            /* the claim's QP on the claim's device: then */
	bool connected;        /* ... RC, RTS, connected to rqpn, on the claim's port */
	bool kernel;           /* ... a kernel consumer's (no pid) */
	uint32_t pid;          /* ... its creator (the agent's pid namespace) */
	bool interrupted;      /* a message flagged NLM_F_DUMP_INTR */
};

/* One datagram (netlink messages) of the answer. 1: the answer is known
 * (the QP found, or NLMSG_DONE); 0: read on; -EPROTO: a malformed message
 * or attribute, or one not of this answer (type, seq; single: another QP
 * or device); -E2BIG: past the caps; a negative errno the kernel
 * answered (NLMSG_ERROR, NLMSG_DONE). */
int fq_qp_scan_feed(struct fq_qp_scan *s, const void *buf, size_t len);

/* A dump of the RDMA devices (RDMA_NLDEV_CMD_GET), read so far: zero it,
 * set name and seq. */
struct fq_rdma_dev_scan {
	const char *name;
	uint32_t seq;
	size_t bytes;
	bool found;
	uint32_t index; /* name's device index, when found */
};

/* fq_qp_scan_feed for a device dump: 1 when the dump is done (found says
 * whether name was in it: the dump is read to its end, as the same
 * socket asks for the QP next), 0, or the same errors. */
int fq_rdma_dev_feed(struct fq_rdma_dev_scan *s, const void *buf, size_t len);

/* The effective uid of process (or thread) pid, from /proc: 0 or a
 * negative errno (-ESRCH: none, or pid 0). */
int fq_pid_uid(pid_t pid, uid_t *uid);

/* What a scan ended with rc (its last feed's return, 0 if the kernel
 * said no more in time) says of the claim: 0 and *uid (its creator's,
 * through uid_of; (uid_t)-1 for a kernel consumer's QP), -ENOENT (no
 * such QP, or not RC, RTS, connected to rqpn on the port; single: also
 * the kernel's -ENOENT, and its -EAGAIN for a QP on another port), or
 * another negative errno: no answer (the kernel's error, a dump's
 * -ENOENT as -ENODEV; -EAGAIN: cut short or interrupted; -E2BIG; uid_of's
 * error, -ESRCH for a creator whose task is gone). Pure but for uid_of. */
int fq_qp_scan_answer(const struct fq_qp_scan *s, int rc, int (*uid_of)(pid_t, uid_t *), uid_t *uid);

/* Ask the kernel on a fresh NETLINK_RDMA socket: a dump of the devices
 * for q->dev's index, then the QP by device, port and number (kernels
 * from 5.1), or, where the kernel refuses that (-EINVAL, -EOPNOTSUPP), a
 * dump of the device's QPs read until it turns up. As
 * fq_qp_scan_answer with fq_pid_uid; -EPROTONOSUPPORT without RDMA
 * netlink; -ENODEV: the device is not in its list. */
int fq_rdma_qp_uid(const struct fq_qp_claim *q, uid_t *uid);

/* An IB lane's QP claim as the agent has it: its local NIC by name (whose
 * RDMA port sysfs gives: nics.h) and its QP numbers. */
struct fq_qp_lane {
	const char *sysfs; /* "/sys" or a test tree */
	const char *nic;
	uint32_t lqpn, rqpn;
};

struct fq_qpcheck_counts {
	uint64_t asked; /* claims the kernel was asked of (fq_rdma_qp_uid) */
	uint64_t cut;   /* ... whose dump was cut at the caps without the QP */
};

/* Is l's QP one that uid's process holds, connected as it says, at now_ns
 * (monotonic)? Remembered in c as fq_sockcheck_lane's answers are (a yes
 * while the lane reports, a no for a second: a repeated false claim costs
 * the kernel one question a second), under "qp:LQPN@NIC" and "qp:RQPN". A lane
 * without both QP numbers, on a NIC without an RDMA port, or one the
 * kernel cannot be asked of: FQ_LANE_UNCHECKED. */
enum fq_lane_hold fq_qpcheck_lane(struct fq_sockcheck *c, const struct fq_qp_lane *l, uid_t uid,
				  int64_t now_ns, struct fq_qpcheck_counts *counts);

#endif /* FQ_AGENT_QPCHECK_H */
