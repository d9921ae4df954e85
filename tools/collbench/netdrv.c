/* netdrv: one interface over ncclNet v8..v12 tables (see netdrv.h). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/collbench/netdrv.h"

struct netdrv {
	void *dl;
	int version;
	void *ctx; /* v11+ */
	int inited;
	union {
		const void *any;
		const ncclNet_v8_t *v8;
		const ncclNet_v9_t *v9;
		const ncclNet_v10_t *v10;
		const ncclNet_v11_t *v11;
		const ncclNet_v12_t *v12;
	} t;
};

/* Functions whose signature is the same from v8 to v12 sit at the same
 * offset in every table; take them from the v8 layout only where that is
 * true (listen/connect differ from v11, isend/irecv from v9 and v10). */
#define SAME(d, fn) ((d)->t.v8->fn)

int netdrv_open(const char *path, int version, struct netdrv **out, char *err, size_t errlen)
{
	struct netdrv *d;
	char sym[32];

	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	d->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!d->dl) {
		snprintf(err, errlen, "cannot load plugin %s: %s", path, dlerror());
		free(d);
		return -1;
	}
	for (int v = version ? version : NETDRV_MAX_VERSION; v >= NETDRV_MIN_VERSION; v--) {
		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		d->t.any = dlsym(d->dl, sym);
		if (d->t.any) {
			d->version = v;
			break;
		}
		if (version)
			break;
	}
	if (!d->t.any) {
		if (version)
			snprintf(err, errlen, "plugin %s has no symbol ncclNetPlugin_v%d", path, version);
		else
			snprintf(err, errlen, "plugin %s has no symbol ncclNetPlugin_v%d..v%d", path,
				 NETDRV_MIN_VERSION, NETDRV_MAX_VERSION);
		dlclose(d->dl);
		free(d);
		return -1;
	}
	*out = d;
	return 0;
}

void netdrv_close(struct netdrv *d)
{
	if (!d)
		return;
	if (d->inited && d->version >= 11)
		d->t.v11->finalize(d->ctx);
	dlclose(d->dl);
	free(d);
}

int netdrv_version(const struct netdrv *d)
{
	return d->version;
}

const char *netdrv_name(const struct netdrv *d)
{
	return d->t.v8->name;
}

const void *netdrv_table(const struct netdrv *d)
{
	return d->t.any;
}

ncclResult_t netdrv_init(struct netdrv *d, ncclDebugLogger_t logger)
{
	ncclNetCommConfig_t cfg = {.trafficClass = -1};
	ncclResult_t rc;

	switch (d->version) {
	case 8:
	case 9:
		rc = d->t.v8->init(logger);
		break;
	case 10:
		rc = d->t.v10->init(logger, NULL);
		break;
	default:
		rc = d->t.v11->init(&d->ctx, 0x6662716963ULL, &cfg, logger, NULL);
		break;
	}
	d->inited = rc == ncclSuccess;
	return rc;
}

ncclResult_t netdrv_devices(struct netdrv *d, int *ndev)
{
	return SAME(d, devices)(ndev);
}

#define COPY_PROPS(p, x)                                                                                     \
	do {                                                                                                 \
		(p)->name = (x).name;                                                                        \
		(p)->pci_path = (x).pciPath;                                                                 \
		(p)->guid = (x).guid;                                                                        \
		(p)->ptr_support = (x).ptrSupport;                                                           \
		(p)->speed = (x).speed;                                                                      \
		(p)->port = (x).port;                                                                        \
		(p)->max_comms = (x).maxComms;                                                               \
		(p)->max_recvs = (x).maxRecvs;                                                               \
	} while (0)

