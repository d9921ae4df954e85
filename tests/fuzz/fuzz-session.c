/*
 * libFuzzer target: the controller's agent session state machine
 * (controller/session.c) on hostile bytes, over a real socket pair with
 * the real authq and munge. The harness is the agent end: it reads the
 * Challenge, and when the first input byte's bit 0 is set and
 * FQ_FUZZ_MUNGE_SOCKET names a munged (test-fuzz.sh starts one) it first
 * sends a genuine Auth for the session's nonce, so the bytes that follow
 * reach AWAIT_HELLO and READY, not only the pre-authentication path.
 * Bit 1 makes the hello callback refuse (the EBUSY path). The rest of the
 * input is written in chunks of (byte 0 >> 2) % 13 + 1 bytes. Checked:
 * no crash, leak or sanitizer report, and every session created is closed
 * exactly once.
 */
#include "controller/session.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/log.h"
#include "common/munge_cred.h"
#include "controller/authq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *base;
static struct fq_authq *authq;
static const char *munge_socket;
static struct fq_session_stats stats; /* sessions outlive an input while they flush */
static int closed, refuse_hello;

static int on_hello(void *arg, struct fq_session *s, Fabriciq__Envelope *env, char *why, size_t whylen)
{
	(void)arg;
	(void)s;
	fq_frame_free(env);
	if (refuse_hello) {
		snprintf(why, whylen, "refused by the harness");
		return -EBUSY;
	}
	return 0;
}

static void on_frame(void *arg, struct fq_session *s, Fabriciq__Envelope *env)
{
	(void)arg;
	if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROBE)
		fq_session_ack(s, env->seq);
	fq_frame_free(env);
}

static void on_closed(void *arg, struct fq_session *s)
{
	(void)arg;
	(void)s;
	closed++;
}

/* Run the loop until the authq is idle and nothing is ready. */
static void settle(void)
{
	for (int i = 0; i < 200; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (!fq_authq_pending(authq) && i > 2)
			return;
		usleep(200);
	}
}

/* Read the Challenge on the agent end; 0 and nonce, or -1. */
static int read_challenge(int fd, uint8_t nonce[FQ_MUNGE_NONCE_SIZE])
{
	struct fq_frame_decoder *d = fq_frame_decoder_create(0);
	Fabriciq__Envelope *env = NULL;
	uint8_t buf[4096];
	ssize_t n;
	int rc = -1;

	settle();
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		fq_frame_decoder_feed(d, buf, (size_t)n);
	if (fq_frame_decoder_next(d, &env) == 1) {
		if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_CHALLENGE &&
		    env->challenge->nonce.len == FQ_MUNGE_NONCE_SIZE) {
			memcpy(nonce, env->challenge->nonce.data, FQ_MUNGE_NONCE_SIZE);
			rc = 0;
		}
		fq_frame_free(env);
	}
	fq_frame_decoder_destroy(d);
	return rc;
}

static void send_auth(int fd, const uint8_t nonce[FQ_MUNGE_NONCE_SIZE])
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Auth au = FABRICIQ__AUTH__INIT;
	char *cred = NULL;

	if (fq_munge_encode(munge_socket, nonce, FQ_MUNGE_NONCE_SIZE, 0, &cred, NULL, 0) < 0)
		return;
	au.credential = cred;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_AUTH;
	env.auth = &au;
	fq_frame_write_fd(fd, &env, 0);
	free(cred);
	settle();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct fq_session_ops ops = {on_hello, on_frame, on_closed};
	struct fq_session_config cfg = {
	    .agent_uid = 0, .max_frame = 64 * 1024, .auth_timeout_ns = 10000000000ll, .max_output = 1 << 20};
	uint8_t nonce[FQ_MUNGE_NONCE_SIZE];
	struct fq_session *s;
	size_t step, off = 1;
	int sv[2];

	if (!base) {
		fq_log_init("fuzz-session", FQ_LOG_ERROR, FQ_LOG_STDERR);
		munge_socket = getenv("FQ_FUZZ_MUNGE_SOCKET");
		base = event_base_new();
		authq = fq_authq_create(base, munge_socket, 4);
		if (!base || !authq)
			abort();
	}
	if (size < 1 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
		return 0;
	cfg.authq = authq;
	refuse_hello = data[0] & 2;
	closed = 0;
	if (!(s = fq_session_create(base, sv[0], "fuzz:1", &cfg, &ops, NULL, &stats))) {
		close(sv[1]);
		return 0;
	}
	if (read_challenge(sv[1], nonce) == 0 && (data[0] & 1) && munge_socket)
		send_auth(sv[1], nonce);
	step = (size_t)(data[0] >> 2) % 13 + 1;
	while (off < size) {
		size_t n = size - off < step ? size - off : step;
		ssize_t w = send(sv[1], data + off, n, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w <= 0)
			break;
		off += (size_t)w;
		settle();
		/* drain what the controller sends (Acks, Results) */
		{
			uint8_t sink[4096];
			while (recv(sv[1], sink, sizeof(sink), MSG_DONTWAIT) > 0)
				;
		}
	}
	close(sv[1]);
	settle();
	/* EOF has closed a session that reads; one still waiting (its timer
	 * runs for seconds) is closed here, as at the controller's exit. */
	if (!closed)
		fq_session_close(s, NULL);
	settle();
	if (closed != 1)
		abort(); /* closed exactly once */
	return 0;
}
