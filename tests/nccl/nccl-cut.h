/* Fault injection for the plugin's C tests (header only): a sender's
 * lanes run through these ops, which report a socket error on a lane once
 * it is cut and note which lane took the last chunk. A re-dialed lane gets
 * the real ops again. One connection per test process. */
#ifndef FQN_TESTS_NCCL_CUT_H
#define FQN_TESTS_NCCL_CUT_H

#include <errno.h>
#include <string.h>

#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/lanes/lane.h"

static const struct fqn_lane_ops *real_ops;
static struct fqn_lane_ops cut_ops;
static int cut[FQN_MAX_LANES], last_lane = -1;

static int cut_tx_chunk(struct fqn_lane *l, const struct fqn_chunk_hdr *h, const void *p, void *cookie)
{
	int rc = cut[l->index] ? -ECONNRESET : real_ops->tx_chunk(l, h, p, cookie);

	if (rc == 0)
		last_lane = l->index;
	return rc;
}

static int cut_tx_progress(struct fqn_lane *l, void **cookie)
{
	return cut[l->index] ? -ECONNRESET : real_ops->tx_progress(l, cookie);
}

static int cut_rx_ctrl(struct fqn_lane *l, uint8_t rec[FQN_CTRL_SIZE])
{
	return cut[l->index] ? -ECONNRESET : real_ops->rx_ctrl(l, rec);
}

static void cut_install(struct fqn_send *s)
{
	struct fqn_comm *c = (struct fqn_comm *)s; /* struct fqn_send starts with its comm */

	for (int i = 0; i < c->nlanes; i++)
		if (c->lanes[i] && c->lanes[i]->ops != &cut_ops) {
			real_ops = c->lanes[i]->ops; /* every lane's: they are all TCP */
			c->lanes[i]->ops = &cut_ops;
		}
	cut_ops = *real_ops;
	cut_ops.tx_chunk = cut_tx_chunk;
	cut_ops.tx_progress = cut_tx_progress;
	cut_ops.rx_ctrl = cut_rx_ctrl;
	memset(cut, 0, sizeof(cut));
	last_lane = -1;
}

#endif /* FQN_TESTS_NCCL_CUT_H */
