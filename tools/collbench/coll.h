/*
 * coll: connections between ranks and the collectives fabriciq-collbench
 * times, driven through netdrv exactly as NCCL's proxy drives a plugin:
 * host buffers, non-blocking connect/accept loops, isend/irecv retried
 * while they return a NULL request, test() polling, at most
 * COLL_WINDOW requests in flight per connection (NCCL_STEPS).
 */
#ifndef FQ_COLLBENCH_COLL_H
#define FQ_COLLBENCH_COLL_H

#include <stddef.h>

#include "tools/collbench/bootstrap.h"
#include "tools/collbench/netdrv.h"

#define COLL_WINDOW 8
#define COLL_SLICE  (1u << 20) /* bytes per request, as NCCL's net steps */

struct mesh;

/* Called around each transfer on the thread that runs the collective (the
 * proxy's view: a transfer is a proxyOp, a request a step). Optional. */
struct coll_hooks {
	void *arg;
	void *(*xfer_begin)(void *arg, int peer, int is_send, size_t bytes, int nreqs);
	/* conn: the connection's index (stands for a socket). *net: a second handle. */
	void *(*req_posted)(void *arg, void *xfer, int step, int is_send, size_t len, size_t posted, int conn,
			    void **net);
	void (*req_done)(void *arg, void *xfer, void *req, void *net, int is_send, size_t len, size_t done);
	void (*xfer_end)(void *arg, void *xfer);
};

/* One send and one receive connection to every other rank, on device dev.
 * Returns 0, or a negative errno with a reason in err. */
int mesh_open(struct netdrv *d, struct bootstrap *b, int dev, double timeout_s, struct mesh **out, char *err,
	      size_t errlen);
void mesh_close(struct mesh *m);
/* A pass of the transfer engine that posted and completed nothing sleeps
 * idle_us (default 0: spin, as NCCL's proxy). On the emulated cluster,
 * where every rank of every job shares the machine's few cores, spinning
 * ranks take the CPU a rank of another job needs to answer in time. */
void mesh_set_idle(struct mesh *m, int idle_us);
/* Hooks for the collectives that follow (NULL: none). */
void mesh_set_hooks(struct mesh *m, const struct coll_hooks *h);

/* Each returns 0, or -1 with a reason in the mesh's error (mesh_error). */
int coll_allreduce(struct mesh *m, const float *send, float *recv, float *tmp, size_t count);
int coll_alltoall(struct mesh *m, const char *send, char *recv, size_t bytes_per_rank);
/* Ranks 0 and 1 exchange bytes twice (there and back); others return at once. */
int coll_pingpong(struct mesh *m, char *buf, size_t bytes);
/* One half of a pingpong: rank 0 sends (there) or receives (back), rank 1
 * the other way; others return at once. */
int coll_pingpong_half(struct mesh *m, char *buf, size_t bytes, int back);
const char *mesh_error(const struct mesh *m);

#endif /* FQ_COLLBENCH_COLL_H */
