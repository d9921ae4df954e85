/* Unit tests of the agent's state modules: the step registry (pid -> step
 * and rank), the slewed global timeline, NICs and advice (the spool:
 * test-agent-spool.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/frame.h"
#include "slurmd-agent/advice.h"
#include "slurmd-agent/nics.h"
#include "slurmd-agent/spool.h"
#include "slurmd-agent/steps.h"
#include "slurmd-agent/timeline.h"
#include "tests/unit/tap.h"

/* ---- steps -------------------------------------------------------------- */

/* A process tree: parent[pid] (0: none). */
static pid_t parents[1000];

static int table_parent(pid_t pid, pid_t *ppid, void *arg)
{
	(void)arg;
	if (pid <= 0 || pid >= 1000 || !parents[pid])
		return -ESRCH;
	*ppid = parents[pid];
	return 0;
}

static void start_msg(Fabriciq__StepStart *m, Fabriciq__Rank *r, Fabriciq__Rank **rp, uint64_t job,
		      uint32_t step, const uint32_t *ranks, const int32_t *pids, size_t n)
{
	fabriciq__step_start__init(m);
	m->job_id = job;
	m->step_id = step;
	m->uid = 1000;
	m->mode = "monitor";
	for (size_t i = 0; i < n; i++) {
		fabriciq__rank__init(&r[i]);
		r[i].global_rank = ranks[i];
		r[i].local_rank = (uint32_t)i;
		r[i].pid = pids[i];
		rp[i] = &r[i];
	}
	m->n_ranks = n;
	m->ranks = rp;
}

static void test_steps(void)
{
	struct fq_steps *s = fq_steps_create(4);
	Fabriciq__StepStart m;
	Fabriciq__Rank r[4], *rp[4];
	const struct fq_step_rank *rank;
	struct fq_step *st;
	char err[256];
	const uint32_t ranks_a[] = {0, 1}, ranks_b[] = {2, 3}, ranks_c[] = {5};
	const int32_t pids_a[] = {100, 101}, pids_b[] = {200, 201}, pids_c[] = {1};

	/* tree: 100 -> 110 -> 111 (a rank's child threads/processes); 200; 300 alone */
	parents[110] = 100;
	parents[111] = 110;
	parents[100] = 50;
	parents[50] = 1;
	parents[200] = 50;
	parents[300] = 50;

	start_msg(&m, r, rp, 42, 0, ranks_a, pids_a, 2);
	is_int(fq_steps_register(s, &m, 1, err, sizeof(err)), 0, "register job 42.0 (ranks 0, 1)");
	is_int(fq_steps_register(s, &m, 2, err, sizeof(err)), 0, "registering again is a no-op");
	is_int((int)fq_steps_count(s), 1, "one step");
	start_msg(&m, r, rp, 43, 0, ranks_b, pids_b, 2);
	is_int(fq_steps_register(s, &m, 3, err, sizeof(err)), 0, "register job 43.0 (ranks 2, 3)");

	st = fq_steps_find_pid(s, 111, 1, table_parent, NULL, &rank);
	ok(st && st->job_id == 42 && rank->global_rank == 0,
	   "a grandchild of rank 0's task is job 42 rank 0");
	st = fq_steps_find_pid(s, 201, 1, table_parent, NULL, &rank);
	ok(st && st->job_id == 43 && rank->global_rank == 3, "pid 201 is job 43 rank 3");
	ok(!fq_steps_find_pid(s, 300, 1, table_parent, NULL, &rank), "a process of no step is not found");
	ok(!fq_steps_find_pid(s, 999, 1, table_parent, NULL, &rank), "an unknown pid is not found");

	/* a merge: rank 1 gets a new pid, rank 4 is added */
	{
		const uint32_t rk[] = {1, 4};
		const int32_t pd[] = {110, 400};
		start_msg(&m, r, rp, 42, 0, rk, pd, 2);
		is_int(fq_steps_register(s, &m, 4, err, sizeof(err)), 0, "extend job 42.0");
		st = fq_steps_find_pid(s, 111, 1, table_parent, NULL, &rank);
		ok(st && rank->global_rank == 1, "the nearest registered ancestor wins (110 is rank 1 now)");
		st = fq_steps_find_pid(s, 400, 1, table_parent, NULL, &rank);
		ok(st && st->nranks == 3, "job 42.0 has 3 ranks after the merge");
	}

	start_msg(&m, r, rp, 44, 0, ranks_c, pids_c, 1);
	is_int(fq_steps_register(s, &m, 5, err, sizeof(err)), -EINVAL, "pid 1 is refused: %s", err);
	start_msg(&m, r, rp, 44, 0, ranks_c, pids_c, 0);
	is_int(fq_steps_register(s, &m, 5, err, sizeof(err)), -EINVAL, "no ranks is refused: %s", err);
	start_msg(&m, r, rp, 0, 0, ranks_a, pids_a, 2);
	is_int(fq_steps_register(s, &m, 5, err, sizeof(err)), -EINVAL, "job 0 is refused: %s", err);
	start_msg(&m, r, rp, 45, 0, ranks_a, pids_a, 2);
	m.mode = "turbo";
	is_int(fq_steps_register(s, &m, 5, err, sizeof(err)), -EINVAL, "an unknown mode is refused: %s", err);

	is_int(fq_steps_unregister(s, 42, 0), 0, "unregister 42.0");
	is_int(fq_steps_unregister(s, 42, 0), -ENOENT, "unregistering twice: ENOENT");
	ok(!fq_steps_find_pid(s, 111, 1, table_parent, NULL, &rank),
	   "job 42's processes are no longer found");
	for (uint64_t j = 50; j < 60; j++) {
		start_msg(&m, r, rp, j, 0, ranks_b, pids_b, 2);
		if (fq_steps_register(s, &m, 6, err, sizeof(err)) == -ENOSPC)
			break;
	}
	is_int((int)fq_steps_count(s), 4, "the registry is bounded (4 steps)");
	{
		pid_t pp = 0;
		ok(fq_parent_from_proc(getpid(), &pp, NULL) == 0 && pp == getppid(), "/proc parent lookup");
	}
	fq_steps_destroy(s);
}

