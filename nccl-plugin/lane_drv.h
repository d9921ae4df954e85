/*
 * lane_drv: the lane driver table, which puts the transport (TCP or IB
 * verbs) behind one interface for setup and failback alike (setup.c
 * dials and accepts, send.c re-dials, rejoin.c accepts re-dialed lanes);
 * the data path is behind each lane's ops (lane.h). ctx->drv is chosen
 * once by fqn_init (FABRICIQ_TRANSPORT) and nothing above this file asks
 * which transport it is.
 *
 * The hello_size() bytes open every lane, connector to listener: the
 * hello (hello.h), and for IB lanes the connector's QP handle behind it
 * (the IB lane's send_hello sends both: ib_lane.h).
 */
#ifndef FQN_LANE_DRV_H
#define FQN_LANE_DRV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct fqn_ctx;
struct fqn_lane;
struct fqn_nic;

struct fqn_lane_driver {
	const char *name;     /* "tcp", "ib": FABRICIQ_TRANSPORT after init */
	uint8_t handle_flags; /* set in every listen handle; a connector's driver must set the same */
	size_t hello_extra;   /* bytes behind the hello */
	int nic_from_address; /* 1: a lane's NIC is the one holding its local address (its QP's port) */
	/* Connect from local (NULL: routed) to remote; nic: the device an
	 * IB lane uses unless local is another NIC's. keepalive_ms: TCP
	 * lanes' keepalive (lane.h). 0 or a negative errno. */
	int (*dial)(const struct fqn_ctx *ctx, int nic, const struct sockaddr *local,
		    const struct sockaddr *remote, int keepalive_ms, struct fqn_lane **out);
	/* The lane of an accepted socket fd whose hello was read (after_hello:
	 * the hello_extra bytes that followed it). 0 or a negative errno (fd closed). */
	int (*accept)(const struct fqn_ctx *ctx, int nic, int fd, size_t chunk_size, int keepalive_ms,
		      const uint8_t *after_hello, struct fqn_lane **out);
	/* Close the devices fqn_init opened for it (the last fqn_fini); NULL: none. */
	void (*close)(void);
};

extern const struct fqn_lane_driver fqn_lane_driver_tcp;
extern const struct fqn_lane_driver fqn_lane_driver_ib;

/* The driver a listen handle's flags name (wire.h). */
const struct fqn_lane_driver *fqn_lane_driver_of(uint8_t handle_flags);

/* ctx's driver: the bytes that open a lane (the hello and what follows it). */
size_t fqn_lane_hello_size(const struct fqn_ctx *ctx);
/* ctx's driver: dial and accept (above). */
int fqn_lane_dial(const struct fqn_ctx *ctx, int nic, const struct sockaddr *local,
		  const struct sockaddr *remote, int keepalive_ms, struct fqn_lane **out);
int fqn_lane_accepted(const struct fqn_ctx *ctx, int nic, int fd, size_t chunk_size, int keepalive_ms,
		      const uint8_t *after_hello, struct fqn_lane **out);

/* A non-blocking listening socket on nic's address, ephemeral port: the fd
 * (and *bound) or a negative errno. */
int fqn_listen_on(const struct fqn_nic *nic, struct sockaddr_storage *bound);

/* The index of ctx's NIC whose address a is; dflt if none matches. */
int fqn_nic_of_addr(const struct fqn_ctx *ctx, const struct sockaddr_storage *a, int dflt);

#endif /* FQN_LANE_DRV_H */
