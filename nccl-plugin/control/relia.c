/* relia: acks, unacked FIFOs, the resend queue, duplicate detection (see relia.h). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/control/relia.h"

void fqn_ack_encode(uint16_t lane, uint64_t count, uint8_t out[FQN_CTRL_SIZE])
{
	uint32_t magic = htole32(FQN_CTRL_MAGIC);
	uint16_t kind = htole16(FQN_CTRL_ACK), ln = htole16(lane);
	uint64_t c = htole64(count);

	memcpy(out, &magic, 4);
	memcpy(out + 4, &kind, 2);
	memcpy(out + 6, &ln, 2);
	memcpy(out + 8, &c, 8);
}

int fqn_ack_decode(const uint8_t in[FQN_CTRL_SIZE], uint16_t *lane, uint64_t *count)
{
	uint32_t magic;
	uint16_t kind, ln;
	uint64_t c;

	memcpy(&magic, in, 4);
	memcpy(&kind, in + 4, 2);
	memcpy(&ln, in + 6, 2);
	memcpy(&c, in + 8, 8);
	if (le32toh(magic) != FQN_CTRL_MAGIC || le16toh(kind) != FQN_CTRL_ACK)
		return -EBADMSG;
	*lane = le16toh(ln);
	*count = le64toh(c);
	return 0;
}

void fqn_txq_reset(struct fqn_txq *q)
{
	q->head = q->count = 0;
	q->pushed = q->acked = 0;
}

int fqn_txq_push(struct fqn_txq *q, const struct fqn_cref *c)
{
	if (q->count == FQN_TXQ_MAX)
		return -ENOBUFS;
	q->e[(q->head + q->count) % FQN_TXQ_MAX] = *c;
	q->count++;
	q->pushed++;
	return 0;
}

int fqn_txq_ack(struct fqn_txq *q, uint64_t count, void (*done)(void *arg, const struct fqn_cref *c),
		void *arg)
{
	int n = 0;

	if (count > q->pushed)
		return -EPROTO;
	while (q->acked < count) {
		const struct fqn_cref *c = &q->e[q->head];

		q->head = (q->head + 1) % FQN_TXQ_MAX;
		q->count--;
		q->acked++;
		n++;
		if (done)
			done(arg, c);
	}
	return n;
}

static int cref_cmp(const struct fqn_cref *a, const struct fqn_cref *b)
{
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

int64_t fqn_resendq_take(struct fqn_resendq *rq, struct fqn_txq *q)
{
	int64_t bytes = 0;

	if (rq->n + q->count > rq->cap) {
		unsigned ncap = (rq->n + q->count) * 2 + 16;
		struct fqn_cref *ne = realloc(rq->e, ncap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		rq->e = ne;
		rq->cap = ncap;
	}
	for (unsigned k = 0; k < q->count; k++) {
		const struct fqn_cref *c = &q->e[(q->head + k) % FQN_TXQ_MAX];
		unsigned i = rq->n;

		/* insertion into a descending array: a few hundred entries at most per failure */
		while (i > 0 && cref_cmp(&rq->e[i - 1], c) < 0) {
			rq->e[i] = rq->e[i - 1];
			i--;
		}
		rq->e[i] = *c;
		rq->n++;
		bytes += c->len;
	}
	fqn_txq_reset(q);
	return bytes;
}

int fqn_resendq_pop(struct fqn_resendq *rq, struct fqn_cref *c)
{
	if (rq->n == 0)
		return 0;
	*c = rq->e[--rq->n];
	return 1;
}

void fqn_resendq_unpop(struct fqn_resendq *rq, const struct fqn_cref *c)
{
	rq->e[rq->n++] = *c; /* the slot it came from: still allocated, still the lowest */
}

void fqn_resendq_free(struct fqn_resendq *rq)
{
	free(rq->e);
	memset(rq, 0, sizeof(*rq));
}

enum fqn_rx_class fqn_rx_classify(uint64_t seq, uint64_t post_seq, int slot_active, uint64_t slot_seq)
{
	if (seq >= post_seq)
		return FQN_RX_STALL;
	if (!slot_active || slot_seq != seq)
		return FQN_RX_DUP; /* completed; its slot may already hold a later message */
	return FQN_RX_LIVE;
}