static int parent_calls;

static int counting_parent(pid_t pid, pid_t *ppid, void *arg)
{
	parent_calls++;
	return table_parent(pid, ppid, arg);
}

/* The negative cache: a sender in no step walks /proc once, then is
 * answered from the cache until the registry changes or the TTL passes;
 * a step registered over it is found at once. */
static void test_negative_cache(void)
{
	struct fq_steps *s = fq_steps_create(4);
	Fabriciq__StepStart m;
	Fabriciq__Rank r[2], *rp[2];
	const struct fq_step_rank *rank;
	const uint32_t ranks[] = {0};
	const int32_t pids[] = {50};
	const int64_t t = 1000000000, ttl = FQ_STEPS_MISS_TTL_NS;
	char err[256];
	struct json_object *c;
	int found = 0;

	memset(parents, 0, sizeof(parents));
	parents[300] = 50; /* 300 -> 50 -> 1 */
	parents[50] = 1;
	parent_calls = 0;
	for (int i = 0; i < 1000; i++)
		found += fq_steps_find_pid(s, 300, t + i, counting_parent, NULL, &rank) != NULL;
	is_int(found, 0, "pid 300 is in no step, 1000 times");
	is_int(parent_calls, 2, "and its tree was walked once (2 parent lookups), not 1000 times");
	c = fq_steps_counters(s);
	is_int((int)json_object_get_uint64(json_object_object_get(c, "sender_misses_cached")), 999,
	       "999 answers came from the negative cache");
	is_int((int)json_object_get_uint64(json_object_object_get(c, "sender_walks")), 1, "one walk counted");
	json_object_put(c);
	fq_steps_find_pid(s, 300, t + ttl, counting_parent, NULL, &rank);
	is_int(parent_calls, 4, "after the TTL it is walked again");

	start_msg(&m, r, rp, 77, 0, ranks, pids, 1);
	is_int(fq_steps_register(s, &m, t + ttl, err, sizeof(err)), 0, "register job 77.0 with pid 50");
	ok(fq_steps_find_pid(s, 300, t + ttl + 1, counting_parent, NULL, &rank) && rank->global_rank == 0,
	   "a registration ends the cached miss at once: pid 300 is job 77 rank 0");
	fq_steps_destroy(s);
}

