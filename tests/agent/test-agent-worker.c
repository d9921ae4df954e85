/* The agent's worker thread (slurmd-agent/worker.c) on a real event loop:
 * a job that blocks leaves the loop running (the loop's own timer is what
 * unblocks it), done runs on the loop's thread, jobs run and finish in the
 * order they came, and destroy hands back the jobs it never ran. */
#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include "slurmd-agent/worker.h"
#include "tests/unit/tap.h"

struct tjob {
	struct fq_job job;
	int id, wait_fd; /* run blocks until wait_fd is readable (-1: no wait) */
	int run_rc;      /* 0, or -ETIMEDOUT when nothing came within 5 s */
	bool ran;
	pthread_t done_thread;
};

static int run_order[8], done_order[8], n_run, n_done;
static pthread_t loop_thread;
static struct event_base *base;

static void tjob_run(struct fq_job *j)
{
	struct tjob *t = (struct tjob *)j;

	if (t->wait_fd >= 0) {
		struct pollfd p = {.fd = t->wait_fd, .events = POLLIN};

		t->run_rc = poll(&p, 1, 5000) == 1 ? 0 : -ETIMEDOUT;
	}
	run_order[n_run++] = t->id; /* the worker thread only */
}

static void tjob_done(struct fq_job *j, bool ran)
{
	struct tjob *t = (struct tjob *)j;

	t->ran = ran;
	t->done_thread = pthread_self();
	done_order[n_done++] = t->id;
	if (n_done == 3)
		event_base_loopbreak(base);
}

static int ticks, release_fd = -1;

/* The loop's timer: the fifth tick releases the blocked job. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (++ticks == 5 && write(release_fd, "x", 1) != 1)
		diag("cannot release the job");
}

static void *release_later(void *arg)
{
	usleep(200000);
	if (write(*(int *)arg, "x", 1) != 1)
		diag("cannot release the job");
	return NULL;
}

int main(void)
{
	struct tjob jobs[3];
	struct fq_worker *w;
	struct event *tick;
	struct timeval tv = {0, 10000};
	int p[2];

	plan(9);
	loop_thread = pthread_self();
	base = event_base_new();
	w = fq_worker_create(base);
	if (!w || pipe(p) < 0) {
		ok(0, "worker and pipe");
		return 1;
	}
	release_fd = p[1];
	for (int i = 0; i < 3; i++)
		jobs[i] = (struct tjob){
		    .job = {.run = tjob_run, .done = tjob_done}, .id = i + 1, .wait_fd = i == 0 ? p[0] : -1};
	for (int i = 0; i < 3; i++)
		fq_worker_submit(w, &jobs[i].job);
	is_int((int)fq_worker_pending(w), 3, "three jobs pending");
	tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
	event_add(tick, &tv);
	event_base_dispatch(base);
	is_int(jobs[0].run_rc, 0,
	       "the blocked job was released by the loop's own timer (the loop ran meanwhile)");
	ok(ticks >= 5, "the loop ticked while the job blocked (%d ticks)", ticks);
	ok(run_order[0] == 1 && run_order[1] == 2 && run_order[2] == 3, "jobs ran in the order they came");
	ok(done_order[0] == 1 && done_order[1] == 2 && done_order[2] == 3 && n_done == 3,
	   "done came in the same order, once each (%d)", n_done);
	ok(pthread_equal(jobs[2].done_thread, loop_thread) && jobs[2].ran, "done ran on the loop's thread");
	is_int((int)fq_worker_pending(w), 0, "nothing pending");

	/* destroy while a job blocks: it finishes, the one behind it never runs */
	{
		pthread_t helper;
		char c;

		if (read(p[0], &c, 1) != 1) /* drain the earlier release */
			diag("pipe");
		n_run = n_done = 0;
		jobs[0] =
		    (struct tjob){.job = {.run = tjob_run, .done = tjob_done}, .id = 1, .wait_fd = p[0]};
		jobs[1] = (struct tjob){.job = {.run = tjob_run, .done = tjob_done}, .id = 2, .wait_fd = -1};
		fq_worker_submit(w, &jobs[0].job);
		fq_worker_submit(w, &jobs[1].job);
		usleep(50000); /* the first job is running */
		pthread_create(&helper, NULL, release_later, &p[1]);
		fq_worker_destroy(w);
		pthread_join(helper, NULL);
		ok(jobs[0].ran && n_run == 1, "destroy waited for the running job (ran %d)", n_run);
		ok(!jobs[1].ran && n_done == 2, "the queued one was handed back unrun (%d done)", n_done);
	}
	event_free(tick);
	event_base_free(base);
	return done_testing();
}
