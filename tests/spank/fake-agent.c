/*
 * fake-agent: a stand-in for fabriciq-agent's step socket in the SPANK
 * tests where the real agent's behaviour is not what is tested: a stuck
 * agent (accepts, never answers) and, until the agent implements it, a
 * recording one. Its answers carry no paths, as an agent older than
 * Result.paths. One line per request on stdout:
 *   start JOB STEP NODE UID MODE NODES TASKS GLOBAL:LOCAL:PID,...
 *   end JOB STEP NODE STATUS
 * Usage: fake-agent PATH answer|silent
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/frame.h"

#define MAX_CONN 64

static void record(const Fabriciq__Envelope *env)
{
	const Fabriciq__StepStart *s = env->step_start;
	const Fabriciq__StepEnd *e = env->step_end;

	if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_STEP_START) {
		printf("start %llu %u %s %u %s %u %u ", (unsigned long long)s->job_id, s->step_id, s->node,
		       s->uid, s->mode, s->node_count, s->task_count);
		for (size_t i = 0; i < s->n_ranks; i++)
			printf("%s%u:%u:%d", i ? "," : "", s->ranks[i]->global_rank, s->ranks[i]->local_rank,
			       s->ranks[i]->pid);
		printf("\n");
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_STEP_END) {
		printf("end %llu %u %s %d\n", (unsigned long long)e->job_id, e->step_id, e->node,
		       e->exit_status);
	} else {
		printf("other %d\n", env->payload_case);
	}
	fflush(stdout);
}

static void answer(int fd, uint64_t seq)
{
	Fabriciq__Envelope ans = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Result res = FABRICIQ__RESULT__INIT;

	res.seq = seq;
	res.message = "";
	ans.version = FQ_PROTOCOL_VERSION;
	ans.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_RESULT;
	ans.result = &res;
	fq_frame_write_fd(fd, &ans, 0);
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct pollfd p[MAX_CONN + 1];
	struct fq_frame_decoder *dec[MAX_CONN + 1] = {0};
	Fabriciq__Envelope *env;
	uint8_t buf[4096];
	int n = 1, silent, lfd;
	ssize_t r;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path) ||
	    (strcmp(argv[2], "answer") && strcmp(argv[2], "silent"))) {
		fprintf(stderr, "usage: fake-agent PATH answer|silent\n");
		return 2;
	}
	silent = !strcmp(argv[2], "silent");
	signal(SIGPIPE, SIG_IGN);
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0 ||
	    chmod(argv[1], 0600) < 0) {
		fprintf(stderr, "fake-agent: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
	for (;;) {
		if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
			return 1;
		if ((p[0].revents & POLLIN) && n <= MAX_CONN) {
			int fd = accept(lfd, NULL, NULL);

			if (fd >= 0) {
				p[n] = (struct pollfd){.fd = fd, .events = POLLIN};
				dec[n++] = fq_frame_decoder_create(0);
			}
		}
		for (int i = 1; i < n; i++) {
			if (!p[i].revents)
				continue;
			r = read(p[i].fd, buf, sizeof(buf));
			if (r <= 0) {
				close(p[i].fd);
				fq_frame_decoder_destroy(dec[i]);
				p[i] = p[n - 1];
				dec[i] = dec[n - 1];
				n--;
				i--;
				continue;
			}
			fq_frame_decoder_feed(dec[i], buf, (size_t)r);
			while (fq_frame_decoder_next(dec[i], &env) == 1) {
				record(env);
				if (!silent)
					answer(p[i].fd, env->seq);
				fq_frame_free(env);
			}
		}
	}
}