/* The token bucket: burst at once, then the rate; never above the burst. */
static void test_rate(void)
{
	const struct fq_rate_limit lim = {10.0, 5.0};
	struct fq_rate b = {0};
	const int64_t t = 1000000000;
	int n = 0;

	for (int i = 0; i < 100; i++)
		n += fq_rate_take(&b, &lim, t);
	is_int(n, 5, "a fresh bucket gives its burst (5) at once");
	is_int(fq_rate_take(&b, &lim, t + 99000000), 0, "99 ms later (10/s): nothing yet");
	is_int(fq_rate_take(&b, &lim, t + 100000000), 1, "100 ms later: one");
	n = 0;
	for (int i = 0; i < 100; i++)
		n += fq_rate_take(&b, &lim, t + 60 * t);
	is_int(n, 5, "a minute idle refills to the burst, not beyond (5)");
	is_int(fq_rate_take(&b, &lim, t), 0, "a clock going back adds nothing");
	n = 0;
	for (int64_t step = 1; step <= 100; step++) /* 1000 a second offered for 10 s */
		for (int i = 0; i < 100; i++)
			n += fq_rate_take(&b, &lim, 61 * t + step * 100000000);
	is_int(n, 100, "1000/s offered for 10 s: 100 taken (the rate, the burst spent before)");
}

/* Live processes of the reaper test: alive[pid]. */
static bool alive[1000];

static int table_alive(pid_t pid, void *arg)
{
	(void)arg;
	return pid > 0 && pid < 1000 && alive[pid];
}

/* Steps whose StepEnd never came are reclaimed once no task has been alive
 * for the grace time (10 here); one live task, or a pid alive again, keeps
 * a step. */
static void test_reap(void)
{
	struct fq_steps *s = fq_steps_create(8);
	Fabriciq__StepStart m;
	Fabriciq__Rank r[2], *rp[2];
	struct fq_step_key gone[4];
	char err[256];
	const uint32_t ranks[] = {0, 1};
	const int32_t p70[] = {300, 301}, p71[] = {400, 401}, p72[] = {500};
	pid_t child;
	int status;

	start_msg(&m, r, rp, 70, 0, ranks, p70, 2);
	fq_steps_register(s, &m, 0, err, sizeof(err));
	start_msg(&m, r, rp, 71, 0, ranks, p71, 2);
	fq_steps_register(s, &m, 0, err, sizeof(err));
	start_msg(&m, r, rp, 72, 0, ranks, p72, 1);
	fq_steps_register(s, &m, 0, err, sizeof(err));
	alive[301] = true; /* 70.0 keeps one live task; 71.0 and 72.0 have none */
	is_int((int)fq_steps_reap(s, 1, 10, table_alive, NULL, gone, 4), 0, "t=1: dead steps only marked");
	alive[500] = true;
	is_int((int)fq_steps_reap(s, 5, 10, table_alive, NULL, gone, 4), 0,
	       "t=5: none removed (72.0 alive again)");
	is_int((int)fq_steps_reap(s, 11, 10, table_alive, NULL, gone, 4), 1,
	       "t=11: one step removed after 10 without a live task");
	ok(gone[0].job_id == 71 && gone[0].step_id == 0, "... 71.0");
	is_int((int)fq_steps_count(s), 2, "70.0 (one live task) and 72.0 stay");
	alive[500] = false;
	fq_steps_reap(s, 12, 10, table_alive, NULL, gone, 4);
	is_int((int)fq_steps_reap(s, 21, 10, table_alive, NULL, gone, 4), 0,
	       "t=21: 72.0, dead since 12, stays");
	is_int((int)fq_steps_reap(s, 22, 10, table_alive, NULL, gone, 4), 1, "t=22: 72.0 removed");
	ok(gone[0].job_id == 72 && fq_steps_count(s) == 1, "... and only 70.0 is left");
	{
		char dir[] = "/tmp/fq-steps-test.XXXXXX", path[128];
		struct fq_steps *t = fq_steps_create(8);
		struct json_object *a, *b;
		struct stat st;
		size_t n = 0;
		FILE *f;

		start_msg(&m, r, rp, 73, 2, ranks, p70, 2);
		m.node_count = 3;
		m.task_count = 6;
		m.mode = "control";
		fq_steps_register(s, &m, 0, err, sizeof(err));
		ok(mkdtemp(dir) != NULL, "a state directory");
		snprintf(path, sizeof(path), "%s/steps.json", dir);
		ok(fq_steps_save(s, path) == 0 && stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
		   "the registry saved, mode 0600");
		ok(fq_steps_load(t, path, 0, &n, err, sizeof(err)) == 0 && n == 2, "... and loaded: 2 steps");
		a = fq_steps_json(s);
		b = fq_steps_json(t);
		is_str(json_object_to_json_string(b), json_object_to_json_string(a),
		       "the loaded registry is the saved one (ranks, pids, uid, mode, counts)");
		json_object_put(a);
		json_object_put(b);
		f = fopen(path, "w");
		fputs("[{\"job_id\": 5}]", f);
		fclose(f);
		is_int(fq_steps_load(t, path, 0, &n, err, sizeof(err)), -EBADMSG, "a malformed entry: %s",
		       err);
		unlink(path);
		is_int(fq_steps_load(t, path, 0, &n, err, sizeof(err)) == 0 && n == 0, 1,
		       "no file: nothing to load");
		rmdir(dir);
		fq_steps_destroy(t);
	}
	fq_steps_destroy(s);

	ok(fq_alive_from_proc(getpid(), NULL), "/proc: this process is alive");
	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, &status, 0);
	ok(!fq_alive_from_proc(child, NULL), "/proc: a reaped child is not");
}

