/* steps: registered job steps and pid -> step/rank lookup (see steps.h). */
#include "slurmd-agent/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_GENERATIONS 64
#define PID_CACHE       64 /* telemetry senders remembered (direct-mapped by pid) */

/* A resolved sender: pid -> (job, step, rank), valid while the registry
 * has not changed (gen), so a lane report costs no /proc walk. */
struct pid_hit {
	pid_t pid;
	uint64_t gen;
	uint64_t job_id;
	uint32_t step_id, rank;
};

/* A sender found in no step (the negative cache): valid while the
 * registry has not changed (gen) and until until_ns. */
struct pid_miss {
	pid_t pid;
	uint64_t gen;
	int64_t until_ns;
};

struct fq_steps {
	struct fq_step *v;
	size_t n, max;
	uint64_t gen; /* bumped by every register and unregister */
	struct pid_hit cache[PID_CACHE];
	struct pid_miss misses[PID_CACHE];
	uint64_t walks, misses_cached;
	/* fq_steps_find_sender's /proc reads: a bucket per uid (direct-mapped) and one in all */
	struct fq_rate reads_uid[PID_CACHE], reads_all;
	uint64_t proc_reads, reads_refused;
};

struct fq_steps *fq_steps_create(size_t max_steps)
{
	struct fq_steps *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->max = max_steps ? max_steps : 1;
	s->v = calloc(s->max, sizeof(*s->v));
	if (!s->v) {
		free(s);
		return NULL;
	}
	return s;
}

void fq_steps_destroy(struct fq_steps *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].ranks);
	free(s->v);
	free(s);
}

static struct fq_step *find(struct fq_steps *s, uint64_t job, uint32_t step)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].job_id == job && s->v[i].step_id == step)
			return &s->v[i];
	return NULL;
}

static int check(const Fabriciq__StepStart *m, char *err, size_t errlen)
{
	if (m->job_id == 0) {
		snprintf(err, errlen, "job id 0");
		return -EINVAL;
	}
	if (m->n_ranks == 0) {
		snprintf(err, errlen, "job %llu.%u: no ranks", (unsigned long long)m->job_id, m->step_id);
		return -EINVAL;
	}
	if (m->n_ranks > FQ_STEPS_MAX_RANKS) {
		snprintf(err, errlen, "job %llu.%u: %zu ranks on one node (at most %d)",
			 (unsigned long long)m->job_id, m->step_id, m->n_ranks, FQ_STEPS_MAX_RANKS);
		return -ENOSPC;
	}
	for (size_t i = 0; i < m->n_ranks; i++)
		if (!m->ranks[i] || m->ranks[i]->pid <= 1) {
			snprintf(err, errlen, "job %llu.%u: rank %zu has no valid pid",
				 (unsigned long long)m->job_id, m->step_id, i);
			return -EINVAL;
		}
	if (m->mode && *m->mode && strcmp(m->mode, "monitor") != 0 && strcmp(m->mode, "control") != 0) {
		snprintf(err, errlen, "job %llu.%u: unknown mode '%.32s'", (unsigned long long)m->job_id,
			 m->step_id, m->mode);
		return -EINVAL;
	}
	return 0;
}

/* Merge m's ranks into st (by global rank; a known rank gets the new pid). */
static int merge_ranks(struct fq_step *st, const Fabriciq__StepStart *m, char *err, size_t errlen)
{
	size_t add = 0;
	struct fq_step_rank *nr;

	for (size_t i = 0; i < m->n_ranks; i++) {
		size_t j;
		for (j = 0; j < st->nranks && st->ranks[j].global_rank != m->ranks[i]->global_rank; j++)
			;
		if (j == st->nranks)
			add++;
	}
	if (st->nranks + add > FQ_STEPS_MAX_RANKS) {
		snprintf(err, errlen, "job %llu.%u: more than %d ranks on one node",
			 (unsigned long long)st->job_id, st->step_id, FQ_STEPS_MAX_RANKS);
		return -ENOSPC;
	}
	nr = realloc(st->ranks, (st->nranks + add) * sizeof(*nr));
	if (!nr && st->nranks + add) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	st->ranks = nr;
	for (size_t i = 0; i < m->n_ranks; i++) {
		const Fabriciq__Rank *r = m->ranks[i];
		size_t j;
		for (j = 0; j < st->nranks && st->ranks[j].global_rank != r->global_rank; j++)
			;
		if (j == st->nranks)
			st->nranks++;
		st->ranks[j] = (struct fq_step_rank){r->global_rank, r->local_rank, (pid_t)r->pid};
	}
	return 0;
}

