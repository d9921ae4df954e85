/*
 * fq-fakectl: a fake controller for one real fabriciq-agent (test-uplink-
 * trust.sh). Usage: fq-fakectl PORT MUNGE_SOCKET MODE. It speaks the
 * framed protocol from the controller's side (Challenge, then whatever the
 * agent sends) and accepts any credential. It answers the agent's nonce
 * with its own Auth: MODE "hostile" and "genuine" mint a real credential
 * (as root, what the controller is), "forged" one over another nonce,
 * "silent" none. "genuine", "forged" and "silent" then only count what the
 * agent sends for 2 s ("silent": 12 s, past the agent's 10 s wait) and
 * print "frames=F closed=0|1". "hostile", once the agent has streamed a
 * few reports, sends what a hostile process on the controller's address
 * (root on another host) could: one valid ClockCorrection, a second
 * one 1 ms later (too soon), one an hour ahead, Advice with an unbounded
 * lifetime and Advice of an unknown kind, a PeerAssignment with a nameless
 * peer, and last an Ack of UINT64_MAX. Then it waits for the agent to come
 * back and prints, one per line:
 *   hello1 node=N next_seq=S   frames=F max_seq=M   closed_after_ack=0|1
 *   hello2 next_seq=S
 * Exit 0 when both hellos came, 1 otherwise. With KEYFILE (a secret key,
 * common/signkey.h) its Auth is also signed with that key, as the real
 * controller's is with controller.key.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/munge_cred.h"
#include "common/signkey.h"

static const char *munge_socket, *mode;
static struct fq_signkey key;
static int have_key;
static uint8_t challenge[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static int send_env(int fd, Fabriciq__Envelope *env)
{
	env->version = FQ_PROTOCOL_VERSION;
	return fq_frame_write_fd(fd, env, 0);
}

/* The next frame from fd within timeout_ms: 1, 0 on timeout, -1 on EOF or error. */
static int next_frame(int fd, struct fq_frame_decoder *d, Fabriciq__Envelope **env, int timeout_ms)
{
	int64_t deadline = fq_now_ns() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		int rc = fq_frame_decoder_next(d, env);
		uint8_t buf[65536];
		struct pollfd p = {fd, POLLIN, 0};
		int64_t left = (deadline - fq_now_ns()) / 1000000;
		ssize_t n;

		if (rc == 1)
			return 1;
		if (rc < 0 && rc != -EBADMSG && rc != -EPROTONOSUPPORT)
			return -1;
		if (rc < 0)
			continue;
		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			return 0;
		if ((n = read(fd, buf, sizeof(buf))) <= 0)
			return -1;
		fq_frame_decoder_feed(d, buf, (size_t)n);
	}
}

/* The agent's nonce answered as MODE says. */
static void answer_auth(int fd, const Fabriciq__Auth *a)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Auth au = FABRICIQ__AUTH__INIT;
	uint8_t other[16] = {0}, sig[FQ_SIGN_SIZE];
	char *cred = NULL, err[256];
	const struct fq_sign_part parts[] = {{a->nonce.data, a->nonce.len}, {challenge, sizeof(challenge)}};

	if (!strcmp(mode, "silent") || a->nonce.len != sizeof(other))
		return;
	if (fq_munge_encode(munge_socket, strcmp(mode, "forged") ? a->nonce.data : other, sizeof(other), 0,
			    &cred, err, sizeof(err)) < 0) {
		fprintf(stderr, "fq-fakectl: munge: %s\n", err);
		return;
	}
	au.credential = cred;
	if (have_key && fq_sign(&key, FQ_SIGN_CONTROLLER_AUTH, parts, 2, sig) == 0) {
		au.signature.data = sig;
		au.signature.len = sizeof(sig);
	}
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_AUTH;
	env.auth = &au;
	send_env(fd, &env);
	free(cred);
}

/* Accept one agent, challenge it, and read up to its AgentHello: the fd,
 * or -1. */
static int accept_agent(int lfd, struct fq_frame_decoder **dec, Fabriciq__Envelope **hello)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT, *in;
	Fabriciq__Challenge ch = FABRICIQ__CHALLENGE__INIT;
	struct pollfd p = {lfd, POLLIN, 0};
	int fd;

	if (poll(&p, 1, 20000) != 1 || (fd = accept(lfd, NULL, NULL)) < 0)
		return -1;
	ch.nonce.data = challenge;
	ch.nonce.len = sizeof(challenge);
	ch.max_frame = FQ_FRAME_MAX_DEFAULT;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_CHALLENGE;
	env.challenge = &ch;
	*dec = fq_frame_decoder_create(0);
	if (send_env(fd, &env) < 0)
		goto fail;
	while (next_frame(fd, *dec, &in, 5000) == 1) {
		if (in->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_AUTH)
			answer_auth(fd, in->auth);
		if (in->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_HELLO) {
			*hello = in;
			return fd;
		}
		fq_frame_free(in);
	}
fail:
	close(fd);
	fq_frame_decoder_destroy(*dec);
	*dec = NULL;
	return -1;
}

