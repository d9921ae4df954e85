/*
 * ib_dev: the verbs devices behind the plugin's NICs when the transport is
 * IB, and the verbs implementation of the lane's io seam (ib_lane.h).
 *
 * fqib_devs_open() maps each plugin NIC to a verbs device and port: a
 * RoCE port whose GID table names the NIC as its netdev, or the IB device
 * under /sys/class/net/<nic>/device/infiniband (IPoIB). The port must be
 * ACTIVE; its GID comes from fqib_gid_select() (RoCE v2 by default,
 * matching the NIC's address; FABRICIQ_IB_GID_INDEX overrides). NICs with
 * no usable port are dropped from the device list (said at INFO); the NIC
 * keeps its IP address, which the lane's TCP side channel uses. Device
 * properties become the verbs ones: speed = active width x lane speed,
 * node GUID, PCI path of the verbs device.
 *
 * Built without verbs (--without-verbs), every function here says so:
 * fqib_devs_count() is 0 and the rest return -ENOTSUP.
 * Not thread-safe: open and close run under fqn_init's lock; lanes and
 * registrations only read the table between them.
 */
#ifndef FQIB_DEV_H
#define FQIB_DEV_H

#include <stddef.h>

#include "nccl-plugin/env.h"
#include "nccl-plugin/nic.h"

/* Verbs devices with at least one ACTIVE port (0 without verbs or device).
 * *why (static) says what was found when 0. */
int fqib_devs_count(const char **why);

/* Map nics[*n] onto verbs ports (dropping those without one, compacting
 * the array and freeing what a dropped NIC held). 0, or -ENODEV with err
 * set when no NIC has a usable port, -ENOTSUP without verbs. */
int fqib_devs_open(const struct fqn_config *cfg, struct fqn_nic *nics, int *n, char *err, size_t errlen);
void fqib_devs_close(void);

/* Register host memory for plugin device dev through its MR cache: 0 and
 * *mh, or a negative errno. Deregister drops the reference. */
int fqib_mr_reg(int dev, void *data, size_t size, void **mh);
int fqib_mr_dereg(void *mh);

/* 1 if GPUDirect RDMA is usable (a peer-memory client is loaded); the
 * plugin reports NCCL_PTR_CUDA only then. */
int fqib_gdr_available(void);

#endif /* FQIB_DEV_H */
