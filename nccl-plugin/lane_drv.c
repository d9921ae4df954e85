#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/ctx.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/ib_dev.h"
#include "nccl-plugin/ib_handle.h"
#include "nccl-plugin/ib_lane.h"
#include "nccl-plugin/lane.h"
#include "nccl-plugin/lane_drv.h"
#include "nccl-plugin/wire.h"

int fqn_nic_of_addr(const struct fqn_ctx *ctx, const struct sockaddr_storage *a0, int dflt)
{
	for (int i = 0; i < ctx->nnics; i++) {
		const struct sockaddr_storage *a = &ctx->nics[i].addr;

		if (a->ss_family == AF_INET && a0->ss_family == AF_INET &&
		    ((struct sockaddr_in *)a)->sin_addr.s_addr ==
			((const struct sockaddr_in *)a0)->sin_addr.s_addr)
			return i;
		if (a->ss_family == AF_INET6 && a0->ss_family == AF_INET6 &&
		    memcmp(&((struct sockaddr_in6 *)a)->sin6_addr,
			   &((const struct sockaddr_in6 *)a0)->sin6_addr, 16) == 0)
			return i;
	}
	return dflt;
}

int fqn_listen_on(const struct fqn_nic *nic, struct sockaddr_storage *bound)
{
	socklen_t len = sizeof(*bound);
	int fd, rc, one = 1;

	fd = socket(nic->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memcpy(bound, &nic->addr, sizeof(*bound));
	if (bind(fd, (struct sockaddr *)bound,
		 nic->addr.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) <
		0 ||
	    listen(fd, 128) < 0 || getsockname(fd, (struct sockaddr *)bound, &len) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

static int tcp_dial(const struct fqn_ctx *ctx, int nic, const struct sockaddr *local,
		    const struct sockaddr *remote, int keepalive_ms, struct fqn_lane **out)
{
	(void)nic;
	return fqn_lane_tcp_connect(local, remote, ctx->cfg.sock_buf_bytes, keepalive_ms, out);
}

static int tcp_accept(const struct fqn_ctx *ctx, int nic, int fd, size_t chunk_size, int keepalive_ms,
		      const uint8_t *after_hello, struct fqn_lane **out)
{
	(void)nic, (void)chunk_size, (void)after_hello;
	return fqn_lane_tcp_adopt(fd, ctx->cfg.sock_buf_bytes, keepalive_ms, out);
}

static int ib_dial(const struct fqn_ctx *ctx, int nic, const struct sockaddr *local,
		   const struct sockaddr *remote, int keepalive_ms, struct fqn_lane **out)
{
	(void)keepalive_ms;
	if (local)
		nic = fqn_nic_of_addr(ctx, (const struct sockaddr_storage *)local, nic);
	/* the TCP connection becomes the QP's side channel */
	return fqn_lane_ib_connect(nic, local, remote, ctx->cfg.chunk_size, out);
}

static int ib_accept(const struct fqn_ctx *ctx, int nic, int fd, size_t chunk_size, int keepalive_ms,
		     const uint8_t *after_hello, struct fqn_lane **out)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	(void)keepalive_ms;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		nic = fqn_nic_of_addr(ctx, &ss, nic);
	return fqn_lane_ib_adopt(nic, fd, chunk_size, after_hello, out);
}

const struct fqn_lane_driver fqn_lane_driver_tcp = {
    .name = "tcp",
    .handle_flags = 0,
    .hello_extra = 0,
    .nic_from_address = 0,
    .dial = tcp_dial,
    .accept = tcp_accept,
    .close = NULL,
};

const struct fqn_lane_driver fqn_lane_driver_ib = {
    .name = "ib",
    .handle_flags = FQN_HANDLE_F_IB,
    .hello_extra = FQIB_HANDLE_SIZE,
    .nic_from_address = 1,
    .dial = ib_dial,
    .accept = ib_accept,
    .close = fqib_devs_close,
};

const struct fqn_lane_driver *fqn_lane_driver_of(uint8_t handle_flags)
{
	return handle_flags & FQN_HANDLE_F_IB ? &fqn_lane_driver_ib : &fqn_lane_driver_tcp;
}

size_t fqn_lane_hello_size(const struct fqn_ctx *ctx)
{
	return FQN_HELLO_SIZE + ctx->drv->hello_extra;
}

int fqn_lane_dial(const struct fqn_ctx *ctx, int nic, const struct sockaddr *local,
		  const struct sockaddr *remote, int keepalive_ms, struct fqn_lane **out)
{
	return ctx->drv->dial(ctx, nic, local, remote, keepalive_ms, out);
}

int fqn_lane_accepted(const struct fqn_ctx *ctx, int nic, int fd, size_t chunk_size, int keepalive_ms,
		      const uint8_t *after_hello, struct fqn_lane **out)
{
	return ctx->drv->accept(ctx, nic, fd, chunk_size, keepalive_ms, after_hello, out);
}