int fq_steps_register(struct fq_steps *s, const Fabriciq__StepStart *m, int64_t now_ns, char *err,
		      size_t errlen)
{
	struct fq_step *st;
	int rc = check(m, err, errlen);

	if (rc < 0)
		return rc;
	st = find(s, m->job_id, m->step_id);
	if (!st) {
		if (s->n == s->max) {
			snprintf(err, errlen, "registry full (%zu steps)", s->max);
			return -ENOSPC;
		}
		st = &s->v[s->n];
		memset(st, 0, sizeof(*st));
		st->job_id = m->job_id;
		st->step_id = m->step_id;
		st->registered_ns = now_ns;
		rc = merge_ranks(st, m, err, errlen);
		if (rc < 0)
			return rc;
		s->n++;
	} else if ((rc = merge_ranks(st, m, err, errlen)) < 0) {
		return rc;
	}
	s->gen++;
	st->dead_since_ns = 0; /* new pids: alive again */
	st->uid = m->uid;
	st->node_count = m->node_count;
	st->task_count = m->task_count;
	snprintf(st->mode, sizeof(st->mode), "%s", m->mode && *m->mode ? m->mode : "monitor");
	return 0;
}

int fq_steps_unregister(struct fq_steps *s, uint64_t job_id, uint32_t step_id)
{
	struct fq_step *st = find(s, job_id, step_id);

	if (!st)
		return -ENOENT;
	free(st->ranks);
	*st = s->v[--s->n];
	s->gen++;
	return 0;
}

int fq_parent_from_proc(pid_t pid, pid_t *ppid, void *arg)
{
	char path[64], buf[512], *rp;
	FILE *f;
	size_t n;
	int p;

	(void)arg;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) state ppid": comm may hold spaces and parentheses */
	rp = strrchr(buf, ')');
	if (!rp || sscanf(rp + 1, " %*c %d", &p) != 1)
		return -EPROTO;
	*ppid = p;
	return 0;
}

static struct fq_step *task_of(struct fq_steps *s, pid_t pid, const struct fq_step_rank **rank)
{
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = 0; j < s->v[i].nranks; j++)
			if (s->v[i].ranks[j].pid == pid) {
				*rank = &s->v[i].ranks[j];
				return &s->v[i];
			}
	return NULL;
}

static struct fq_step *cached(struct fq_steps *s, pid_t pid, const struct fq_step_rank **rank)
{
	const struct pid_hit *h = &s->cache[(unsigned)pid % PID_CACHE];
	struct fq_step *st;

	if (h->pid != pid || h->gen != s->gen || !(st = find(s, h->job_id, h->step_id)))
		return NULL;
	for (size_t j = 0; j < st->nranks; j++)
		if (st->ranks[j].global_rank == h->rank) {
			*rank = &st->ranks[j];
			return st;
		}
	return NULL;
}

static bool known_miss(const struct fq_steps *s, pid_t pid, int64_t now_ns)
{
	const struct pid_miss *m = &s->misses[(unsigned)pid % PID_CACHE];

	return m->pid == pid && m->gen == s->gen && now_ns < m->until_ns;
}

/* The walk from pid up its ancestors (see fq_steps_find_pid). */
static struct fq_step *walk(struct fq_steps *s, pid_t pid, fq_parent_fn parent, void *arg,
			    const struct fq_step_rank **rank)
{
	pid_t p = pid;

	s->walks++;
	for (int gen = 0; gen < MAX_GENERATIONS && p > 1; gen++) {
		struct fq_step *st = task_of(s, p, rank);
		pid_t pp;

		if (st)
			return st;
		if (parent(p, &pp, arg) < 0 || pp == p)
			return NULL;
		p = pp;
	}
	return NULL;
}

