/*
 * ingest_batch: the bottom of ingest (ingest_int.h): the nodes' states,
 * and the items of a batch once it is settled: acknowledged when durable,
 * dropped when the spool is full, freed. Calls nothing of the other
 * ingest files.
 */
#include "controller/ingest_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/frame.h"

struct node_state *ing_node_get(struct fq_ingest *ing, const char *name)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(&ing->nodes, name);
	struct node_state *n;

	if (!e)
		return NULL;
	if (e->value)
		return e->value;
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		fq_strmap_remove(&ing->nodes, name);
		return NULL;
	}
	e->value = n;
	return n;
}

static void node_free(void *v)
{
	struct node_state *n = v;

	if (n)
		free(n->name);
	free(n);
}

void ing_nodes_clear(struct fq_ingest *ing)
{
	fq_strmap_clear(&ing->nodes, node_free);
}

/* After the batch is durable (stored or spooled): acknowledge, reset. */
void ing_batch_durable(struct fq_ingest *ing)
{
	for (size_t i = 0; i < ing->nbatch; i++) {
		struct node_state *n = ing->batch[i].node;
		if (!n->batch_max)
			continue;
		n->durable = n->batch_max;
		n->batch_max = 0;
		ing->ops.durable(ing->arg, n->name, n->durable);
	}
}

/* The spool is full: forget these frames, let their agents resend them. */
void ing_items_drop(struct fq_ingest *ing, const struct item *items, size_t nitems)
{
	for (size_t i = 0; i < nitems; i++) {
		struct node_state *n = items[i].node;
		if (items[i].seq == SEQ_RESTART)
			n->restart_dropped = true;
		if (!n->batch_max && !n->inflight_max)
			continue;
		n->accepted = n->durable;
		n->batch_max = n->inflight_max = 0;
		ing->ops.dropped(ing->arg, n->name);
	}
	ing->st.spool_full_drops += nitems;
}

void ing_batch_drop(struct fq_ingest *ing)
{
	ing_items_drop(ing, ing->batch, ing->nbatch);
}

void ing_free_items(struct item *items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fq_frame_free(items[i].env);
}
