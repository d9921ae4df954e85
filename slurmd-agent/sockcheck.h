/*
 * sockcheck: does a TCP connection exist, and whose is it? The kernel's
 * socket diagnostics (NETLINK_SOCK_DIAG, sock_diag(7)) asked for the exact
 * 4-tuple: one request and one answer, no walk of /proc. The agent checks
 * a job's claim that one of its lanes runs between two addresses before
 * that lane may place the job on a NIC (the controller's collision advice,
 * which moves other jobs, is made of where lanes run).
 */
#ifndef FQ_AGENT_SOCKCHECK_H
#define FQ_AGENT_SOCKCHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The uid owning the TCP socket whose local end is `local` and whose
 * remote end is `remote` ("IP:port" or "[IPv6]:port"), in the caller's
 * network namespace: 0 and *uid; -ENOENT no such socket; -EINVAL an
 * address that does not parse (or the two of different families);
 * another negative errno if the kernel could not be asked. */
int fq_tcp_socket_uid(const char *local, const char *remote, uid_t *uid);

/* What the socket table says of a lane a process claims. */
enum fq_lane_hold {
	FQ_LANE_HELD,      /* a connection the claiming uid holds */
	FQ_LANE_CLOSED,    /* no such connection (now): closed, or never was */
	FQ_LANE_OTHERS,    /* a connection another uid holds */
	FQ_LANE_UNCHECKED, /* a claim that does not parse, or a kernel that cannot be asked */
};

/* Answers remembered in an open-addressed table (a pair's place and the
 * FQ_SOCKCHECK_PROBE after it): a yes while the lane keeps reporting and
 * for FQ_SOCKCHECK_YES_NS after its last report (a lane reports every
 * interval while it lives, and its last report follows its socket's close:
 * the yes must outlive the connection), a no for FQ_SOCKCHECK_NO_NS (a
 * process repeating a false claim costs one request a second). A pair
 * finds a place unless FQ_SOCKCHECK_PROBE younger pairs hold every one of
 * its places: then the one least recently used gives way. */
#define FQ_SOCKCHECK_SLOTS  4096 /* a power of two */
#define FQ_SOCKCHECK_PROBE  16
#define FQ_SOCKCHECK_YES_NS (60 * 1000000000LL)
#define FQ_SOCKCHECK_NO_NS  1000000000LL

struct fq_sockcheck_slot {
	char local[56], remote[56]; /* "[IPv6]:port" */
	enum fq_lane_hold kernel;   /* FQ_LANE_HELD (by uid) or FQ_LANE_CLOSED */
	uid_t uid;
	int64_t until_ns; /* 0: empty */
};

struct fq_sockcheck {
	struct fq_sockcheck_slot slot[FQ_SOCKCHECK_SLOTS];
	uint64_t asked, remembered, evicted;
};

/* Is (local, remote) a TCP connection that uid holds, at now_ns (a
 * monotonic clock)? Asks the kernel unless remembered. */
enum fq_lane_hold fq_sockcheck_lane(struct fq_sockcheck *c, const char *local, const char *remote, uid_t uid,
				    int64_t now_ns);

/* How the kernel is asked of a claim keyed (local, remote): 0 and *uid
 * (its holder), -ENOENT (no such thing now), or another negative errno
 * (the kernel could not be asked: nothing is remembered). */
typedef int (*fq_claim_ask)(void *ctx, const char *local, const char *remote, uid_t *uid);

/* fq_sockcheck_lane for a claim of another kind (qpcheck.h's queue pairs),
 * remembered in the same table under its own keys (each shorter than a
 * slot's strings, and never an "IP:port"), asked through ask(ctx, ...). */
enum fq_lane_hold fq_sockcheck_claim(struct fq_sockcheck *c, const char *local, const char *remote, uid_t uid,
				     int64_t now_ns, fq_claim_ask ask, void *ctx);

/* "held", "closed", "another uid's", "unchecked". */
const char *fq_lane_hold_name(enum fq_lane_hold h);

#endif /* FQ_AGENT_SOCKCHECK_H */