struct fq_step *fq_steps_find_pid(struct fq_steps *s, pid_t pid, int64_t now_ns, fq_parent_fn parent,
				  void *arg, const struct fq_step_rank **rank)
{
	struct fq_step *st = cached(s, pid, rank);

	if (st)
		return st;
	if (known_miss(s, pid, now_ns)) {
		s->misses_cached++;
		return NULL;
	}
	st = walk(s, pid, parent, arg, rank);
	if (st)
		s->cache[(unsigned)pid % PID_CACHE] =
		    (struct pid_hit){pid, s->gen, st->job_id, st->step_id, (*rank)->global_rank};
	else
		s->misses[(unsigned)pid % PID_CACHE] =
		    (struct pid_miss){pid, s->gen, now_ns + FQ_STEPS_MISS_TTL_NS};
	return st;
}

struct read_budget {
	struct fq_steps *s;
	uid_t uid;
	int64_t now_ns;
};

static int budgeted_parent(pid_t pid, pid_t *ppid, void *arg)
{
	static const struct fq_rate_limit per_uid = {FQ_STEPS_UID_READS_S, 2 * FQ_STEPS_UID_READS_S},
					  all = {FQ_STEPS_ALL_READS_S, 2 * FQ_STEPS_ALL_READS_S};
	struct read_budget *b = arg;

	if (!fq_rate_take(&b->s->reads_uid[(unsigned)b->uid % PID_CACHE], &per_uid, b->now_ns) ||
	    !fq_rate_take(&b->s->reads_all, &all, b->now_ns)) {
		b->s->reads_refused++;
		return -EAGAIN;
	}
	b->s->proc_reads++;
	return fq_parent_from_proc(pid, ppid, NULL);
}

struct fq_step *fq_steps_find_sender(struct fq_steps *s, pid_t pid, uid_t uid, int64_t now_ns,
				     const struct fq_step_rank **rank)
{
	struct read_budget b = {s, uid, now_ns};

	return fq_steps_find_pid(s, pid, now_ns, budgeted_parent, &b, rank);
}

struct json_object *fq_steps_counters(const struct fq_steps *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "sender_walks", json_object_new_uint64(s->walks));
	json_object_object_add(o, "sender_misses_cached", json_object_new_uint64(s->misses_cached));
	json_object_object_add(o, "sender_proc_reads", json_object_new_uint64(s->proc_reads));
	json_object_object_add(o, "sender_reads_refused", json_object_new_uint64(s->reads_refused));
	return o;
}

int fq_alive_from_proc(pid_t pid, void *arg)
{
	(void)arg;
	return kill(pid, 0) == 0 || errno == EPERM;
}

static bool any_alive(const struct fq_step *st, fq_alive_fn alive, void *arg)
{
	for (size_t j = 0; j < st->nranks; j++)
		if (alive(st->ranks[j].pid, arg))
			return true;
	return false;
}

size_t fq_steps_reap(struct fq_steps *s, int64_t now_ns, int64_t grace_ns, fq_alive_fn alive, void *arg,
		     struct fq_step_key *gone, size_t max)
{
	size_t removed = 0, i = 0;

	while (i < s->n && removed < max) {
		struct fq_step *st = &s->v[i];

		if (any_alive(st, alive, arg)) {
			st->dead_since_ns = 0;
		} else if (!st->dead_since_ns) {
			st->dead_since_ns = now_ns;
		} else if (now_ns - st->dead_since_ns >= grace_ns) {
			gone[removed++] = (struct fq_step_key){st->job_id, st->step_id};
			fq_steps_unregister(s, st->job_id, st->step_id); /* moves the last into i */
			continue;
		}
		i++;
	}
	return removed;
}

size_t fq_steps_count(const struct fq_steps *s)
{
	return s->n;
}

struct json_object *fq_steps_json(const struct fq_steps *s)
{
	struct json_object *arr = json_object_new_array();

	for (size_t i = 0; i < s->n; i++) {
		const struct fq_step *st = &s->v[i];
		struct json_object *o = json_object_new_object(), *ranks = json_object_new_array();

		json_object_object_add(o, "job_id", json_object_new_uint64(st->job_id));
		json_object_object_add(o, "step_id", json_object_new_int64(st->step_id));
		json_object_object_add(o, "uid", json_object_new_int64(st->uid));
		json_object_object_add(o, "mode", json_object_new_string(st->mode));
		json_object_object_add(o, "node_count", json_object_new_int64(st->node_count));
		json_object_object_add(o, "task_count", json_object_new_int64(st->task_count));
		for (size_t j = 0; j < st->nranks; j++) {
			struct json_object *r = json_object_new_object();
			json_object_object_add(r, "rank", json_object_new_int64(st->ranks[j].global_rank));
			json_object_object_add(r, "local_rank",
					       json_object_new_int64(st->ranks[j].local_rank));
			json_object_object_add(r, "pid", json_object_new_int(st->ranks[j].pid));
			json_object_array_add(ranks, r);
		}
		json_object_object_add(o, "ranks", ranks);
		json_object_object_add(o, "lane_reports", json_object_new_uint64(st->lane_reports));
		json_object_object_add(o, "limited_lanes", json_object_new_uint64(st->limited_lanes));
		json_object_object_add(o, "limited_events", json_object_new_uint64(st->limited_events));
		json_object_array_add(arr, o);
	}
	return arr;
}

