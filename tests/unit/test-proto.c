/*
 * proto: every message kind round-trips; unknown fields are ignored.
 *
 * Besides a readable check per kind, every payload of the Envelope's oneof
 * is filled through protobuf-c's descriptors, every field (nested and
 * repeated ones too) set to a non-default value, and must re-encode to the
 * same bytes after a trip through the frame code: a field added to
 * fabriciq.proto is covered without touching this test.
 */
#include "common/frame.h"

#include "tests/unit/tap.h"

/* Everything fill() allocates, freed at once. */
static void *arena[4096];
static unsigned narena;

static void *arena_alloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p || narena == sizeof(arena) / sizeof(arena[0]))
		abort();
	arena[narena++] = p;
	return p;
}

static void arena_free(void)
{
	while (narena)
		free(arena[--narena]);
}

static void fill_message(ProtobufCMessage *m, unsigned depth);

/* One non-default value of field f (distinct per field id) at p. */
static void fill_value(const ProtobufCFieldDescriptor *f, void *p, unsigned depth, unsigned k)
{
	uint32_t v = f->id * 7 + k + 1;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		*(int32_t *)p = -(int32_t)v;
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		*(uint32_t *)p = v;
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		*(int64_t *)p = -(int64_t)v * 1000000007;
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		*(uint64_t *)p = (uint64_t)v << 33;
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		*(float *)p = (float)v + 0.25f;
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		*(double *)p = v + 0.125;
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)p = 1;
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *e = f->descriptor;
		*(int *)p = e->values[e->n_values - 1].value;
		break;
	}
	case PROTOBUF_C_TYPE_STRING: {
		char *str = arena_alloc(32);
		snprintf(str, 32, "%s-%u", f->name, k);
		*(char **)p = str;
		break;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *b = p;
		b->data = arena_alloc(4);
		memcpy(b->data, "\x01\x00\xff", 3);
		b->len = 3;
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessageDescriptor *d = f->descriptor;
		ProtobufCMessage *sub = arena_alloc(d->sizeof_message);
		d->message_init(sub);
		fill_message(sub, depth + 1);
		*(ProtobufCMessage **)p = sub;
		break;
	}
	}
}

static size_t value_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	default:
		return 4;
	}
}

/* Set one field: repeated ones get two elements. Oneof members set the case. */
static void fill_field(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, unsigned depth)
{
	char *base = (char *)m;

	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		void *arr = arena_alloc(2 * value_size(f));
		for (unsigned k = 0; k < 2; k++)
			fill_value(f, (char *)arr + k * value_size(f), depth, k);
		*(size_t *)(base + f->quantifier_offset) = 2;
		*(void **)(base + f->offset) = arr;
		return;
	}
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)(base + f->quantifier_offset) = f->id;
	else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
		*(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
	fill_value(f, base + f->offset, depth, 0);
}

/* Every field but oneof members (the caller picks one). Depth-limited in
 * case the schema ever becomes recursive. */
static void fill_message(ProtobufCMessage *m, unsigned depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	if (depth > 4)
		return;
	for (unsigned i = 0; i < d->n_fields; i++)
		if (!(d->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			fill_field(m, &d->fields[i], depth);
}

/* Protobuf base-128 varint; returns its length. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Fill the Envelope with payload `f`, frame it, decode it, and compare the
 * re-encoded bytes. Returns the frame's length if identical, else 0. */
static size_t full_roundtrip(const ProtobufCFieldDescriptor *f)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT, *out = NULL;
	uint8_t *frame, *again = NULL;
	size_t len, len2 = 0;
	size_t same = 0;

	fill_message(&env.base, 0);
	env.version = FQ_PROTOCOL_VERSION;
	fill_field(&env.base, f, 0);
	if (fq_frame_encode(&env, 0, &frame, &len) < 0)
		goto out_arena;
	if (fq_frame_unpack(frame + FQ_FRAME_HEADER_SIZE, len - FQ_FRAME_HEADER_SIZE, &out) < 0)
		goto out_frame;
	if (fq_frame_encode(out, 0, &again, &len2) == 0)
		if (len2 == len && memcmp(frame, again, len) == 0 && out->payload_case == f->id)
			same = len;
	free(again);
	fq_frame_free(out);
out_frame:
	free(frame);
out_arena:
	arena_free();
	return same;
}

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

	/* Every field of every payload kind. */
	{
		const ProtobufCMessageDescriptor *d = &fabriciq__envelope__descriptor;
		unsigned kinds = 0;
		for (unsigned i = 0; i < d->n_fields; i++) {
			if (!(d->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
				continue;
			kinds++;
			size_t len = full_roundtrip(&d->fields[i]);
			ok(len > 0, "%s: every field set survives the round trip (%zu bytes)",
			   d->fields[i].name, len);
		}
		ok(kinds >= 11, "%u payload kinds covered", kinds);
	}

	/* A newer peer's frame: unknown fields appended to the envelope and to
	 * the payload, and a payload kind we do not know, are all ignored. */
	{
		Fabriciq__Envelope e = FABRICIQ__ENVELOPE__INIT, *d = NULL;
		Fabriciq__Ack ack = FABRICIQ__ACK__INIT;
		uint8_t buf[64], sub[16];
		size_t n, m;
		e.version = FQ_PROTOCOL_VERSION;
		e.seq = 3;
		e.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_ACK;
		e.ack = &ack;
		ack.seq = 5;
		n = fabriciq__envelope__pack(&e, buf);
		n += put_varint(buf + n, 999 << 3 | 0); /* field 999, varint */
		n += put_varint(buf + n, 1);
		ok(fq_frame_unpack(buf, n, &d) == 0 && d->seq == 3 && d->ack->seq == 5,
		   "unknown envelope field ignored");
		fq_frame_free(d);
		d = NULL;

		/* Ack {seq = 5, field 7 (fixed64) = 0x0102...} inside the envelope. */
		m = fabriciq__ack__pack(&ack, sub);
		m += put_varint(sub + m, 7 << 3 | 1);
		for (int i = 1; i <= 8; i++)
			sub[m++] = (uint8_t)i;
		e.payload_case = FABRICIQ__ENVELOPE__PAYLOAD__NOT_SET;
		n = fabriciq__envelope__pack(&e, buf);
		n += put_varint(buf + n, 32 << 3 | 2); /* Envelope.ack, length-delimited */
		n += put_varint(buf + n, m);
		memcpy(buf + n, sub, m);
		n += m;
		ok(fq_frame_unpack(buf, n, &d) == 0 && d->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_ACK &&
		       d->ack->seq == 5,
		   "unknown field inside a payload ignored");
		fq_frame_free(d);
		d = NULL;

		/* unknown payload kind (field 99, length-delimited, 2 bytes) */
		n = fabriciq__envelope__pack(&e, buf);
		n += put_varint(buf + n, 99 << 3 | 2);
		n += put_varint(buf + n, 2);
		buf[n++] = 0x08; /* its field 1 = 1 */
		buf[n++] = 0x01;
		ok(fq_frame_unpack(buf, n, &d) == 0 &&
		       d->payload_case == FABRICIQ__ENVELOPE__PAYLOAD__NOT_SET && d->seq == 3,
		   "unknown payload kind decodes as 'no payload'");
		fq_frame_free(d);
	}
	return done_testing();
}
