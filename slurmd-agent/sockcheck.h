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

/* Answers remembered, direct-mapped by the pair: a yes for
 * FQ_SOCKCHECK_YES_NS (a lane reports every 100 ms while it lives, and its
 * last report may follow its socket's close), a no for FQ_SOCKCHECK_NO_NS
 * (a process repeating a false claim costs one request a second). */
#define FQ_SOCKCHECK_SLOTS  256
#define FQ_SOCKCHECK_YES_NS (60 * 1000000000LL)
#define FQ_SOCKCHECK_NO_NS  1000000000LL

struct fq_sockcheck_slot {
	char local[64], remote[64];
	uid_t uid;
	bool yes;
	int64_t until_ns;
};

struct fq_sockcheck {
	struct fq_sockcheck_slot slot[FQ_SOCKCHECK_SLOTS];
	uint64_t asked, remembered;
};

/* Is (local, remote) a TCP connection that uid holds, at now_ns (a
 * monotonic clock)? Asks the kernel unless remembered. A kernel that
 * cannot be asked answers no. */
bool fq_sockcheck_owned(struct fq_sockcheck *c, const char *local, const char *remote, uid_t uid,
			int64_t now_ns);

#endif /* FQ_AGENT_SOCKCHECK_H */