int fq_steps_save(const struct fq_steps *s, const char *path)
{
	struct json_object *arr = fq_steps_json(s);
	char tmp[4096];
	FILE *f = NULL;
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		rc = -ENAMETOOLONG;
		goto out;
	}
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && !(f = fdopen(fd, "w")))
		close(fd);
	if (!f || fputs(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN), f) < 0 || fflush(f) != 0)
		rc = -errno;
	if (f && fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
out:
	json_object_put(arr);
	return rc;
}

static uint64_t get_u64(struct json_object *o, const char *key, bool *bad)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int)) {
		*bad = true;
		return 0;
	}
	return (uint64_t)json_object_get_int64(v);
}

/* One saved step, registered through the same checks as a StepStart. */
static int load_one(struct fq_steps *s, struct json_object *o, int64_t now_ns, char *err, size_t errlen)
{
	Fabriciq__StepStart m = FABRICIQ__STEP_START__INIT;
	struct json_object *ranks, *mode;
	Fabriciq__Rank *r, **rp;
	bool bad = false;
	size_t n;
	int rc;

	if (!json_object_object_get_ex(o, "ranks", &ranks) || !json_object_is_type(ranks, json_type_array) ||
	    !json_object_object_get_ex(o, "mode", &mode) || !json_object_is_type(mode, json_type_string))
		return -EBADMSG;
	n = json_object_array_length(ranks);
	r = calloc(n ? n : 1, sizeof(*r));
	rp = calloc(n ? n : 1, sizeof(*rp));
	if (!r || !rp) {
		rc = -ENOMEM;
		goto out;
	}
	m.job_id = get_u64(o, "job_id", &bad);
	m.step_id = (uint32_t)get_u64(o, "step_id", &bad);
	m.uid = (uint32_t)get_u64(o, "uid", &bad);
	m.node_count = (uint32_t)get_u64(o, "node_count", &bad);
	m.task_count = (uint32_t)get_u64(o, "task_count", &bad);
	m.mode = (char *)json_object_get_string(mode);
	for (size_t i = 0; i < n; i++) {
		struct json_object *x = json_object_array_get_idx(ranks, i);

		fabriciq__rank__init(&r[i]);
		r[i].global_rank = (uint32_t)get_u64(x, "rank", &bad);
		r[i].local_rank = (uint32_t)get_u64(x, "local_rank", &bad);
		r[i].pid = (int32_t)get_u64(x, "pid", &bad);
		rp[i] = &r[i];
	}
	m.n_ranks = n;
	m.ranks = rp;
	rc = bad ? -EBADMSG : fq_steps_register(s, &m, now_ns, err, errlen);
out:
	free(r);
	free(rp);
	return rc;
}

int fq_steps_load(struct fq_steps *s, const char *path, int64_t now_ns, size_t *n, char *err, size_t errlen)
{
	struct json_object *arr;
	int rc = 0;

	*n = 0;
	if (access(path, F_OK) < 0)
		return errno == ENOENT ? 0 : -errno;
	arr = json_object_from_file(path);
	if (!arr || !json_object_is_type(arr, json_type_array)) {
		snprintf(err, errlen, "%s: not a JSON array of steps", path);
		json_object_put(arr);
		return -EBADMSG;
	}
	for (size_t i = 0; i < json_object_array_length(arr) && rc == 0; i++) {
		char why[256] = "";

		rc = load_one(s, json_object_array_get_idx(arr, i), now_ns, why, sizeof(why));
		if (rc < 0)
			snprintf(err, errlen, "%s: step %zu: %s", path, i, *why ? why : "malformed");
		else
			(*n)++;
	}
	json_object_put(arr);
	return rc;
}
