/*
 * advice: the controller's collision advice on the path page (see advice.h).
 */
#include "slurmd-agent/advice.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static int fits(const char *s, size_t len)
{
	return s && strlen(s) < len;
}

int fq_advice_take(struct fq_advice_table *t, const Fabriciq__Advice *a, int64_t now_ns)
{
	const char *rn = a->remote_node ? a->remote_node : "", *rnic = a->remote_nic ? a->remote_nic : "";
	struct fq_advice *e = NULL;
	bool rate;

	if (!a->kind || (strcmp(a->kind, "move") != 0 && strcmp(a->kind, "rate") != 0) || !a->job_id ||
	    a->job_id > UINT32_MAX || !fits(a->local_nic, sizeof(e->local_nic)) || !*a->local_nic ||
	    a->lifetime_ns <= 0 || !fits(rn, sizeof(e->remote_node)) || !fits(rnic, sizeof(e->remote_nic)) ||
	    a->local_port > UINT16_MAX)
		return -EINVAL;
	rate = !strcmp(a->kind, "rate");
	for (size_t i = 0; i < t->n; i++)
		if (t->e[i].job == a->job_id && !strcmp(t->e[i].local_nic, a->local_nic) &&
		    !strcmp(t->e[i].remote_node, rn) && !strcmp(t->e[i].remote_nic, rnic) &&
		    t->e[i].until_ns > now_ns && !t->e[i].rate == !rate &&
		    (rate || t->e[i].port == a->local_port)) {
			if (rate && !a->rate_bytes_per_s) { /* lifted */
				t->e[i] = t->e[--t->n];
				return FQ_ADVICE_LIFTED;
			}
			t->e[i].until_ns = now_ns + a->lifetime_ns;
			if (t->e[i].rate == a->rate_bytes_per_s || !rate)
				return 0;
			t->e[i].rate = a->rate_bytes_per_s; /* a new rate: a new generation */
			t->e[i].gen = ++t->next_gen ? t->next_gen : ++t->next_gen;
			return 1;
		}
	if (rate && !a->rate_bytes_per_s)
		return -ENOENT;
	if (t->n < FQ_ADVICE_MAX) {
		e = &t->e[t->n++];
	} else {
		e = &t->e[0];
		for (size_t i = 1; i < t->n; i++)
			if (t->e[i].until_ns < e->until_ns)
				e = &t->e[i];
	}
	memset(e, 0, sizeof(*e));
	strcpy(e->local_nic, a->local_nic);
	strcpy(e->remote_node, rn);
	strcpy(e->remote_nic, rnic);
	e->job = (uint32_t)a->job_id;
	e->until_ns = now_ns + a->lifetime_ns;
	e->gen = ++t->next_gen ? t->next_gen : ++t->next_gen; /* 0 is "none" to a reader */
	e->rate = rate ? a->rate_bytes_per_s : 0;
	e->port = rate ? 0 : (uint16_t)a->local_port;
	return 1;
}

static int matches(const struct fq_advice *a, const struct fq_path_entry *p)
{
	return !strncmp(a->local_nic, p->local_nic, sizeof(p->local_nic)) &&
	       (!*a->remote_node || !strncmp(a->remote_node, p->remote_node, sizeof(p->remote_node))) &&
	       (!*a->remote_nic || !strncmp(a->remote_nic, p->remote_nic, sizeof(p->remote_nic)));
}

size_t fq_advice_fill(struct fq_advice_table *t, struct fq_path_entry *e, size_t n, int64_t now_ns)
{
	size_t with = 0;

	for (size_t i = 0; i < t->n;)
		if (t->e[i].until_ns <= now_ns)
			t->e[i] = t->e[--t->n];
		else
			i++;
	for (size_t k = 0; k < n; k++) {
		const struct fq_advice *best = NULL;

		for (size_t i = 0; i < t->n; i++)
			if (!t->e[i].rate && matches(&t->e[i], &e[k]) &&
			    (!best || t->e[i].until_ns > best->until_ns))
				best = &t->e[i];
		e[k].advice = best ? FQ_PATH_ADVICE_MOVE : FQ_PATH_ADVICE_NONE;
		e[k].advice_job = best ? best->job : 0;
		e[k].advice_until_ns = best ? best->until_ns : 0;
		e[k].advice_gen = best ? best->gen : 0;
		e[k].advice_port = best ? best->port : 0;
		with += best != NULL;
	}
	return with;
}

size_t fq_advice_rates(const struct fq_advice_table *t, const struct fq_path_entry *e, size_t n,
		       struct fq_path_rate *out, size_t max, int64_t now_ns)
{
	size_t m = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct fq_advice *a = &t->e[i];

		if (!a->rate || a->until_ns <= now_ns)
			continue;
		for (size_t k = 0; k < n && m < max; k++) {
			if (!matches(a, &e[k]) || !e[k].remote_ipv4)
				continue;
			memset(&out[m], 0, sizeof(out[m]));
			memcpy(out[m].local_nic, a->local_nic, sizeof(out[m].local_nic));
			out[m].remote_ipv4 = e[k].remote_ipv4;
			out[m].job = a->job;
			out[m].rate = a->rate;
			out[m].until_ns = a->until_ns;
			out[m++].gen = a->gen;
		}
	}
	return m;
}
