/*
 * detector_act: the action queue, and the nodes with their drain hints
 * (detector_act.h). The bottom of the detector's files (detector_int.h).
 */
#include "controller/detector_act.h"

#include <inttypes.h>
#include <stdio.h>
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

/* What to check on a fabric component blamed for loss or delay: a cable
 * ("A~B"), one direction of a link ("A>B": A's queue toward B) or a
 * switch (a leaf when hosts hang off it: it cannot be routed around). */
static void fabric_check(char *buf, size_t len, const char *comp, bool loss, bool leaf)
{
	if (strchr(comp, '~') && loss)
		snprintf(buf, len,
			 "check the cable %s: both ends' optics (DOM: rx/tx power), the ports' error and "
			 "discard counters (CRC, symbol errors, FEC); reseat or replace the cable or optic; "
			 "traffic routes around it while it is down",
			 comp);
	else if (strchr(comp, '~') || strchr(comp, '>'))
		snprintf(buf, len,
			 "check the link %s: its utilisation%s, the ports' queue, ECN-marked and PFC pause "
			 "counters, and whether ECMP puts more than its share of flows on it (compare the "
			 "switch's other links)%s",
			 comp, strchr(comp, '>') ? " that way" : " each way",
			 loss ? "; its ports' discard and error counters" : "");
	else
		snprintf(buf, len,
			 "check %s: its %s, its links' utilisation, PFC pause counters, whether one of its "
			 "links carries more than its share (ECMP); %s",
			 comp,
			 loss ? "buffer drops and discard/error counters" : "buffer and queue occupancy",
			 leaf ? "its hosts reach the fabric through it alone on this rail: replacing it "
				"takes their rail down"
			      : "if it goes on, take it out of the ECMP groups (isolate it): the other "
				"switches of its tier carry its traffic");
}

void det_hint_fabric(struct fq_detector *d, uint64_t handle, const char *component, bool loss, bool leaf,
		     int64_t now)
{
	char what[512];

	fabric_check(what, sizeof(what), component, loss, leaf);
	det_push(d, &(struct fq_det_action){.kind = FQ_DET_HINT,
					    .handle = handle,
					    .start_ns = now,
					    .component = component,
					    .reason = what});
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
