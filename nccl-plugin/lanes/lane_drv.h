/*
 * lane_drv: the lane driver table, which puts the transport (TCP or IB
 * verbs) behind one interface for making lanes, at setup and failback
 * alike (setup.c dials and accepts, send.c re-dials, rejoin.c accepts
 * re-dialed lanes); the data path is behind each lane's ops (lane.h).
 * Each transport defines its driver beside its lanes (lanes/tcp,
 * lanes/ib), in the way of linuxptp's transport.h; fqn_init picks one
 * (FABRICIQ_TRANSPORT) into the context, opens its devices and memory
 * registration through it, and nothing above asks which.
 *
 * hello_extra bytes follow the hello (hello.h) on every lane, connector to
 * listener: for IB lanes the connector's QP handle (the IB lane's
 * send_hello sends both: ib_lane.h).
 */
#ifndef FQN_LANE_DRV_H
#define FQN_LANE_DRV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nccl-plugin/env.h"
#include "nccl-plugin/nic.h"

struct fqn_lane;

/* Listen handle flag (wire.h) of IB lanes: a connector whose transport
 * differs refuses with a clear message. */
#define FQN_LANE_DRV_F_IB 0x80u

struct fqn_lane_driver {
	const char *name;     /* "tcp", "ib": FABRICIQ_TRANSPORT after init */
	const char *label;    /* in messages: "TCP", "IB" */
	uint8_t handle_flags; /* set in every listen handle; a connector's driver must set the same */
	size_t hello_extra;   /* bytes behind the hello (at most FQN_HELLO_EXTRA_MAX) */
	int nic_from_address; /* 1: a lane's NIC is the one holding its local address (its QP's port) */
	/* Connect from local (NULL: routed) to remote; nic: the device an
	 * IB lane uses unless local is another of nics[0..nnics-1]. keepalive_ms:
	 * TCP lanes' keepalive (lane.h). 0 or a negative errno. */
	int (*dial)(const struct fqn_config *cfg, const struct fqn_nic *nics, int nnics, int nic,
		    const struct sockaddr *local, const struct sockaddr *remote, int keepalive_ms,
		    struct fqn_lane **out);
	/* The lane of an accepted socket fd whose hello was read (after_hello:
	 * the hello_extra bytes that followed it). 0 or a negative errno (fd closed). */
	int (*accept)(const struct fqn_config *cfg, const struct fqn_nic *nics, int nnics, int nic, int fd,
		      size_t chunk_size, int keepalive_ms, const uint8_t *after_hello, struct fqn_lane **out);
	/* devices: how many usable devices of its own the transport has
	 * here, or 0 with *why (static) saying what was found; NULL for a
	 * transport with none (TCP runs on the NICs as found). */
	int (*devices)(const char **why);
	/* Open the transport's devices: the NICs of cfg->ifaces into
	 * nics[0..*n-1] (fqn_nics_discover), put on the transport's devices
	 * where it has them (IB: a NIC without an ACTIVE verbs port is
	 * dropped, the array compacted, the port's properties become the
	 * NIC's). 0, or a negative errno with err set and nothing left open. */
	int (*open)(const struct fqn_config *cfg, struct fqn_nic *nics, int *n, char *err, size_t errlen);
	/* Close what open opened, the NICs included (the last fqn_fini). */
	void (*close)(struct fqn_nic *nics, int n);
	/* 1 if GPUDirect RDMA is loaded although the lanes copy through host
	 * memory (said at INFO after open: NCCL_PTR_HOST only); NULL: no RDMA. */
	int (*gdr_loaded)(void);
	/* Memory registration (NCCL's regMr). NULL: host memory needs none.
	 * mr_reg: register size bytes at data for device dev: 0 and *mh, or
	 * a negative errno. mr_dereg: drop a registration: 0, or a negative
	 * errno when mh is none of its. */
	int (*mr_reg)(int dev, void *data, size_t size, void **mh);
	int (*mr_dereg)(void *mh);
};

/* FABRICIQ_TRANSPORT=auto's candidates, best first, NULL-terminated: the
 * first whose devices open is taken; the last has no devices of its own
 * (TCP) and always works. */
extern const struct fqn_lane_driver *const fqn_lane_drivers[];

/* The driver of FABRICIQ_TRANSPORT=name ("tcp", "ib"), NULL for another name. */
const struct fqn_lane_driver *fqn_lane_driver_named(const char *name);
/* The driver a listen handle's flags name. */
const struct fqn_lane_driver *fqn_lane_driver_of(uint8_t handle_flags);

/* A non-blocking listening socket on nic's address, ephemeral port: the fd
 * (and *bound) or a negative errno. */
int fqn_listen_on(const struct fqn_nic *nic, struct sockaddr_storage *bound);

#endif /* FQN_LANE_DRV_H */
