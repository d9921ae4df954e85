/*
 * detector_act: the action queue, and the nodes with their drain hints
 * (detector_act.h). The bottom of the detector's files (detector_int.h).
 */
#include "controller/detector_act.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "controller/detector_int.h"

/* ---- action queue ------------------------------------------------------- */

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void qact_free(struct qact *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < sizeof(q->str) / sizeof(q->str[0]); i++)
		free(q->str[i]);
	free(q->ranks);
	free(q);
}

/* Queues a copy of a (its strings and ranks are copied). */
void det_push(struct fq_detector *d, const struct fq_det_action *a)
{
	const char *src[9] = {a->anomaly_kind, a->node,          a->nic,    a->remote_node, a->remote_nic,
			      a->summary,      a->evidence_json, a->reason, a->component};
	const char **dst[9];
	struct qact *q;

	if (d->pending >= d->c.max_pending) {
		d->dropped_actions++;
		fq_log_ratelimited(&d->rl, FQ_LOG_WARN,
				   "detector: %zu actions not taken; %" PRIu64 " dropped", d->pending,
				   d->dropped_actions);
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		goto fail;
	q->a = *a;
	dst[0] = &q->a.anomaly_kind, dst[1] = &q->a.node, dst[2] = &q->a.nic, dst[3] = &q->a.remote_node;
	dst[4] = &q->a.remote_nic, dst[5] = &q->a.summary, dst[6] = &q->a.evidence_json,
	dst[7] = &q->a.reason, dst[8] = &q->a.component;
	for (size_t i = 0; i < 9; i++) {
		q->str[i] = dup_opt(src[i]);
		if (src[i] && !q->str[i])
			goto fail;
		*dst[i] = q->str[i];
	}
	if (a->nranks) {
		q->ranks = malloc(a->nranks * sizeof(*q->ranks));
		if (!q->ranks)
			goto fail;
		memcpy(q->ranks, a->ranks, a->nranks * sizeof(*q->ranks));
	}
	q->a.ranks = q->ranks;
	if (d->tail)
		d->tail->next = q;
	else
		d->head = q;
	d->tail = q;
	d->pending++;
	return;
fail:
	qact_free(q);
	d->dropped_actions++;
}

void det_actions_free(struct fq_detector *d)
{
	struct qact *q, *next;

	for (q = d->head; q; q = next) {
		next = q->next;
		qact_free(q);
	}
	qact_free(d->cur);
}

int fq_detector_next(struct fq_detector *d, struct fq_det_action *a)
{
	if (!d || !a)
		return 0;
	qact_free(d->cur);
	d->cur = d->head;
	if (!d->cur)
		return 0;
	d->head = d->cur->next;
	if (!d->head)
		d->tail = NULL;
	d->pending--;
	*a = d->cur->a;
	return 1;
}

void fq_detector_unget(struct fq_detector *d)
{
	if (!d || !d->cur)
		return;
	d->cur->next = d->head;
	d->head = d->cur;
	if (!d->tail)
		d->tail = d->cur;
	d->cur = NULL;
	d->pending++;
}

/* ---- nodes and hints ------------------------------------------------------ */

struct node_ent *det_node_get(struct fq_detector *d, const char *name, int64_t now)
{
	char key[NODE_LEN];

	copy_name(key, sizeof(key), name);
	return (struct node_ent *)fq_captab_get(&d->nodes, key, now, true, NULL);
}

struct node_ent *det_node_find(struct fq_detector *d, const char *name)
{
	return (struct node_ent *)fq_captab_find(&d->nodes, name); /* name: a NODE_LEN key */
}

/* A drain hint for the node, unless it is drained already or one is pending. */
void det_hint_drain(struct fq_detector *d, const struct nic_key *k, const char *reason, uint64_t handle,
		    int64_t now)
{
	struct node_ent *n = det_node_get(d, k->node, now);

	if (!n || n->drained || n->drain_hinted)
		return;
	n->drain_hinted = true;
	det_push(d, &(struct fq_det_action){.kind = FQ_DET_HINT,
					    .handle = handle,
					    .start_ns = now,
					    .node = k->node,
					    .nic = k->nic,
					    .reason = reason});
}

void fq_detector_node_drained(struct fq_detector *d, const char *node, const char *reason, int64_t now_ns)
{
	struct node_ent *n;

	if (!d || !has(node)) {
		if (d)
			d->rejected_inputs++;
		return;
	}
	n = det_node_get(d, node, now_ns);
	if (!n)
		return;
	n->drain_hinted = false;
	n->resume_hinted = false;
	n->drained = has(reason);
	n->own_reason = fq_rule_is_own_reason(reason);
	n->drained_ns = now_ns;
}