static void send_correction(int fd, uint64_t epoch, int64_t ahead_ns)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__ClockCorrection c = FABRICIQ__CLOCK_CORRECTION__INIT;

	c.reference_node = "fakeref";
	c.epoch = epoch;
	c.offset_ns = 0;
	/* global = local - offset + E_ref: E_ref = realtime - raw puts it on time */
	c.reference_epoch_ns = fq_realtime_ns() - fq_now_ns() + ahead_ns;
	c.error_bound_ns = 1000;
	c.valid_until_ns = fq_realtime_ns() + 60000000000ll;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_CORRECTION;
	env.correction = &c;
	send_env(fd, &env);
}

static void send_advice(int fd, const char *kind, int64_t lifetime_ns)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Advice a = FABRICIQ__ADVICE__INIT;

	a.job_id = 7;
	a.kind = (char *)kind;
	a.local_nic = "lo";
	a.remote_node = "";
	a.remote_nic = "";
	a.lifetime_ns = lifetime_ns;
	a.shared_nic = "x/y";
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_ADVICE;
	env.advice = &a;
	send_env(fd, &env);
}

static void send_bad_peers(int fd)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__PeerAssignment pa = FABRICIQ__PEER_ASSIGNMENT__INIT;
	Fabriciq__PeerAssignment__NicPeers np = FABRICIQ__PEER_ASSIGNMENT__NIC_PEERS__INIT, *npp = &np;
	Fabriciq__Peer peer = FABRICIQ__PEER__INIT, *pp = &peer;

	peer.node = "";
	peer.nic = "eth0";
	peer.address = "198.18.0.9";
	np.local_nic = "lo";
	np.peers = &pp;
	np.n_peers = 1;
	pa.epoch = 99;
	pa.nics = &npp;
	pa.n_nics = 1;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PEERS;
	env.peers = &pa;
	send_env(fd, &env);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct fq_frame_decoder *dec = NULL;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT, *in, *hello = NULL;
	Fabriciq__Ack ack = FABRICIQ__ACK__INIT;
	uint64_t frames = 0, max_seq = 0;
	int lfd, fd, one = 1, closed = 0, rc;

	char err[512];

	if (argc != 4 && argc != 5) {
		fprintf(
		    stderr,
		    "usage: fq-fakectl PORT MUNGE_SOCKET hostile|genuine|forged|silent [KEYFILE] (listens "
		    "on 127.0.0.1)\n");
		return 2;
	}
	if (argc == 5) {
		if (fq_signkey_load(argv[4], &key, err, sizeof(err)) < 0) {
			fprintf(stderr, "fq-fakectl: %s\n", err);
			return 2;
		}
		have_key = 1;
	}
	munge_socket = argv[2];
	mode = argv[3];
	sa.sin_port = htons((uint16_t)atoi(argv[1]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0) {
		perror("fq-fakectl: listen");
		return 2;
	}
	printf("listening\n");
	fflush(stdout);
	if ((fd = accept_agent(lfd, &dec, &hello)) < 0)
		return 1;
	printf("hello1 node=%s next_seq=%llu\n", hello->hello->node,
	       (unsigned long long)hello->hello->next_seq);
	fq_frame_free(hello);
	if (strcmp(mode, "hostile")) {
		int64_t until = fq_now_ns() + (strcmp(mode, "silent") ? 2000000000ll : 12000000000ll);

		while ((rc = next_frame(fd, dec, &in, (int)((until - fq_now_ns()) / 1000000))) == 1) {
			frames++;
			fq_frame_free(in);
		}
		printf("frames=%llu closed=%d\n", (unsigned long long)frames, rc < 0);
		return 0;
	}
	/* a few reports first, so the spool holds frames */
	while (frames < 3 && next_frame(fd, dec, &in, 5000) == 1) {
		frames++;
		if (in->seq > max_seq)
			max_seq = in->seq;
		fq_frame_free(in);
	}
	send_correction(fd, 1, 0);
	usleep(1000);
	send_correction(fd, 2, 0); /* too soon */
	usleep(100000);
	send_correction(fd, 3, 3600000000000ll); /* an hour ahead */
	send_advice(fd, "move", INT64_MAX);
	send_advice(fd, "junk", 1000000000);
	send_bad_peers(fd);
	usleep(200000);
	ack.seq = UINT64_MAX;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_ACK;
	env.ack = &ack;
	send_env(fd, &env);
	while ((rc = next_frame(fd, dec, &in, 3000)) == 1) {
		frames++;
		if (in->seq > max_seq)
			max_seq = in->seq;
		fq_frame_free(in);
	}
	closed = rc < 0;
	printf("frames=%llu max_seq=%llu closed_after_ack=%d\n", (unsigned long long)frames,
	       (unsigned long long)max_seq, closed);
	close(fd);
	fq_frame_decoder_destroy(dec);
	fflush(stdout);
	if ((fd = accept_agent(lfd, &dec, &hello)) < 0)
		return 1;
	printf("hello2 next_seq=%llu\n", (unsigned long long)hello->hello->next_seq);
	fq_frame_free(hello);
	close(fd);
	fq_frame_decoder_destroy(dec);
	close(lfd);
	return 0;
}
