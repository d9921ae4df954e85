/*
 * bootstrap: rank discovery and out-of-band exchange for fabriciq-collbench,
 * over plain TCP to rank 0 (like NCCL's bootstrap ring, but a star: the
 * benchmark only exchanges handles and timings).
 *
 * Rank 0 listens on HOST:PORT and accepts the other ranks (each announces
 * its rank); every rank then calls the same collective calls in the same
 * order. Blocking, with a deadline on every wait.
 */
#ifndef FQ_COLLBENCH_BOOTSTRAP_H
#define FQ_COLLBENCH_BOOTSTRAP_H

#include <stddef.h>

struct bootstrap;

/* Returns 0, or a negative errno with a reason in err (bad address,
 * timeout after timeout_s seconds, a rank twice). */
int bootstrap_open(const char *host_port, int rank, int nranks, int timeout_s, struct bootstrap **out,
		   char *err, size_t errlen);
void bootstrap_close(struct bootstrap *b);
int bootstrap_rank(const struct bootstrap *b, int *rank, int *nranks);

/* Every rank gives len bytes; all receives nranks * len bytes, rank order. */
int bootstrap_allgather(struct bootstrap *b, const void *mine, void *all, size_t len);
int bootstrap_barrier(struct bootstrap *b);

#endif /* FQ_COLLBENCH_BOOTSTRAP_H */
