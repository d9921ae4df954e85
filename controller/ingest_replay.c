/*
 * ingest_replay: the spool's side of ingest. Frames are written to the
 * spool (controller/spool.h) as records while the database is away, read
 * back at start (their seqs count as accepted) and replayed into the
 * database once it is back.
 */
#include "controller/ingest_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/log.h"
#include "controller/spool.h"
#include "db/db.h"

/* ---- spool records -------------------------------------------------- */

/* u16 node length | node | u64 seq | i64 recv_ns | packed envelope */
int ing_spool_item(struct fq_ingest *ing, const struct item *it)
{
	size_t nl = strlen(it->node->name), el = fabriciq__envelope__get_packed_size(it->env);
	size_t len = 2 + nl + 16 + el;
	uint8_t *b = malloc(len);
	uint16_t nl16 = (uint16_t)nl;
	int rc;

	if (!b)
		return -ENOMEM;
	memcpy(b, &nl16, 2);
	memcpy(b + 2, it->node->name, nl);
	memcpy(b + 2 + nl, &it->seq, 8);
	memcpy(b + 10 + nl, &it->recv_ns, 8);
	fabriciq__envelope__pack(it->env, b + 18 + nl);
	rc = fq_spool_append(ing->spool, b, len);
	free(b);
	return rc;
}

static int unspool_item(struct fq_ingest *ing, const uint8_t *b, size_t len, struct item *it)
{
	uint16_t nl;
	char name[65536];

	if (len < 18)
		return -EBADMSG;
	memcpy(&nl, b, 2);
	if ((size_t)nl + 18 > len)
		return -EBADMSG;
	memcpy(name, b + 2, nl);
	name[nl] = '\0';
	memcpy(&it->seq, b + 2 + nl, 8);
	memcpy(&it->recv_ns, b + 10 + nl, 8);
	if (!(it->node = ing_node_get(ing, name)))
		return -ENOMEM;
	return fq_frame_unpack(b + 18 + nl, len - 18 - nl, &it->env);
}

int ing_batch_to_spool(struct fq_ingest *ing)
{
	int rc = 0;

	for (size_t i = 0; i < ing->nbatch && !rc; i++)
		rc = ing_spool_item(ing, &ing->batch[i]);
	if (!rc)
		rc = fq_spool_sync(ing->spool);
	if (rc) {
		/* Nothing of this batch counts as spooled (its agents resend it). */
		fq_spool_discard(ing->spool);
		fq_log_rl(FQ_LOG_ERROR,
			  "spool %s: %s: %zu frames not acknowledged, their agents will resend them",
			  ing->spool_dir, strerror(-rc), ing->nbatch);
		return rc;
	}
	ing->st.spooled_frames += ing->nbatch;
	return 0;
}

/* Replays the spool into the database, chunk by chunk, for up to budget_ns. */
int ing_replay(struct fq_ingest *ing, int64_t budget_ns)
{
	int64_t until = fq_clock_ns(CLOCK_MONOTONIC) + budget_ns;
	struct item *items = calloc(REPLAY_CHUNK, sizeof(*items));
	int rc = 0;

	if (!items)
		return -ENOMEM;
	while (fq_spool_pending_bytes(ing->spool) && fq_clock_ns(CLOCK_MONOTONIC) < until) {
		size_t n = 0, bad = 0, chunk = ing->down ? RETRY_CHUNK : REPLAY_CHUNK;
		const uint8_t *b;
		size_t len;

		while (n < chunk && (rc = fq_spool_next(ing->spool, &b, &len)) == 1) {
			if (unspool_item(ing, b, len, &items[n]) < 0) {
				bad++;
				continue;
			}
			n++;
		}
		if (rc < 0 && rc != -EBADMSG) {
			ing_free_items(items, n);
			break;
		}
		if (bad)
			fq_warn("spool: %zu unreadable records skipped", bad);
		rc = ing_apply_items(ing, items, n, false);
		if (rc == 0) {
			/* A crash before this commit replays the chunk again:
			 * agent_seq, committed with it, makes that harmless. */
			if ((rc = fq_spool_commit(ing->spool)) < 0)
				fq_error("spool: committing the ing_replay position: %s", strerror(-rc));
			ing->st.replayed_frames += n;
			ing_db_ok(ing); /* full chunks, the configured timeout */
		} else {
			fq_spool_rewind(ing->spool);
			ing_db_down(ing, fq_db_error(ing->db));
		}
		ing_free_items(items, n);
		if (rc)
			break;
		if (!fq_spool_pending_bytes(ing->spool))
			fq_info("spool replayed into the database");
	}
	free(items);
	return rc;
}

/* At start: the seqs of frames in the spool count as accepted. */
int ing_scan_spool(struct fq_ingest *ing)
{
	const uint8_t *b;
	size_t len, n = 0;
	int rc;

	while ((rc = fq_spool_next(ing->spool, &b, &len)) == 1) {
		struct item it;
		if (unspool_item(ing, b, len, &it) < 0)
			continue;
		if (it.seq == SEQ_RESTART) {
			uint64_t next = it.env->hello->next_seq;
			it.node->accepted = it.node->durable = next ? next - 1 : 0;
			it.node->restarted = true;
		} else if (it.seq != SEQ_HELLO && it.node->accepted < it.seq) {
			it.node->accepted = it.node->durable = it.seq;
		}
		fq_frame_free(it.env);
		n++;
	}
	fq_spool_rewind(ing->spool);
	if (n)
		fq_info("spool %s holds %zu frames (%llu bytes) to ing_replay", ing->spool_dir, n,
			(unsigned long long)fq_spool_pending_bytes(ing->spool));
	return rc < 0 ? rc : 0;
}
