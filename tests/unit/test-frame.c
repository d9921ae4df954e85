/* common/frame: framing round trips, arbitrary splits, hostile input. */
#include "common/frame.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/unit/tap.h"

static uint8_t *make_lane_frame(uint64_t seq, size_t *len)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LaneReport lane = FABRICIQ__LANE_REPORT__INIT;
	uint8_t *buf;

	env.version = FQ_PROTOCOL_VERSION;
	env.seq = seq;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
	env.lane = &lane;
	lane.job_id = 4242;
	lane.local_nic = "rail0";
	lane.owd_p99_ns = 94000;
	if (fq_frame_encode(&env, 0, &buf, len) < 0)
		abort();
	return buf;
}

int main(void)
{
	struct fq_frame_decoder *d;
	Fabriciq__Envelope *e = NULL;
	uint8_t *f1, *f2, both[512];
	size_t l1, l2;
	int rc, got;

	f1 = make_lane_frame(1, &l1);
	f2 = make_lane_frame(2, &l2);
	ok(l1 > FQ_FRAME_HEADER_SIZE && l1 + l2 < sizeof(both), "frames encode");
	memcpy(both, f1, l1);
	memcpy(both + l1, f2, l2);

	/* Every split point of two back-to-back frames yields both, in order. */
	int all = 1;
	for (size_t cut = 0; cut <= l1 + l2; cut++) {
		d = fq_frame_decoder_create(0);
		uint64_t want = 1;
		fq_frame_decoder_feed(d, both, cut);
		while ((rc = fq_frame_decoder_next(d, &e)) == 1) {
			all &= e->seq == want++ && e->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE &&
			       e->lane->job_id == 4242 && !strcmp(e->lane->local_nic, "rail0");
			fq_frame_free(e);
		}
		all &= rc == 0;
		fq_frame_decoder_feed(d, both + cut, l1 + l2 - cut);
		while ((rc = fq_frame_decoder_next(d, &e)) == 1) {
			all &= e->seq == want++;
			fq_frame_free(e);
		}
		all &= rc == 0 && want == 3 && fq_frame_decoder_pending(d) == 0;
		fq_frame_decoder_destroy(d);
	}
	ok(all, "two frames split at each of %zu byte boundaries decode in order", l1 + l2 + 1);

	/* Byte by byte. */
	d = fq_frame_decoder_create(0);
	got = 0;
	for (size_t i = 0; i < l1 + l2; i++) {
		fq_frame_decoder_feed(d, both + i, 1);
		while (fq_frame_decoder_next(d, &e) == 1) {
			got++;
			fq_frame_free(e);
		}
	}
	is_int(got, 2, "fed one byte at a time: 2 frames");
	fq_frame_decoder_destroy(d);

	/* A truncated frame waits for more. */
	d = fq_frame_decoder_create(0);
	fq_frame_decoder_feed(d, f1, l1 - 1);
	is_int(fq_frame_decoder_next(d, &e), 0, "truncated frame: need more bytes");
	is_int(fq_frame_decoder_pending(d), l1 - 1, "... bytes kept");
	fq_frame_decoder_destroy(d);

	/* Announced length over the limit: refused before allocation, sticky. */
	d = fq_frame_decoder_create(1024);
	uint8_t huge[4] = {0x7f, 0xff, 0xff, 0xff};
	fq_frame_decoder_feed(d, huge, 4);
	is_int(fq_frame_decoder_next(d, &e), -EMSGSIZE, "2 GiB length refused with -EMSGSIZE");
	is_int(fq_frame_decoder_feed(d, f1, l1), -EMSGSIZE, "the error is sticky");
	fq_frame_decoder_destroy(d);

	/* Garbage payload: -EBADMSG, skipped; the next frame still decodes. */
	d = fq_frame_decoder_create(0);
	uint8_t bad[] = {0, 0, 0, 3, 0xff, 0xff, 0xff};
	fq_frame_decoder_feed(d, bad, sizeof(bad));
	fq_frame_decoder_feed(d, f2, l2);
	is_int(fq_frame_decoder_next(d, &e), -EBADMSG, "garbage payload: -EBADMSG");
	rc = fq_frame_decoder_next(d, &e);
	ok(rc == 1 && e->seq == 2, "the frame after it decodes");
	if (rc == 1)
		fq_frame_free(e);
	fq_frame_decoder_destroy(d);

	/* Wrong protocol version. */
	{
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		uint8_t *b;
		size_t l;
		env.version = FQ_PROTOCOL_VERSION + 1;
		fq_frame_encode(&env, 0, &b, &l);
		is_int(fq_frame_unpack(b + 4, l - 4, &e), -EPROTONOSUPPORT, "unknown version refused");
		free(b);
	}

	/* Encode refuses payloads over the limit. */
	{
		uint8_t *b;
		size_t l;
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__AgentHello hello = FABRICIQ__AGENT_HELLO__INIT;
		char name[2000];
		memset(name, 'x', sizeof(name) - 1);
		name[sizeof(name) - 1] = 0;
		hello.node = name;
		env.version = FQ_PROTOCOL_VERSION;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_HELLO;
		env.hello = &hello;
		is_int(fq_frame_encode(&env, 1000, &b, &l), -EMSGSIZE, "encode over the limit: -EMSGSIZE");
	}

	/* write_fd + decode through a pipe. */
	{
		int p[2];
		uint8_t buf[256];
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		ssize_t n;
		if (pipe(p) < 0)
			abort();
		env.version = FQ_PROTOCOL_VERSION;
		env.seq = 77;
		is_int(fq_frame_write_fd(p[1], &env, 0), 0, "frame written to a pipe");
		n = read(p[0], buf, sizeof(buf));
		d = fq_frame_decoder_create(0);
		fq_frame_decoder_feed(d, buf, (size_t)n);
		rc = fq_frame_decoder_next(d, &e);
		ok(rc == 1 && e->seq == 77 && e->payload_case == FABRICIQ__ENVELOPE__PAYLOAD__NOT_SET,
		   "... and read back");
		if (rc == 1)
			fq_frame_free(e);
		fq_frame_decoder_destroy(d);
		close(p[0]);
		close(p[1]);
	}
	/* A peer that closed its socket: -EPIPE, and no SIGPIPE kills us. */
	{
		int sv[2];
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
			abort();
		close(sv[1]);
		env.version = FQ_PROTOCOL_VERSION;
		is_int(fq_frame_write_fd(sv[0], &env, 0), -EPIPE, "closed peer: -EPIPE, no SIGPIPE");
		close(sv[0]);
	}

	/* The limit is inclusive: a payload of exactly max_payload decodes. */
	{
		d = fq_frame_decoder_create(l1 - FQ_FRAME_HEADER_SIZE);
		fq_frame_decoder_feed(d, f1, l1);
		rc = fq_frame_decoder_next(d, &e);
		ok(rc == 1, "payload of exactly the limit accepted");
		if (rc == 1)
			fq_frame_free(e);
		fq_frame_decoder_destroy(d);
		d = fq_frame_decoder_create(l1 - FQ_FRAME_HEADER_SIZE - 1);
		fq_frame_decoder_feed(d, f1, FQ_FRAME_HEADER_SIZE);
		is_int(fq_frame_decoder_next(d, &e), -EMSGSIZE,
		       "one byte over: refused from the header alone");
		fq_frame_decoder_destroy(d);
	}

	free(f1);
	free(f2);
	return done_testing();
}
