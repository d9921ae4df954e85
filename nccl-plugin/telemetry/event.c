#include <stdio.h>
#include <stdlib.h>

#include "nccl-plugin/telemetry/event.h"
#include "nccl-plugin/telemetry/telemetry.h"

void fqn_event_push(struct fqn_telemetry *t, uint32_t rank1, int64_t start_ns, int synchronised,
		    const struct fqn_event *e)
{
	struct fqn_lane_sample *s;

	/* a sample is large (its histogram): once per event, never per chunk */
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->event = 1;
	snprintf(s->cause, sizeof(s->cause), "%s", e->cause);
	s->conn_id = e->conn_id;
	s->lane = e->lane;
	s->to_lane = e->to_lane;
	s->is_send = e->is_send;
	s->rank1 = rank1;
	s->peer_rank1 = e->peer_rank1;
	snprintf(s->kind, sizeof(s->kind), "%s", e->kind);
	snprintf(s->nic, sizeof(s->nic), "%s", e->nic);
	snprintf(s->local, sizeof(s->local), "%s", e->local);
	snprintf(s->peer, sizeof(s->peer), "%s", e->peer);
	s->start_ns = start_ns;
	s->synchronised = synchronised;
	s->detect_ns = e->detect_ns;
	s->bytes_resent = e->bytes_resent;
	s->duration_ns = e->duration_ns;
	fqn_telemetry_push(t, s);
	free(s);
}
