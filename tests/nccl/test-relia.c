/*
 * test-relia: control mode's ack / dedupe / resend state machine, alone and
 * in a simulation: a sender and a receiver joined by lanes that reorder
 * against each other, lanes that die with chunks in flight (some of which
 * reached the receiver, their acks lost: duplicates after the resend), and
 * lanes that come back. Every chunk must be taken exactly once and every
 * message acknowledged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/control/relia.h"
#include "tests/unit/tap.h"

static void t_codec(void)
{
	uint8_t rec[FQN_CTRL_SIZE];
	uint16_t lane;
	uint64_t count;

	fqn_ack_encode(3, 0x123456789aULL, rec);
	ok(fqn_ack_decode(rec, &lane, &count) == 0 && lane == 3 && count == 0x123456789aULL,
	   "ack round trip");
	rec[0] ^= 1;
	ok(fqn_ack_decode(rec, &lane, &count) == -EBADMSG, "a record with a bad magic is refused");
	fqn_ack_encode(3, 1, rec);
	rec[4] = 9;
	ok(fqn_ack_decode(rec, &lane, &count) == -EBADMSG, "an unknown record kind is refused");
}

static uint64_t popped[1024];
static int npopped;
static void record(void *arg, const struct fqn_cref *c)
{
	(void)arg;
	popped[npopped++] = c->seq * 100 + c->offset;
}

static void t_txq(void)
{
	struct fqn_txq *q = malloc(sizeof(*q));
	int full = 0;

	fqn_txq_reset(q);
	for (uint64_t k = 0; k < 3; k++)
		fqn_txq_push(q, &(struct fqn_cref){.seq = 1, .offset = k, .len = 10});
	npopped = 0;
	ok(fqn_txq_ack(q, 2, record, NULL) == 2 && npopped == 2 && popped[0] == 100 && popped[1] == 101,
	   "a cumulative ack pops the front in order");
	ok(fqn_txq_ack(q, 1, record, NULL) == 0 && fqn_txq_ack(q, 2, record, NULL) == 0 && npopped == 2,
	   "stale and repeated acks change nothing");
	ok(fqn_txq_ack(q, 4, record, NULL) == -EPROTO, "an ack beyond what was sent is a protocol error");
	ok(fqn_txq_ack(q, 3, record, NULL) == 1 && q->count == 0, "the last one");
	for (int k = 0; k < FQN_TXQ_MAX + 1; k++)
		full |= fqn_txq_push(q, &(struct fqn_cref){.seq = 2, .offset = (uint64_t)k}) == -ENOBUFS;
	ok(full && fqn_txq_full(q), "the window is bounded (%d chunks)", FQN_TXQ_MAX);
	free(q);
}

static void t_resendq(void)
{
	struct fqn_txq *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct fqn_resendq rq = {0};
	struct fqn_cref c;
	uint64_t order[8];
	int n = 0, sorted = 1;

	fqn_txq_reset(a);
	fqn_txq_reset(b);
	fqn_txq_push(a, &(struct fqn_cref){5, 0, 7});
	fqn_txq_push(a, &(struct fqn_cref){6, 3, 7});
	fqn_txq_push(b, &(struct fqn_cref){5, 2, 7});
	fqn_txq_push(b, &(struct fqn_cref){4, 9, 7});
	ok(fqn_resendq_take(&rq, a) == 14 && a->count == 0, "a failed lane's chunks move, with their bytes");
	ok(fqn_resendq_take(&rq, b) == 14, "... from a second lane too");
	fqn_resendq_pop(&rq, &c);
	fqn_resendq_unpop(&rq, &c);
	while (fqn_resendq_pop(&rq, &c) == 1)
		order[n++] = c.seq * 100 + c.offset;
	for (int k = 1; k < n; k++)
		sorted &= order[k - 1] < order[k];
	ok(n == 4 && sorted && order[0] == 409, "resends come lowest (seq, offset) first, unpop included");
	fqn_resendq_free(&rq);
	free(a);
	free(b);
}

static void t_seen(void)
{
	struct fqn_seen s;
	int complete, good = 1;

	ok(fqn_seen_begin(&s, 3) == 0 && fqn_seen_test(&s, 1) == 0, "nothing held at first");
	ok(fqn_seen_mark(&s, 1, &complete) == 1 && !complete && fqn_seen_test(&s, 1) == 1, "a chunk is held");
	ok(fqn_seen_mark(&s, 1, &complete) == 0 && !complete, "its copy is a duplicate");
	ok(fqn_seen_mark(&s, 3, &complete) == -EBADMSG && fqn_seen_test(&s, 7) == -EBADMSG,
	   "a chunk outside the message is refused");
	fqn_seen_mark(&s, 0, &complete);
	ok(fqn_seen_mark(&s, 2, &complete) == 1 && complete, "the last one completes the message");
	fqn_seen_free(&s);
	ok(fqn_seen_begin(&s, 100000) == 0, "a message of 100000 chunks (heap bits)");
	for (uint64_t k = 0; k < 100000; k++)
		good &= fqn_seen_mark(&s, 99999 - k, &complete) == 1 && complete == (k == 99999);
	ok(good, "... all taken once, complete at the last");
	fqn_seen_free(&s);

	ok(fqn_rx_classify(10, 10, 0, 0) == FQN_RX_STALL, "a message not posted yet: stall");
	ok(fqn_rx_classify(4, 10, 1, 4) == FQN_RX_LIVE, "a message being received: live");
	ok(fqn_rx_classify(4, 10, 0, 4) == FQN_RX_DUP, "a message completed: duplicate");
	ok(fqn_rx_classify(4, 300, 1, 260) == FQN_RX_DUP, "its slot holds a later message: duplicate");
}

/* ---- the simulation ---- */

