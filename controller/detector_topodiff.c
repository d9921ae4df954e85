/*
 * detector_topodiff: the differences between the fabric the routes show
 * and the site's expected topology (fq_detector_topology, detector_link.h)
 * as topology_mismatch anomalies, each once it has lasted TOPO_SETTLE_NS
 * (detector_int.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/detector_int.h"

/* src into dst (truncated) with '"', '\\' and bytes that are not printable
 * ASCII replaced by '?': a summary that goes into JSON unescaped. */
static void json_safe(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < len; i++)
		dst[i] = (src[i] < 0x20 || src[i] > 0x7e || src[i] == '"' || src[i] == '\\') ? '?' : src[i];
	dst[i] = 0;
}

/* A difference's place: its kind, and its text's FNV-1a hash in hex. */
static void diff_place(struct nic_key *k, const char *kind, const char *text)
{
	uint64_t h = 14695981039346656037ULL;

	for (const char *p = text; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	memset(k, 0, sizeof(*k));
	copy_name(k->node, sizeof(k->node), kind);
	snprintf(k->nic, sizeof(k->nic), "%016" PRIx64, h);
}

void det_topo_settle(struct fq_detector *d, int64_t now)
{
	for (size_t i = 0; i < d->ntdiffs; i++) {
		struct topo_diff *t = &d->tdiffs[i];
		char summary[320], evidence[400];

		if (t->opened || now - t->first_ns < TOPO_SETTLE_NS)
			continue;
		snprintf(summary, sizeof(summary), "topology: %s", t->text);
		snprintf(evidence, sizeof(evidence), "{\"difference\":\"%s\",\"text\":\"%s\"}", t->place.node,
			 t->text);
		t->opened = det_anom_evidence(d, K_TOPOLOGY, SEV_WARNING, &t->place, NULL, t->first_ns, now,
					      summary, evidence, NULL) != NULL;
	}
}

void fq_detector_topology(struct fq_detector *d, const char *const *kinds, const char *const *texts, size_t n,
			  int64_t now)
{
	struct topo_diff *next;
	size_t m = 0;

	if (!d || (n && (!kinds || !texts)) || !(next = calloc(n ? n : 1, sizeof(*next))))
		return;
	for (size_t i = 0; i < n; i++) {
		struct topo_diff *t = &next[m];

		if (!kinds[i] || !texts[i] || !strcmp(kinds[i], "link_not_seen"))
			continue;
		diff_place(&t->place, kinds[i], texts[i]);
		json_safe(t->text, sizeof(t->text), texts[i]);
		t->first_ns = now;
		for (size_t k = 0; k < d->ntdiffs; k++) /* still there: since when, opened yet */
			if (nic_eq(&d->tdiffs[k].place, &t->place)) {
				t->first_ns = d->tdiffs[k].first_ns;
				t->opened = d->tdiffs[k].opened;
			}
		m++;
	}
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		size_t i = 0;

		if (a->k.kind != K_TOPOLOGY)
			continue;
		while (i < m && !nic_eq(&a->k.a, &next[i].place))
			i++;
		if (i == m)
			det_anom_close(d, a, now); /* the topology no longer shows it */
		else
			a->last_ns = now > a->last_ns ? now : a->last_ns;
	}
	free(d->tdiffs);
	d->tdiffs = next;
	d->ntdiffs = m;
	det_topo_settle(d, now);
}
