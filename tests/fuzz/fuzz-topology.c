/*
 * libFuzzer target: the declared-topology parser on hostile text. Whatever
 * parses is written back and must parse the same; it is then checked
 * against traces made from it (each declared host to the next, through the
 * first address of each one's switch), with a delay floor for every pair
 * of hosts drawn from their lines (negative, equal and huge ones among
 * them) for the cross-check by delay, and the result turned into JSON.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *write_back(const struct fq_topo_decl *d, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	for (size_t i = 0; i < d->n_switches; i++) {
		fprintf(f, "switch %s", d->switches[i].name);
		for (size_t j = 0; j < d->switches[i].n_addresses; j++)
			fprintf(f, " %s", d->switches[i].addresses[j]);
		fputc('\n', f);
	}
	for (size_t i = 0; i < d->n_hosts; i++)
		fprintf(f, "host %s %s %s\n", d->hosts[i].node, d->hosts[i].nic,
			d->switches[d->hosts[i].sw].name);
	for (size_t i = 0; i < d->n_links; i++)
		fprintf(f, "link %s %s\n", d->switches[d->links[i].a].name, d->switches[d->links[i].b].name);
	fclose(f);
	return text;
}

static void check(const struct fq_topo_decl *d)
{
	size_t n = d->n_hosts < 64 ? d->n_hosts : 64;
	struct fq_topo_trace tr[64];
	const char *hops[64][2];
	static struct fq_topo_floor fl[64 * 64];
	struct fq_topo_opts opts = {.floors = fl};
	struct fq_topo *t;
	struct json_object *o;

	for (size_t i = 0; i < n; i++) {
		const struct fq_topo_decl_host *a = &d->hosts[i], *b = &d->hosts[(i + 1) % n];

		hops[i][0] = d->switches[a->sw].addresses[0];
		hops[i][1] = d->switches[b->sw].addresses[0];
		tr[i] = (struct fq_topo_trace){
		    .node = a->node,
		    .nic = a->nic,
		    .remote_node = b->node,
		    .remote_nic = b->nic,
		    .hops = hops[i],
		    .n_hops = 2,
		    .reached = i % 3 != 0,
		    .flow = (unsigned)(a->line % 3)}; /* flows of a pair: paths apart */
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			const struct fq_topo_decl_host *a = &d->hosts[i], *b = &d->hosts[j];
			int64_t ns = ((int64_t)a->line * 7919 + (int64_t)b->line * 104729) % 20011 - 1000;

			fl[opts.n_floors++] = (struct fq_topo_floor){a->node, a->nic, b->node, b->nic,
								     ns % 7 ? ns : INT64_MAX / 2};
		}
	if (fq_topo_build(tr, n, d, &opts, &t) < 0)
		return;
	o = fq_topo_json(t);
	if (o)
		json_object_to_json_string(o);
	json_object_put(o);
	fq_topo_destroy(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fq_topo_decl *d = NULL, *d2 = NULL;
	char err[256], *text;
	size_t len = 0;

	if (fq_topo_decl_parse((const char *)data, size, &d, err, sizeof(err)) < 0) {
		if (!memchr(err, '\0', sizeof(err)) || strncmp(err, "line ", 5))
			abort(); /* every error names its line */
		return 0;
	}
	text = write_back(d, &len);
	if (!text || fq_topo_decl_parse(text, len, &d2, err, sizeof(err)) < 0 ||
	    d2->n_switches != d->n_switches || d2->n_hosts != d->n_hosts || d2->n_links != d->n_links)
		abort();
	check(d);
	free(text);
	fq_topo_decl_free(d2);
	fq_topo_decl_free(d);
	return 0;
}