/* ---- timeline ----------------------------------------------------------- */

static void test_timeline(void)
{
	struct fq_timeline tl;
	struct fq_timeline_config cfg = {.max_slew_ppb = 500000, .publish_ns = 100000000};
	struct fq_clock_model m;
	int64_t t = 1000000000, prev = 0;
	int monotonic = 1;

	fq_timeline_init(&tl, &cfg);
	ok(!fq_timeline_publish(&tl, t, &m), "nothing to publish without a target");
	fq_timeline_set_target(&tl, t, 5000000, 0, 100);
	ok(fq_timeline_publish(&tl, t, &m) && m.offset_ns == 5000000, "the first target is taken at once");
	/* the target moves back by 20 us: slewed at <= 500 ppm, never backwards */
	fq_timeline_set_target(&tl, t, 4980000, 0, 100);
	for (int i = 0; i < 20; i++) {
		for (int k = 0; k < 10; k++) {
			int64_t g = fq_timeline_global(&tl, t + k * 10000000);
			if (g <= prev)
				monotonic = 0;
			prev = g;
		}
		t += 100000000;
		fq_timeline_publish(&tl, t, &m);
	}
	ok(monotonic, "global time never goes back while slewing back");
	is_int((int)(fq_timeline_global(&tl, t) - t - 4980000), 0,
	       "20 us closed within 2 s (at most 500 ppm)");
	ok(m.drift_ppb == 0, "and the rate is back to the target's");
	/* a big forward error is stepped */
	fq_timeline_set_target(&tl, t, 4980000 + 50000000, 0, 100);
	fq_timeline_publish(&tl, t, &m);
	is_int((int)tl.steps, 1, "a 50 ms forward error is stepped (forward is monotonic)");
	ok(m.valid_until_ns > t, "a publication is valid ahead");
}

/* ---- NIC discovery ------------------------------------------------------ */

