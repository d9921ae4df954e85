/*
 * topo-model: a small routed Clos fabric for test-topology (switches,
 * point-to-point /31 links, NICs on leaves) and the traces its agents would
 * make: each router answers from its inbound interface, ECMP picks among
 * the next switches nearer the destination by a hash of the directed pair's
 * 5-tuple and the switch. Its one model and trace set are globals: a test
 * program's fixture.
 */
#ifndef FQ_TESTS_TOPO_MODEL_H
#define FQ_TESTS_TOPO_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "controller/topology.h"

#define MAXSW  64
#define MAXL   256
#define MAXN   128
#define MAXT   (MAXN * MAXN)
#define MAXHOP 8

struct model {
	int n_sw, n_links, n_nics, hosts, rails;
	int tier[MAXSW];
	char name[MAXSW][32];
	bool silent[MAXSW];
	struct {
		int a, b;
		char addr[2][32]; /* a's side, b's side */
	} link[MAXL];
	struct {
		int host, rail, leaf;
		char addr[32], leaf_addr[32], name[48];
		bool mute; /* its agent does not echo */
	} nic[MAXN];
};

/* The traces, and for each hop the model's switch and the link it came in on. */
struct traces {
	size_t n;
	struct fq_topo_trace tr[MAXT];
	const char *hops[MAXT][MAXHOP + 1];
	int sw[MAXT][MAXHOP], via[MAXT][MAXHOP]; /* via: link, -1 for the host link */
	char node[MAXN][16], nicname[MAXN][16];
};

extern struct model M;
extern struct traces T;
/* Probe flows per directed pair all_traces makes (1 unless set): flow k's
 * 5-tuple is the pair's with its ports + k, so ECMP hashes each apart
 * (flow 0: the pair's own, as before flows). */
extern int model_flows;

/* hosts x leaves x spines x rails; pods > 1: a 3-tier fabric, leaves and
 * spines split into pods, every spine cabled to every one of cores. */
void fabric(int hosts, int leaves, int spines, int rails, int pods, int cores);
/* T: every directed pair of NICs on different hosts, model_flows traces each. */
void all_traces(void);
/* The addresses of model switch s that answered any hop, numerically sorted. */
int seen_addrs(int s, const char **out);
/* The name the topology should give model switch s: the model's
 * (declared) or ROLE@LOWEST; "" if never seen. */
void want_name(int s, bool declared, char *out, size_t len);
/* The model as a declared file, less switch skip (and its lines) and link
 * skip_link (-1: none), plus extra. A static buffer. */
char *decl_text(int skip, int skip_link, const char *extra);
/* Model links no trace crossed between two answering hops. */
int uncrossed(void);

#endif /* FQ_TESTS_TOPO_MODEL_H */
