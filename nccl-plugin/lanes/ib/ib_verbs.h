/*
 * ib_verbs: libibverbs loaded at run time (dlopen), as NCCL's ibvwrap does.
 *
 * The plugin must load on a host without libibverbs (NCCL dlopens it on
 * every node, GPU or not, RDMA or not) and must not drag a library into
 * the job's process unless the IB transport is asked for. So nothing links
 * against libibverbs: the few exported verbs entry points are looked up
 * here (versioned, IBVERBS_1.1); the data path (post, poll, extended CQ)
 * is made of verbs.h inline functions that call the provider through the
 * context's ops and need no symbol.
 */
#ifndef FQIB_VERBS_H
#define FQIB_VERBS_H

#include <infiniband/verbs.h>

struct fqib_verbs {
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	/* the exported symbol fills the older, prefix-compatible struct */
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *ch, int vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
};

/* The table after a successful fqib_verbs_load(). */
extern struct fqib_verbs fqib_v;

/* Load libibverbs.so.1 once (thread-safe). 0, or -ENOENT with *why
 * (static or dlerror's text) when the library or a symbol is missing. */
int fqib_verbs_load(const char **why);

#endif /* FQIB_VERBS_H */
