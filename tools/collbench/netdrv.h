/*
 * netdrv: drive any ncclNet plugin .so as NCCL's proxy does, whatever its
 * ABI version (8..12), through one size_t-based interface.
 *
 * netdrv_open dlopens the file and takes ncclNetPlugin_vN for the version
 * asked, or the highest one present (as NCCL does). Each call forwards to
 * the plugin's table, converting sizes for v8 and passing the v11+
 * per-communicator context. Calls return the plugin's ncclResult_t.
 */
#ifndef FQ_COLLBENCH_NETDRV_H
#define FQ_COLLBENCH_NETDRV_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-plugin/nccl_net.h"

#define NETDRV_MIN_VERSION 8
#define NETDRV_MAX_VERSION 12

struct netdrv;

struct netdrv_props {
	const char *name;
	const char *pci_path;
	uint64_t guid;
	int ptr_support;
	int speed;
	int port;
	int max_comms;
	int max_recvs;
	int16_t rail_id; /* v12, else -1 */
};

/* version 0: the highest exported. Returns 0, or -1 with a one-line reason
 * in err (cannot load the file, or no ncclNetPlugin_v8..v12 symbol). */
int netdrv_open(const char *path, int version, struct netdrv **out, char *err, size_t errlen);
void netdrv_close(struct netdrv *d); /* finalizes (v11+) and dlcloses */

int netdrv_version(const struct netdrv *d);
const char *netdrv_name(const struct netdrv *d);
/* The raw exported table (for conformance tests). */
const void *netdrv_table(const struct netdrv *d);

ncclResult_t netdrv_init(struct netdrv *d, ncclDebugLogger_t logger);
ncclResult_t netdrv_devices(struct netdrv *d, int *ndev);
ncclResult_t netdrv_props(struct netdrv *d, int dev, struct netdrv_props *p);
ncclResult_t netdrv_listen(struct netdrv *d, int dev, void *handle, void **lcomm);
ncclResult_t netdrv_connect(struct netdrv *d, int dev, void *handle, void **scomm);
ncclResult_t netdrv_accept(struct netdrv *d, void *lcomm, void **rcomm);
ncclResult_t netdrv_regmr(struct netdrv *d, void *comm, void *data, size_t size, int type, void **mh);
ncclResult_t netdrv_deregmr(struct netdrv *d, void *comm, void *mh);
ncclResult_t netdrv_isend(struct netdrv *d, void *scomm, void *data, size_t size, int tag, void *mh,
			  void **req);
ncclResult_t netdrv_irecv(struct netdrv *d, void *rcomm, int n, void **data, size_t *sizes, int *tags,
			  void **mhs, void **req);
ncclResult_t netdrv_iflush(struct netdrv *d, void *rcomm, int n, void **data, int *sizes, void **mhs,
			   void **req);
ncclResult_t netdrv_test(struct netdrv *d, void *req, int *done, int *sizes);
ncclResult_t netdrv_close_send(struct netdrv *d, void *scomm);
ncclResult_t netdrv_close_recv(struct netdrv *d, void *rcomm);
ncclResult_t netdrv_close_listen(struct netdrv *d, void *lcomm);

#endif /* FQ_COLLBENCH_NETDRV_H */