#define LANES  3
#define MSGS   200
#define WIRE   4096
#define CHUNKS 9 /* at most, per message */

struct wire {
	struct fqn_cref c[WIRE];
	unsigned head, n;
	uint64_t rx_count; /* receiver: chunks taken off this lane */
	uint64_t ack_wire; /* the ack in flight back, 0 = none */
	int ack_pending;
	int up;
};

static uint64_t rnd_state = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (unsigned)(rnd_state % n);
}

static int chunks_left[MSGS];
static int nchunks[MSGS];
static void acked(void *arg, const struct fqn_cref *c)
{
	(void)arg;
	chunks_left[c->seq]--;
}

static void t_simulation(void)
{
	static struct wire w[LANES];
	static struct fqn_txq q[LANES];
	static struct fqn_seen seen[MSGS];
	static int taken[MSGS][CHUNKS];
	struct fqn_resendq rq = {0};
	uint64_t cur_seq = 0, cur_chunk = 0;
	int kills = 0, dups = 0, revivals = 0, twice = 0, steps = 0, done = 0, complete;

	for (int m = 0; m < MSGS; m++) {
		nchunks[m] = 1 + (int)rnd(CHUNKS);
		chunks_left[m] = nchunks[m];
		fqn_seen_begin(&seen[m], (uint64_t)nchunks[m]);
	}
	for (int i = 0; i < LANES; i++) {
		fqn_txq_reset(&q[i]);
		w[i].up = 1;
	}
	while (done < MSGS && steps++ < 1000000) {
		int i = (int)rnd(LANES);
		struct wire *x = &w[i];
		unsigned ev = rnd(100);

		if (!x->up) {
			if (ev < 2) { /* back: a fresh socket, fresh counts */
				memset(x, 0, sizeof(*x));
				x->up = 1;
				fqn_txq_reset(&q[i]);
				revivals++;
			}
			continue;
		}
		if (ev < 40) { /* the sender offers lane i a chunk */
			struct fqn_cref c;

			if (rq.n) {
				if (q[i].count)
					continue;
				fqn_resendq_pop(&rq, &c);
			} else {
				if (cur_seq == MSGS || fqn_txq_full(&q[i]))
					continue;
				c = (struct fqn_cref){cur_seq, cur_chunk, 1};
				if (++cur_chunk == (uint64_t)nchunks[cur_seq]) {
					cur_seq++;
					cur_chunk = 0;
				}
			}
			fqn_txq_push(&q[i], &c);
			x->c[(x->head + x->n++) % WIRE] = c;
		} else if (ev < 80 && x->n) { /* the receiver takes lane i's next chunk */
			struct fqn_cref c = x->c[x->head];
			int rc;

			x->head = (x->head + 1) % WIRE;
			x->n--;
			x->rx_count++;
			rc = fqn_seen_mark(&seen[c.seq], c.offset, &complete);
			if (rc == 1)
				taken[c.seq][c.offset]++;
			else
				dups++;
			done += complete;
			if (rnd(4) == 0) { /* batched: ack every few chunks */
				x->ack_wire = x->rx_count;
				x->ack_pending = 1;
			}
		} else if (ev < 95) { /* an ack arrives (or the receiver acks an idle lane) */
			if (!x->ack_pending && x->rx_count) {
				x->ack_wire = x->rx_count;
				x->ack_pending = 1;
			}
			if (x->ack_pending) {
				fqn_txq_ack(&q[i], x->ack_wire, acked, NULL);
				x->ack_pending = 0;
			}
		} else if (ev < 96 && kills < 60) { /* the lane dies */
			unsigned reach = x->n ? rnd(x->n + 1) : 0;

			/* some of what was on the wire still reaches the receiver;
			 * the acks of it, and the ack in flight, are lost */
			for (unsigned k = 0; k < reach; k++) {
				struct fqn_cref c = x->c[(x->head + k) % WIRE];

				if (fqn_seen_mark(&seen[c.seq], c.offset, &complete) == 1)
					taken[c.seq][c.offset]++;
				done += complete;
			}
			x->n = 0;
			x->up = 0;
			x->ack_pending = 0;
			fqn_resendq_take(&rq, &q[i]);
			kills++;
		}
	}
	for (int m = 0; m < MSGS; m++)
		for (int k = 0; k < nchunks[m]; k++)
			twice |= taken[m][k] != 1;
	ok(done == MSGS, "simulation: all %d messages complete at the receiver (%d steps)", MSGS, steps);
	ok(!twice, "simulation: every chunk taken exactly once");
	ok(kills > 10 && revivals > 5, "simulation: %d lane deaths, %d revivals injected", kills, revivals);
	ok(dups > 0, "simulation: %d duplicates (delivered, ack lost, resent) dropped", dups);
	diag("resend queue left: %u", rq.n);
	for (int m = 0; m < MSGS; m++)
		fqn_seen_free(&seen[m]);
	fqn_resendq_free(&rq);
}

int main(void)
{
	t_codec();
	t_txq();
	t_resendq();
	t_seen();
	t_simulation();
	return done_testing();
}