static void test_nics(void)
{
	char dir[] = "/tmp/fq-sysfs-test.XXXXXX", path[256], names[8][FQ_NIC_NAME_MAX], lo[FQ_NIC_NAME_MAX];
	int n;

	if (!mkdtemp(dir)) {
		skip(4, "mkdtemp");
		return;
	}
	/* two RDMA devices (RoCE netdevs), one of them the front-end */
	snprintf(path, sizeof(path),
		 "mkdir -p %s/class/infiniband/mlx5_1/device/net/ens2f0 "
		 "%s/class/infiniband/mlx5_0/device/net/ens1f0 "
		 "%s/class/infiniband/mlx5_9/device/net/eno1",
		 dir, dir, dir);
	if (system(path) != 0)
		diag("mkdir failed");
	n = fq_nics_discover(dir, "eno1", names, 8);
	ok(n == 2 && !strcmp(names[0], "ens1f0") && !strcmp(names[1], "ens2f0"),
	   "RDMA netdevs first, sorted, the front-end left out (%d)", n);
	n = fq_nics_discover("/nonexistent", "", names, 8);
	ok(n >= 0, "without RDMA: the IPv4 interfaces (%d)", n);
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], "lo"))
			n = -1;
	ok(n >= 0, "never the loopback");
	ok(fq_nics_route_iface("127.0.0.1", lo) == 0 && !strcmp(lo, "lo"), "127.0.0.1 leaves by lo (%s)", lo);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	if (system(path) != 0)
		diag("cleanup failed");
}

/* ---- advice ------------------------------------------------------------- */

static void path_entry(struct fq_path_entry *e, const char *nic, const char *rnode, const char *rnic)
{
	memset(e, 0, sizeof(*e));
	strcpy(e->local_nic, nic);
	strcpy(e->remote_node, rnode);
	strcpy(e->remote_nic, rnic);
	e->state = FQ_PATH_STATE_UP;
}

/* An Advice frame as the controller sends it, through the wire codec. */
static Fabriciq__Envelope *advice_frame(uint64_t job, const char *nic, const char *rnode, const char *rnic,
					int64_t life)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT, *out = NULL;
	Fabriciq__Advice a = FABRICIQ__ADVICE__INIT;
	uint8_t buf[512];
	size_t len;

	a.job_id = job;
	a.kind = "move";
	a.local_nic = (char *)nic;
	a.remote_node = (char *)rnode;
	a.remote_nic = (char *)rnic;
	a.lifetime_ns = life;
	a.collides_with_job = 4242;
	a.shared_nic = "n2/rail1";
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_ADVICE;
	env.advice = &a;
	len = fabriciq__envelope__pack(&env, buf);
	out = fabriciq__envelope__unpack(NULL, len, buf);
	return out;
}

