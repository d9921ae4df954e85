/*
 * send: the sending side of a connection.
 *
 * Messages take request slots in posting order (slot = seq % FQN_SEND_SLOTS;
 * a slot still in use means "no request now"). One cursor walks the posted
 * messages chunk by chunk; whenever a lane is free it takes the next chunk,
 * stamps it and starts transmitting it. A lane whose socket drains faster
 * takes more chunks, so the load follows each lane's capacity. A send
 * completes when its last chunk has been handed to the kernel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/conn.h"

struct fqn_send {
	struct fqn_comm c;
	uint64_t next_seq; /* next message posted */
	uint64_t tx_seq;   /* message the cursor is in */
	uint64_t tx_off;   /* next chunk's offset in it */
	unsigned rr;       /* first lane to offer a chunk to */
	struct fqn_req reqs[FQN_SEND_SLOTS];
};

int fqn_send_from_lanes(int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size, uint64_t conn_id,
			struct fqn_send **out)
{
	struct fqn_send *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->c.is_send = 1;
	s->c.dev = dev;
	s->c.nlanes = nlanes;
	s->c.chunk_size = chunk_size;
	s->c.conn_id = conn_id;
	s->c.err_lane = -1;
	for (int i = 0; i < nlanes; i++)
		s->c.lanes[i] = lanes[i];
	fqn_comm_stats_init(&s->c);
	*out = s;
	return 0;
}

/* Offer chunks to lane i until it is busy or nothing is left to send. */
static int send_fill_lane(struct fqn_send *s, int i)
{
	struct fqn_lane *l = s->c.lanes[i];

	for (;;) {
		struct fqn_req *m;
		struct fqn_chunk_hdr h;
		void *cookie;
		int rc, sync;

		rc = l->ops->tx_progress(l, &cookie);
		if (rc < 0)
			return fqn_comm_fail(&s->c, i, rc, "send");
		if (rc == 1) {
			m = cookie;
			if (--m->chunks_left == 0)
				m->state = FQN_REQ_DONE;
		}
		if (s->tx_seq == s->next_seq)
			return 0; /* nothing more to send */
		m = &s->reqs[s->tx_seq % FQN_SEND_SLOTS];
		h.seq = m->seq;
		h.msg_size = m->cap[0];
		h.offset = s->tx_off;
		h.len = fqn_chunk_len(h.msg_size, s->c.chunk_size, h.offset);
		h.tag = m->tags[0];
		h.lane = (uint16_t)i;
		h.send_ns = fqn_clock_now(&sync);
		h.flags = sync ? FQN_CHUNK_F_SYNC : 0;
		rc = l->ops->tx_chunk(l, &h, (const uint8_t *)m->data[0] + h.offset, m);
		if (rc == -EAGAIN)
			return 0; /* lane busy */
		if (rc < 0)
			return fqn_comm_fail(&s->c, i, rc, "send");
		s->c.stats[i].bytes += h.len;
		s->c.stats[i].chunks++;
		s->c.stats[i].unsync |= !sync;
		s->tx_off += h.len;
		if (s->tx_off >= h.msg_size) {
			s->c.stats[i].msgs++;
			s->tx_seq++;
			s->tx_off = 0;
		}
		fqn_comm_tick(&s->c, i, h.send_ns, 0);
	}
}

int fqn_send_progress(struct fqn_send *s)
{
	int n = s->c.nlanes;

	if (s->c.err)
		return s->c.err;
	for (int k = 0; k < n; k++) {
		int rc = send_fill_lane(s, (int)((s->rr + (unsigned)k) % (unsigned)n));

		if (rc < 0)
			return rc;
	}
	s->rr++;
	return 0;
}

int fqn_isend(struct fqn_send *s, void *data, size_t size, int tag, struct fqn_req **out)
{
	struct fqn_req *m;

	*out = NULL;
	if (s->c.err)
		return s->c.err;
	if (size > FQN_MAX_MSG_SIZE || (size && !data))
		return -EINVAL;
	m = &s->reqs[s->next_seq % FQN_SEND_SLOTS];
	if (m->state != FQN_REQ_FREE)
		return 0; /* all slots in flight: NCCL calls again */
	m->kind = FQN_REQ_SEND;
	m->comm = &s->c;
	m->seq = s->next_seq++;
	m->n = 1;
	m->data[0] = data;
	m->cap[0] = size;
	m->tags[0] = tag;
	m->chunks_left = fqn_chunk_count(size, s->c.chunk_size);
	m->state = FQN_REQ_ACTIVE;
	*out = m;
	return fqn_send_progress(s);
}

int fqn_close_send(struct fqn_send *s)
{
	if (!s)
		return 0;
	fqn_comm_release(&s->c);
	free(s);
	return 0;
}