ncclResult_t netdrv_props(struct netdrv *d, int dev, struct netdrv_props *p)
{
	ncclResult_t rc;

	p->rail_id = -1;
	if (d->version == 8) {
		ncclNetProperties_v8_t x;
		rc = d->t.v8->getProperties(dev, &x);
		if (rc == ncclSuccess)
			COPY_PROPS(p, x);
	} else if (d->version <= 10) {
		ncclNetProperties_v9_t x;
		rc = d->t.v9->getProperties(dev, &x);
		if (rc == ncclSuccess)
			COPY_PROPS(p, x);
	} else if (d->version == 11) {
		ncclNetProperties_v11_t x;
		rc = d->t.v11->getProperties(dev, &x);
		if (rc == ncclSuccess)
			COPY_PROPS(p, x);
	} else {
		ncclNetProperties_v12_t x;
		rc = d->t.v12->getProperties(dev, &x);
		if (rc == ncclSuccess) {
			COPY_PROPS(p, x);
			p->rail_id = x.railId;
		}
	}
	return rc;
}

ncclResult_t netdrv_listen(struct netdrv *d, int dev, void *handle, void **lcomm)
{
	if (d->version >= 11)
		return d->t.v11->listen(d->ctx, dev, handle, lcomm);
	return d->t.v8->listen(dev, handle, lcomm);
}

ncclResult_t netdrv_connect(struct netdrv *d, int dev, void *handle, void **scomm)
{
	ncclNetCommConfig_t cfg = {.trafficClass = -1};
	void *devcomm = NULL;

	if (d->version >= 11)
		return d->t.v11->connect(d->ctx, dev, handle, scomm, &devcomm);
	if (d->version == 10)
		return d->t.v10->connect(dev, &cfg, handle, scomm, &devcomm);
	return d->t.v8->connect(dev, handle, scomm, &devcomm);
}

ncclResult_t netdrv_accept(struct netdrv *d, void *lcomm, void **rcomm)
{
	void *devcomm = NULL;

	return SAME(d, accept)(lcomm, rcomm, &devcomm);
}

ncclResult_t netdrv_regmr(struct netdrv *d, void *comm, void *data, size_t size, int type, void **mh)
{
	return SAME(d, regMr)(comm, data, size, type, mh);
}

ncclResult_t netdrv_deregmr(struct netdrv *d, void *comm, void *mh)
{
	return SAME(d, deregMr)(comm, mh);
}

ncclResult_t netdrv_isend(struct netdrv *d, void *scomm, void *data, size_t size, int tag, void *mh,
			  void **req)
{
	if (d->version == 8) {
		if (size > INT_MAX)
			return ncclInvalidArgument;
		return d->t.v8->isend(scomm, data, (int)size, tag, mh, req);
	}
	if (d->version == 9)
		return d->t.v9->isend(scomm, data, size, tag, mh, req);
	return d->t.v10->isend(scomm, data, size, tag, mh, NULL, req);
}

ncclResult_t netdrv_irecv(struct netdrv *d, void *rcomm, int n, void **data, size_t *sizes, int *tags,
			  void **mhs, void **req)
{
	if (d->version == 8) {
		int sz[64];

		if (n < 1 || n > 64)
			return ncclInvalidArgument;
		for (int i = 0; i < n; i++) {
			if (sizes[i] > INT_MAX)
				return ncclInvalidArgument;
			sz[i] = (int)sizes[i];
		}
		return d->t.v8->irecv(rcomm, n, data, sz, tags, mhs, req);
	}
	if (d->version == 9)
		return d->t.v9->irecv(rcomm, n, data, sizes, tags, mhs, req);
	return d->t.v10->irecv(rcomm, n, data, sizes, tags, mhs, NULL, req);
}

ncclResult_t netdrv_iflush(struct netdrv *d, void *rcomm, int n, void **data, int *sizes, void **mhs,
			   void **req)
{
	return SAME(d, iflush)(rcomm, n, data, sizes, mhs, req);
}

ncclResult_t netdrv_test(struct netdrv *d, void *req, int *done, int *sizes)
{
	return SAME(d, test)(req, done, sizes);
}

ncclResult_t netdrv_close_send(struct netdrv *d, void *scomm)
{
	return SAME(d, closeSend)(scomm);
}

ncclResult_t netdrv_close_recv(struct netdrv *d, void *rcomm)
{
	return SAME(d, closeRecv)(rcomm);
}

ncclResult_t netdrv_close_listen(struct netdrv *d, void *lcomm)
{
	return SAME(d, closeListen)(lcomm);
}
