/*
 * net: fabriciq's one internal network API; abi/plugin.c adapts it to each
 * ncclNet ABI version, fabriciq-collbench and the tests see NCCL's view.
 * Implemented by abi/net.c (init, fini, devices, listen, connect: the one
 * place holding the current context), core/setup.c (accept),
 * core/progress.c (isend, irecv, test), core/send.c and core/recv.c.
 *
 * Semantics are NCCL's (see /work/shared/NCCL-NET-ABI.md): nothing blocks;
 * connect/accept set *out to NULL until the connection is ready; isend and
 * irecv set *out to NULL when the comm has no free request slot; sends and
 * receives match in posting order, a receive of n buffers takes the next n
 * messages and each message's tag picks its buffer; a receive buffer may be
 * larger than the message, never smaller. Requests belong to their comm and
 * are progressed by fqn_test (and opportunistically by isend/irecv).
 *
 * Every function returns 0 or a negative errno. Errors a peer causes are
 * -ECONNRESET (vanished), -EBADMSG/-EPROTO (broke the protocol); usage
 * errors are -EINVAL and -EMSGSIZE (a receive buffer too small); the rest
 * are local system errors. fqn_errno_to_class() says which. A comm that
 * failed stays failed: every later call on it returns the same error.
 * One thread at a time per comm; different comms may be used concurrently.
 */
#ifndef FQN_NET_H
#define FQN_NET_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-plugin/nccl_net.h"

#define FQN_MAX_RECVS  8                                       /* buffers in one grouped receive */
#define FQN_RECV_SLOTS NCCL_NET_MAX_REQUESTS                   /* per recv comm */
#define FQN_SEND_SLOTS (NCCL_NET_MAX_REQUESTS * FQN_MAX_RECVS) /* per send comm */

struct fqn_listen;
struct fqn_send;
struct fqn_recv;
struct fqn_req;

struct fqn_props {
	const char *name;
	const char *pci_path; /* NULL: virtual device */
	uint64_t guid;
	int speed_mbps;
	int port;
	int max_comms;
	int max_recvs;
	int rail; /* the device's index */
};

/* Load settings, discover NICs, open the clock page, start telemetry. The
 * first successful call does the work; later calls only refresh the logger.
 * Returns 0, -EINVAL (bad environment) or -ENODEV (no NIC); says why at WARN. */
int fqn_init(ncclDebugLogger_t logger);
/* Undo one fqn_init (v11's finalize); the last one stops telemetry. */
void fqn_fini(void);

/* The context of the current init (ctx.h), NULL outside fqn_init..fini:
 * for the tests that build comms from lanes. */
struct fqn_ctx *fqn_context(void);
/* The device of an open send or receive comm. */
int fqn_comm_device(const void *comm);
/* NCCL's regMr of host memory on device dev, through the lanes' driver
 * (lane_drv.h): 1 and *mh when it registered, 0 when the transport needs
 * no registration (the caller's own handle then), or a negative errno. */
int fqn_reg_mr(void *data, size_t size, int dev, void **mh);
/* Drop a registration fqn_reg_mr made: 0, or a negative errno (mh is
 * none of the driver's, or it registers nothing). */
int fqn_dereg_mr(void *mh);

int fqn_devices(int *ndev);
int fqn_get_properties(int dev, struct fqn_props *props);

/* handle: NCCL_NET_HANDLE_MAXSIZE bytes filled for the peer. */
int fqn_listen(int dev, void *handle, struct fqn_listen **out);
/* handle: the peer's, kept by the caller between calls (its spare bytes
 * hold the connection in progress). */
int fqn_connect(int dev, void *handle, struct fqn_send **out);
int fqn_accept(struct fqn_listen *l, struct fqn_recv **out);

int fqn_isend(struct fqn_send *s, void *data, size_t size, int tag, struct fqn_req **out);
int fqn_irecv(struct fqn_recv *r, int n, void **data, const size_t *sizes, const int *tags,
	      struct fqn_req **out);
/* Host memory needs no flush: returns a request that is already complete. */
int fqn_iflush(struct fqn_recv *r, struct fqn_req **out);
/* *done = 1 and sizes[] (one per buffer of a receive; the size of a send)
 * when complete, after which req is gone. sizes may be NULL. */
int fqn_test(struct fqn_req *req, int *done, size_t *sizes, int *nsizes);

int fqn_close_send(struct fqn_send *s);
int fqn_close_recv(struct fqn_recv *r);
int fqn_close_listen(struct fqn_listen *l);

enum fqn_err_class {
	FQN_ERR_SYSTEM,
	FQN_ERR_REMOTE,
	FQN_ERR_USAGE
};
enum fqn_err_class fqn_errno_to_class(int negerr);

#endif /* FQN_NET_H */