static void test_advice(void)
{
	struct fq_advice_table t;
	struct fq_path_entry e[3];
	Fabriciq__Envelope *f;
	int64_t now = 1000000000LL;
	uint32_t gen;

	memset(&t, 0, sizeof(t));
	path_entry(&e[0], "rail1", "n2", "rail1");
	path_entry(&e[1], "rail1", "n3", "rail1");
	path_entry(&e[2], "rail0", "n2", "rail0");
	f = advice_frame(4243, "rail1", "n2", "", 30000000000LL);
	ok(f && f->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_ADVICE, "an Advice frame decodes");
	is_int(fq_advice_take(&t, f->advice, now), 1, "advice taken: new");
	is_int((long long)fq_advice_fill(&t, e, 3, now), 1, "one path entry gets it");
	ok(e[0].advice == FQ_PATH_ADVICE_MOVE && e[0].advice_job == 4243 &&
	       e[0].advice_until_ns == now + 30000000000LL && e[0].advice_gen == 1,
	   "rail1 -> n2 (any NIC): MOVE, job 4243, until receipt + 30 s, generation 1");
	ok(e[1].advice == FQ_PATH_ADVICE_NONE && e[2].advice == FQ_PATH_ADVICE_NONE && !e[1].advice_gen,
	   "rail1 -> n3 and rail0 -> n2: no advice");
	gen = e[0].advice_gen;
	is_int(fq_advice_take(&t, f->advice, now + 10000000000LL), 0, "the same advice again: renewed");
	fq_advice_fill(&t, e, 3, now + 35000000000LL);
	ok(e[0].advice == FQ_PATH_ADVICE_MOVE && e[0].advice_gen == gen &&
	       e[0].advice_until_ns == now + 40000000000LL,
	   "renewed: holds 30 s from the renewal, same generation (the job acted on it already)");
	fq_advice_fill(&t, e, 3, now + 40000000000LL);
	ok(e[0].advice == FQ_PATH_ADVICE_NONE && e[0].advice_job == 0 && t.n == 0, "lapsed: cleared");
	is_int(fq_advice_take(&t, f->advice, now + 41000000000LL), 1, "after it lapsed: a new advice");
	fq_advice_fill(&t, e, 3, now + 41000000000LL);
	ok(e[0].advice_gen == 2, "... with a new generation (%u)", e[0].advice_gen);
	fabriciq__envelope__free_unpacked(f, NULL);

	f = advice_frame(4243, "rail1", "", "", 1000);
	is_int(fq_advice_take(&t, f->advice, now + 41000000000LL), 1, "advice for every path of rail1");
	is_int((long long)fq_advice_fill(&t, e, 3, now + 41000000000LL), 2, "both rail1 entries have advice");
	{
		Fabriciq__Advice b = *f->advice;

		b.kind = "stay";
		is_int(fq_advice_take(&t, &b, now), -EINVAL, "kind other than move: refused");
		b.kind = "move";
		b.lifetime_ns = 0;
		is_int(fq_advice_take(&t, &b, now), -EINVAL, "no lifetime: refused");
		b.lifetime_ns = 1000;
		b.local_nic = "a-nic-name-far-too-long";
		is_int(fq_advice_take(&t, &b, now), -EINVAL, "a NIC name too long: refused");
		b.local_nic = "rail1";
		b.local_port = 70000;
		is_int(fq_advice_take(&t, &b, now), -EINVAL, "a port over 65535: refused");
	}
	fabriciq__envelope__free_unpacked(f, NULL);

	/* lanes named by their source ports: one advice per lane, the page
	 * shows the one that lasts longest (the one the controller renewed) */
	memset(&t, 0, sizeof(t));
	{
		Fabriciq__Advice b = FABRICIQ__ADVICE__INIT;

		b.job_id = 4243, b.kind = "move", b.local_nic = "rail1", b.remote_node = "n2",
		b.remote_nic = "";
		b.lifetime_ns = 30000000000LL;
		b.local_port = 41000;
		is_int(fq_advice_take(&t, &b, now), 1, "a lane's advice (port 41000): new");
		fq_advice_fill(&t, e, 3, now);
		ok(e[0].advice == FQ_PATH_ADVICE_MOVE && e[0].advice_port == 41000 && e[1].advice_port == 0,
		   "the path's entry names the lane by its port");
		b.local_port = 41001;
		is_int(fq_advice_take(&t, &b, now + 1000), 1,
		       "another lane of the path (port 41001): a new advice");
		is_int((long long)t.n, 2, "kept apart from the first");
		fq_advice_fill(&t, e, 3, now + 1000);
		ok(e[0].advice_port == 41001 && e[0].advice_gen == 2,
		   "the page shows the newer (it lasts longest)");
		b.local_port = 41000;
		is_int(fq_advice_take(&t, &b, now + 2000), 0, "port 41000 again: renewed in place");
		fq_advice_fill(&t, e, 3, now + 2000);
		ok(e[0].advice_port == 41000 && e[0].advice_gen == 1,
		   "renewed, it lasts longest again: its port and its generation (%u)", e[0].advice_gen);
	}
	for (int i = 0; i < FQ_ADVICE_MAX + 5; i++) {
		char nic[16];
		Fabriciq__Advice a = FABRICIQ__ADVICE__INIT;

		snprintf(nic, sizeof(nic), "nic%d", i);
		a.job_id = 1;
		a.kind = "move";
		a.local_nic = nic;
		a.lifetime_ns = 1000000000LL + i;
		fq_advice_take(&t, &a, now);
	}
	ok(t.n == FQ_ADVICE_MAX, "the table stays bounded (%zu)", t.n);
}

/* Rate advice (issue 20): onto the page's rates, per matching path with
 * its address; renewed, changed (a new generation), lifted, lapsed. */
