/* steplive: which job steps are live, and which ended (see steplive.h). */
#include "controller/steplive.h"

#include <stdio.h>
#include <stdlib.h>

#include "controller/strmap.h"

/* One live step: the nodes that started it and have not ended it. */
struct live {
	struct fq_step_id id;
	struct fq_strmap nodes; /* node -> any non-NULL mark */
	int64_t seen_ns;
};

struct fq_steplive {
	struct fq_strmap steps; /* "job.step" -> struct live */
};

static void live_free(void *v)
{
	struct live *s = v;

	if (!s)
		return;
	fq_strmap_clear(&s->nodes, NULL);
	free(s);
}

struct fq_steplive *fq_steplive_create(void)
{
	return calloc(1, sizeof(struct fq_steplive));
}

void fq_steplive_destroy(struct fq_steplive *l)
{
	if (!l)
		return;
	fq_strmap_clear(&l->steps, live_free);
	free(l);
}

/* The step's entry, created if new and seen now; NULL on -ENOMEM. */
static struct live *touch(struct fq_steplive *l, uint64_t job, uint32_t step, int64_t now_ns)
{
	char key[FQ_STEP_KEY_LEN];
	struct fq_strmap_entry *e;
	struct live *s;

	fq_strmap_step_key(key, job, step);
	if (!(e = fq_strmap_upsert(&l->steps, key)))
		return NULL;
	if (!(s = e->value)) {
		if (!(s = calloc(1, sizeof(*s)))) {
			fq_strmap_remove(&l->steps, key);
			return NULL;
		}
		s->id = (struct fq_step_id){job, step};
		e->value = s;
	}
	s->seen_ns = now_ns;
	return s;
}

static int ended(struct fq_steplive *l, const char *node, const Fabriciq__StepEnd *m, struct fq_step_id *gone)
{
	char key[FQ_STEP_KEY_LEN];
	struct live *s;

	fq_strmap_step_key(key, m->job_id, m->step_id);
	if ((s = fq_strmap_get(&l->steps, key))) {
		fq_strmap_remove(&s->nodes, node);
		if (s->nodes.count)
			return 0;
		live_free(fq_strmap_remove(&l->steps, key));
	}
	*gone = (struct fq_step_id){m->job_id, m->step_id};
	return 1;
}

int fq_steplive_frame(struct fq_steplive *l, const char *node, const Fabriciq__Envelope *env, int64_t now_ns,
		      struct fq_step_id *gone)
{
	struct live *s;
	struct fq_strmap_entry *e;

	switch (env->payload_case) {
	case FABRICIQ__ENVELOPE__PAYLOAD_STEP_START:
		s = touch(l, env->step_start->job_id, env->step_start->step_id, now_ns);
		if (s && (e = fq_strmap_upsert(&s->nodes, node)))
			e->value = s;
		return 0;
	case FABRICIQ__ENVELOPE__PAYLOAD_LANE:
		touch(l, env->lane->job_id, env->lane->step_id, now_ns);
		return 0;
	case FABRICIQ__ENVELOPE__PAYLOAD_PROFILER:
		touch(l, env->profiler->job_id, env->profiler->step_id, now_ns);
		return 0;
	case FABRICIQ__ENVELOPE__PAYLOAD_STEP_END:
		return ended(l, node, env->step_end, gone);
	default:
		return 0;
	}
}

struct idle {
	int64_t before_ns;
	struct fq_step_id *gone;
	size_t n, max;
};

static void collect_idle(struct fq_strmap_entry *e, void *arg)
{
	struct idle *x = arg;
	const struct live *s = e->value;

	if (x->n < x->max && s->seen_ns < x->before_ns)
		x->gone[x->n++] = s->id;
}

size_t fq_steplive_expire(struct fq_steplive *l, int64_t now_ns, int64_t idle_ns, struct fq_step_id *gone,
			  size_t max)
{
	struct idle x = {now_ns - idle_ns, gone, 0, max};
	char key[FQ_STEP_KEY_LEN];

	fq_strmap_each(&l->steps, collect_idle, &x);
	for (size_t i = 0; i < x.n; i++) {
		fq_strmap_step_key(key, gone[i].job, gone[i].step);
		live_free(fq_strmap_remove(&l->steps, key));
	}
	return x.n;
}

size_t fq_steplive_count(const struct fq_steplive *l)
{
	return l->steps.count;
}
