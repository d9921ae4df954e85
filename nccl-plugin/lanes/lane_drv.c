#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/lanes/lane_drv.h"

extern const struct fqn_lane_driver fqn_lane_driver_tcp; /* lanes/tcp/lane_tcp.c */
extern const struct fqn_lane_driver fqn_lane_driver_ib;  /* lanes/ib/ib_dev.c */

const struct fqn_lane_driver *const fqn_lane_drivers[] = {&fqn_lane_driver_ib, &fqn_lane_driver_tcp, NULL};

const struct fqn_lane_driver *fqn_lane_driver_named(const char *name)
{
	for (int i = 0; fqn_lane_drivers[i]; i++)
		if (strcmp(fqn_lane_drivers[i]->name, name) == 0)
			return fqn_lane_drivers[i];
	return NULL;
}

const struct fqn_lane_driver *fqn_lane_driver_of(uint8_t handle_flags)
{
	return handle_flags & FQN_LANE_DRV_F_IB ? &fqn_lane_driver_ib : &fqn_lane_driver_tcp;
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