static void test_rate_advice(void)
{
	struct fq_advice_table t;
	struct fq_path_entry e[3];
	struct fq_path_rate out[8];
	Fabriciq__Advice a = FABRICIQ__ADVICE__INIT, mv;
	int64_t now = 5000000000LL;
	uint32_t gen;
	size_t n;

	memset(&t, 0, sizeof(t));
	path_entry(&e[0], "rail0", "n4", "rail0");
	path_entry(&e[1], "rail0", "n3", "rail0");
	path_entry(&e[2], "rail1", "n4", "rail1");
	e[0].remote_ipv4 = htonl(0xc6130009);
	e[1].remote_ipv4 = htonl(0xc6130007);
	e[2].remote_ipv4 = htonl(0xc613010b);
	a.job_id = 77;
	a.kind = "rate";
	a.local_nic = "rail0";
	a.remote_node = "n4";
	a.remote_nic = "rail0";
	a.lifetime_ns = 10000000000LL;
	a.rate_bytes_per_s = 2500000;
	a.collides_with_job = 76;
	a.shared_link = "leaf1>spine1";
	is_int(fq_advice_take(&t, &a, now), 1, "a rate: taken, new");
	is_int((long long)fq_advice_fill(&t, e, 3, now), 0, "a rate is no MOVE on any entry");
	n = fq_advice_rates(&t, e, 3, out, 8, now);
	ok(n == 1 && out[0].job == 77 && out[0].rate == 2500000 && out[0].remote_ipv4 == e[0].remote_ipv4 &&
	       !strcmp(out[0].local_nic, "rail0") && out[0].until_ns == now + 10000000000LL && out[0].gen,
	   "one page rate: job 77, rail0 -> n4's address, 2.5 MB/s, until receipt + 10 s");
	gen = out[0].gen;
	is_int(fq_advice_take(&t, &a, now + 3000000000LL), 0, "the same rate again: renewed");
	fq_advice_rates(&t, e, 3, out, 8, now + 3000000000LL);
	ok(out[0].gen == gen && out[0].until_ns == now + 13000000000LL,
	   "... same generation, 10 s from the renewal");
	a.rate_bytes_per_s = 1250000;
	is_int(fq_advice_take(&t, &a, now + 4000000000LL), 1, "another rate: changed");
	fq_advice_rates(&t, e, 3, out, 8, now + 4000000000LL);
	ok(out[0].rate == 1250000 && out[0].gen != gen, "... the new rate, a new generation");
	mv = a;
	mv.kind = "move";
	is_int(fq_advice_take(&t, &mv, now + 4000000000LL), 1, "a move advice for the same path is its own");
	ok(fq_advice_fill(&t, e, 3, now + 4000000000LL) == 1 &&
	       fq_advice_rates(&t, e, 3, out, 8, now + 4000000000LL) == 1 && out[0].rate == 1250000,
	   "both held: MOVE on the entry, the rate in the rates");
	a.rate_bytes_per_s = 0;
	is_int(fq_advice_take(&t, &a, now + 5000000000LL), FQ_ADVICE_LIFTED, "rate 0: lifted");
	is_int((long long)fq_advice_rates(&t, e, 3, out, 8, now + 5000000000LL), 0, "no rate on the page");
	is_int(fq_advice_take(&t, &a, now + 5000000000LL), -ENOENT, "a lift of none held: -ENOENT");
	a.rate_bytes_per_s = 1000000;
	a.remote_node = "";
	a.remote_nic = "";
	fq_advice_take(&t, &a, now + 6000000000LL);
	is_int((long long)fq_advice_rates(&t, e, 3, out, 8, now + 6000000000LL), 2,
	       "a rate for every remote of rail0: one page rate per path");
	fq_advice_fill(&t, e, 3, now + 17000000000LL);
	is_int((long long)fq_advice_rates(&t, e, 3, out, 8, now + 17000000000LL), 0, "lapsed: none");
	a.kind = "pace";
	is_int(fq_advice_take(&t, &a, now), -EINVAL, "kind other than move or rate: refused");
}

int main(void)
{
	test_nics();
	test_steps();
	test_reap();
	test_negative_cache();
	test_rate();
	test_timeline();
	test_advice();
	test_rate_advice();
	return done_testing();
}
