/* proto: every message kind round-trips; unknown fields are ignored. */
#include "common/frame.h"

#include "tests/unit/tap.h"

static Fabriciq__Envelope *roundtrip(const Fabriciq__Envelope *in)
{
	uint8_t *b;
	size_t l;
	Fabriciq__Envelope *out = NULL;

	if (fq_frame_encode(in, 0, &b, &l) < 0)
		return NULL;
	if (fq_frame_unpack(b + FQ_FRAME_HEADER_SIZE, l - FQ_FRAME_HEADER_SIZE, &out) < 0)
		out = NULL;
	free(b);
	return out;
}

#define ENV(kind, field, ptr)                                                                                \
	({                                                                                                   \
		Fabriciq__Envelope e_ = FABRICIQ__ENVELOPE__INIT;                                            \
		e_.version = FQ_PROTOCOL_VERSION;                                                            \
		e_.seq = 9;                                                                                  \
		e_.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_##kind;                                        \
		e_.field = (ptr);                                                                            \
		roundtrip(&e_);                                                                              \
	})

int main(void)
{
	Fabriciq__Envelope *o;

	{
		Fabriciq__Nic nic = FABRICIQ__NIC__INIT, *nics[1] = {&nic};
		Fabriciq__AgentHello m = FABRICIQ__AGENT_HELLO__INIT;
		nic.name = "rail1";
		nic.rail = 1;
		nic.speed_mbps = 400000;
		nic.kind = FABRICIQ__NIC_KIND__NIC_ROCE;
		m.node = "n3";
		m.n_nics = 1;
		m.nics = nics;
		m.next_seq = 100;
		o = ENV(HELLO, hello, &m);
		ok(o && !strcmp(o->hello->node, "n3") && o->hello->n_nics == 1 &&
		       o->hello->nics[0]->rail == 1 &&
		       o->hello->nics[0]->kind == FABRICIQ__NIC_KIND__NIC_ROCE && o->hello->next_seq == 100,
		   "AgentHello");
		fq_frame_free(o);
	}
	{
		Fabriciq__ProbeReport m = FABRICIQ__PROBE_REPORT__INIT;
		m.remote_node = "n2";
		m.owd_fwd_p99_ns = 94000;
		m.owd_rev_min_ns = -5; /* delays on a not-yet-synchronised timeline can be negative */
		m.timestamp_kind = FABRICIQ__TIMESTAMP_KIND__TIMESTAMP_SOFTWARE;
		o = ENV(PROBE, probe, &m);
		ok(o && o->probe->owd_fwd_p99_ns == 94000 && o->probe->owd_rev_min_ns == -5 &&
		       o->probe->timestamp_kind == FABRICIQ__TIMESTAMP_KIND__TIMESTAMP_SOFTWARE,
		   "ProbeReport");
		fq_frame_free(o);
	}
	{
		Fabriciq__ClockEstimate est = FABRICIQ__CLOCK_ESTIMATE__INIT, *ests[1] = {&est};
		Fabriciq__ClockReport m = FABRICIQ__CLOCK_REPORT__INIT;
		est.peer_node = "n4";
		est.offset_ns = -42500000;
		est.drift_ppb = 12.5;
		m.n_estimates = 1;
		m.estimates = ests;
		o = ENV(CLOCK, clock, &m);
		ok(o && o->clock->n_estimates == 1 && o->clock->estimates[0]->offset_ns == -42500000 &&
		       o->clock->estimates[0]->drift_ppb == 12.5,
		   "ClockReport");
		fq_frame_free(o);
	}
	{
		Fabriciq__LaneReport m = FABRICIQ__LANE_REPORT__INIT;
		m.job_id = 4242;
		m.step_id = 1;
		m.src_rank = 3;
		m.dst_rank = 4;
		m.bytes = 1ull << 40;
		m.synchronised = 1;
		o = ENV(LANE, lane, &m);
		ok(o && o->lane->job_id == 4242 && o->lane->bytes == 1ull << 40 && o->lane->synchronised,
		   "LaneReport");
		fq_frame_free(o);
	}
	{
		Fabriciq__Rank r = FABRICIQ__RANK__INIT, *ranks[1] = {&r};
		Fabriciq__StepStart m = FABRICIQ__STEP_START__INIT;
		Fabriciq__StepEnd end = FABRICIQ__STEP_END__INIT;
		r.global_rank = 7;
		r.pid = 12345;
		m.job_id = 77;
		m.n_ranks = 1;
		m.ranks = ranks;
		m.mode = "control";
		o = ENV(STEP_START, step_start, &m);
		ok(o && o->step_start->ranks[0]->pid == 12345 && !strcmp(o->step_start->mode, "control"),
		   "StepStart");
		fq_frame_free(o);
		end.job_id = 77;
		end.exit_status = 9;
		o = ENV(STEP_END, step_end, &end);
		ok(o && o->step_end->exit_status == 9, "StepEnd");
		fq_frame_free(o);
	}
	{
		Fabriciq__LinkEvent m = FABRICIQ__LINK_EVENT__INIT;
		m.local_nic = "rail1";
		m.state = FABRICIQ__LINK_EVENT__STATE__DOWN;
		m.nic_level = 1;
		o = ENV(LINK, link, &m);
		ok(o && o->link->state == FABRICIQ__LINK_EVENT__STATE__DOWN && o->link->nic_level,
		   "LinkEvent");
		fq_frame_free(o);
	}
	{
		Fabriciq__FailoverEvent m = FABRICIQ__FAILOVER_EVENT__INIT;
		m.cause = "path-down";
		m.bytes_resent = 65536;
		o = ENV(FAILOVER, failover, &m);
		ok(o && !strcmp(o->failover->cause, "path-down") && o->failover->bytes_resent == 65536,
		   "FailoverEvent");
		fq_frame_free(o);
	}
	{
		Fabriciq__ClockCorrection m = FABRICIQ__CLOCK_CORRECTION__INIT;
		m.reference_node = "n1";
		m.epoch = 5;
		m.offset_ns = -300;
		o = ENV(CORRECTION, correction, &m);
		ok(o && o->correction->epoch == 5 && o->correction->offset_ns == -300, "ClockCorrection");
		fq_frame_free(o);
	}
	{
		Fabriciq__Peer p = FABRICIQ__PEER__INIT, *peers[1] = {&p};
		Fabriciq__PeerAssignment__NicPeers np = FABRICIQ__PEER_ASSIGNMENT__NIC_PEERS__INIT,
						   *nps[1] = {&np};
		Fabriciq__PeerAssignment m = FABRICIQ__PEER_ASSIGNMENT__INIT;
		p.node = "n2";
		p.address = "198.19.0.5";
		np.local_nic = "rail0";
		np.n_peers = 1;
		np.peers = peers;
		m.n_nics = 1;
		m.nics = nps;
		o = ENV(PEERS, peers, &m);
		ok(o && o->peers->nics[0]->n_peers == 1 &&
		       !strcmp(o->peers->nics[0]->peers[0]->address, "198.19.0.5"),
		   "PeerAssignment");
		fq_frame_free(o);
	}
	{
		Fabriciq__Ack m = FABRICIQ__ACK__INIT;
		m.seq = 1234567;
		o = ENV(ACK, ack, &m);
		ok(o && o->ack->seq == 1234567, "Ack");
		fq_frame_free(o);
	}

	/* A newer peer's frame: an unknown field (number 999, varint) appended
	 * to the envelope and an unknown field inside the payload are ignored. */
	{
		Fabriciq__Envelope e = FABRICIQ__ENVELOPE__INIT, *d = NULL;
		Fabriciq__Ack ack = FABRICIQ__ACK__INIT;
		uint8_t buf[64];
		size_t n;
		e.version = FQ_PROTOCOL_VERSION;
		e.seq = 3;
		e.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_ACK;
		e.ack = &ack;
		ack.seq = 5;
		n = fabriciq__envelope__pack(&e, buf);
		/* tag = (999 << 3) | 0 as a varint, then value 1 */
		buf[n++] = 0xb8;
		buf[n++] = 0x3e;
		buf[n++] = 0x01;
		ok(fq_frame_unpack(buf, n, &d) == 0 && d->seq == 3 && d->ack->seq == 5,
		   "unknown envelope field ignored");
		fq_frame_free(d);
		/* unknown payload kind (field 99, length-delimited, 2 bytes) */
		n = fabriciq__envelope__pack(&e, buf);
		e.payload_case = FABRICIQ__ENVELOPE__PAYLOAD__NOT_SET;
		n = fabriciq__envelope__pack(&e, buf);
		buf[n++] = ((99 << 3 | 2) & 0x7f) | 0x80;
		buf[n++] = (99 << 3 | 2) >> 7;
		buf[n++] = 2;
		buf[n++] = 0x08;
		buf[n++] = 0x01;
		ok(fq_frame_unpack(buf, n, &d) == 0 &&
		       d->payload_case == FABRICIQ__ENVELOPE__PAYLOAD__NOT_SET,
		   "unknown payload kind decodes as 'no payload'");
		fq_frame_free(d);
	}
	return done_testing();
}
