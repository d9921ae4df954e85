/* controller/peers: probe-peer assignment invariants, determinism and churn. */
#include "controller/peers.h"

#include <errno.h>

#include "tests/unit/tap.h"

struct cluster {
	size_t n;
	struct fq_peer_nic *nic;
	char (*node)[16], (*name)[16], (*addr)[20];
};

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* nodes x rails, per_rail NICs of each node on each rail. */
static void cluster_make(struct cluster *c, unsigned nodes, unsigned rails, unsigned per_rail)
{
	size_t i = 0;

	c->n = (size_t)nodes * rails * per_rail;
	c->nic = calloc(c->n, sizeof(*c->nic));
	c->node = calloc(c->n, sizeof(*c->node));
	c->name = calloc(c->n, sizeof(*c->name));
	c->addr = calloc(c->n, sizeof(*c->addr));
	if (!c->nic || !c->node || !c->name || !c->addr)
		skip_all("out of memory");
	for (unsigned nd = 0; nd < nodes; nd++)
		for (unsigned r = 0; r < rails; r++)
			for (unsigned p = 0; p < per_rail; p++, i++) {
				snprintf(c->node[i], sizeof(c->node[i]), "gpu%05u", nd);
				snprintf(c->name[i], sizeof(c->name[i]), "mlx5_%u", r * per_rail + p);
				snprintf(c->addr[i], sizeof(c->addr[i]), "198.18.%u.%u",
					 (unsigned)(i >> 8) & 255, (unsigned)i & 255);
				c->nic[i] = (struct fq_peer_nic){c->node[i], c->name[i], c->addr[i], r};
			}
}

static void cluster_free(struct cluster *c)
{
	free(c->nic);
	free(c->node);
	free(c->name);
	free(c->addr);
}

static size_t find_root(size_t *up, size_t i)
{
	while (up[i] != i)
		i = up[i] = up[up[i]];
	return i;
}

struct check {
	int degree, rail, self, dup, indeg, connected;
	unsigned max_in;
};

/* The plan's invariants; others_k: expected out-degree min(k, others). */
static struct check plan_check(const struct fq_peer_nic *nic, size_t n, unsigned k,
			       const struct fq_peer_plan *p)
{
	struct check c = {1, 1, 1, 1, 1, 1, 0};
	unsigned *in = calloc(n, sizeof(*in));
	size_t *up = malloc(n * sizeof(*up));

	if (!in || !up)
		skip_all("out of memory");
	for (size_t i = 0; i < n; i++)
		up[i] = i;
	for (size_t i = 0; i < n; i++) {
		size_t others = 0, deg = p->first[i + 1] - p->first[i];

		for (size_t j = 0; j < n; j++)
			others += nic[j].rail == nic[i].rail && strcmp(nic[j].node, nic[i].node) != 0;
		c.degree &= deg == (others < k ? others : k);
		for (size_t q = p->first[i]; q < p->first[i + 1]; q++) {
			uint32_t j = p->peers[q];

			c.rail &= j < n && nic[j].rail == nic[i].rail;
			c.self &= j < n && strcmp(nic[j].node, nic[i].node) != 0;
			for (size_t q2 = p->first[i]; q2 < q; q2++)
				c.dup &= p->peers[q2] != j;
			if (j < n) {
				in[j]++;
				up[find_root(up, i)] = find_root(up, j);
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		int alone = 1; /* a NIC with no other node on its rail cannot be probed */

		for (size_t j = 0; j < n && alone; j++)
			alone = !(nic[j].rail == nic[i].rail && strcmp(nic[j].node, nic[i].node) != 0);
		c.indeg &= alone || in[i] >= 1;
		c.max_in = in[i] > c.max_in ? in[i] : c.max_in;
		for (size_t j = 0; j < i; j++)
			if (nic[j].rail == nic[i].rail && find_root(up, i) != find_root(up, j)) {
				c.connected = 0;
				break;
			}
	}
	free(in);
	free(up);
	return c;
}

static void check_all(const struct cluster *c, unsigned k, const char *what)
{
	struct fq_peer_plan p;
	struct check ck;

	if (!ok(fq_peers_assign(c->nic, c->n, k, 1, &p) == 0, "%s: assigned", what))
		return;
	ck = plan_check(c->nic, c->n, k, &p);
	ok(ck.degree, "%s: every NIC has min(k=%u, other nodes' NICs on its rail) peers", what, k);
	ok(ck.rail && ck.self && ck.dup, "%s: same rail, never its own node, no peer twice", what);
	ok(ck.indeg, "%s: every NIC probed by someone (max in-degree %u)", what, ck.max_in);
	ok(ck.connected, "%s: each rail connected", what);
	fq_peer_plan_free(&p);
}

static void test_args(void)
{
	struct fq_peer_nic two[] = {{"a", "eth0", "1.1.1.1", 0}, {"a", "eth0", "1.1.1.2", 0}};
	struct fq_peer_nic noname[] = {{NULL, "eth0", "1.1.1.1", 0}};
	struct fq_peer_plan p;

	is_int(fq_peers_assign(two, 2, 0, 1, &p), -EINVAL, "k = 0: -EINVAL");
	is_int(fq_peers_assign(two, 2, 3, 1, &p), -EINVAL, "the same NIC twice: -EINVAL");
	is_int(fq_peers_assign(noname, 1, 3, 1, &p), -EINVAL, "a NIC without a node name: -EINVAL");
	is_int(fq_peers_assign(NULL, 0, 3, 1, &p), 0, "no NICs: an empty plan");
	ok(p.n_nics == 0 && p.n_peers == 0 && p.first && p.first[0] == 0, "... with first[0] = 0");
	fq_peer_plan_free(&p);
	two[1].node = "b";
	two[1].rail = 1;
	is_int(fq_peers_assign(two, 2, 3, 1, &p), 0, "two NICs on different rails");
	ok(p.n_peers == 0, "... have no peers");
	fq_peer_plan_free(&p);
}

/* Peer names of every NIC, in order, as one string per NIC. */
static char **plan_names(const struct fq_peer_nic *nic, const struct fq_peer_plan *p)
{
	char **s = calloc(p->n_nics, sizeof(*s));

	for (size_t i = 0; s && i < p->n_nics; i++) {
		size_t len = 1, off = 0;

		for (size_t q = p->first[i]; q < p->first[i + 1]; q++)
			len += strlen(nic[p->peers[q]].node) + strlen(nic[p->peers[q]].nic) + 2;
		s[i] = malloc(len);
		if (!s[i])
			skip_all("out of memory");
		s[i][0] = 0;
		for (size_t q = p->first[i]; q < p->first[i + 1]; q++)
			off += (size_t)sprintf(s[i] + off, "%s/%s ", nic[p->peers[q]].node,
					       nic[p->peers[q]].nic);
	}
	return s;
}

static void names_free(char **s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(s[i]);
	free(s);
}

static void test_determinism(void)
{
	struct cluster c;
	struct fq_peer_plan p, q;
	struct fq_peer_nic *sh;
	char **a, **b;
	size_t *perm, same = 0, other_seed_same = 0;

	cluster_make(&c, 100, 4, 1);
	sh = malloc(c.n * sizeof(*sh));
	perm = malloc(c.n * sizeof(*perm));
	if (!sh || !perm)
		skip_all("out of memory");
	for (size_t i = 0; i < c.n; i++)
		perm[i] = i;
	rng_state = 3;
	for (size_t i = c.n - 1; i > 0; i--) { /* Fisher-Yates */
		size_t j = rng_next() % (i + 1), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < c.n; i++)
		sh[i] = c.nic[perm[i]];
	fq_peers_assign(c.nic, c.n, 6, 99, &p);
	fq_peers_assign(sh, c.n, 6, 99, &q);
	a = plan_names(c.nic, &p);
	b = plan_names(sh, &q);
	for (size_t i = 0; i < c.n; i++)
		same += strcmp(a[perm[i]], b[i]) == 0;
	is_int(same, c.n, "shuffled input: every NIC gets the same peers, in the same order");
	names_free(b, c.n);
	fq_peer_plan_free(&q);
	fq_peers_assign(c.nic, c.n, 6, 100, &q);
	b = plan_names(c.nic, &q);
	for (size_t i = 0; i < c.n; i++)
		other_seed_same += strcmp(a[i], b[i]) == 0;
	ok(other_seed_same < c.n / 10, "another seed: other hashed picks (%zu of %zu NICs unchanged)",
	   other_seed_same, c.n);
	names_free(a, c.n);
	names_free(b, c.n);
	fq_peer_plan_free(&p);
	fq_peer_plan_free(&q);
	free(sh);
	free(perm);
	cluster_free(&c);
}

/* Remove each node in turn (4 NICs, one per rail) and compare every other
 * NIC's peer list. Only NICs that had a removed NIC as a peer may change
 * (the ring walk and the hash circle both just step over the gap), so the
 * changed count is at most the removed NICs' in-degree: k per NIC on
 * average, i.e. a share of k/N of a rail of N NICs. Asserted: exactly that
 * containment, and the average against the k-per-removed-NIC bound. */
static void test_churn(void)
{
	enum {
		NODES = 100,
		RAILS = 4,
		K = 6
	};
	struct cluster c;
	struct fq_peer_plan full, less;
	struct fq_peer_nic *sub = malloc(NODES * RAILS * sizeof(*sub));
	char **a, **b;
	size_t changed_total = 0, outside = 0, max_changed = 0;

	cluster_make(&c, NODES, RAILS, 1);
	if (!sub)
		skip_all("out of memory");
	fq_peers_assign(c.nic, c.n, K, 5, &full);
	a = plan_names(c.nic, &full);
	for (unsigned gone = 0; gone < NODES; gone++) {
		size_t m = 0, changed = 0;

		for (size_t i = 0; i < c.n; i++)
			if (i / RAILS != gone)
				sub[m++] = c.nic[i];
		if (fq_peers_assign(sub, m, K, 5, &less) < 0)
			break;
		b = plan_names(sub, &less);
		for (size_t i = 0, j = 0; i < c.n; i++) {
			if (i / RAILS == gone)
				continue;
			if (strcmp(a[i], b[j]) != 0) {
				int had = 0;

				changed++;
				for (size_t q = full.first[i]; q < full.first[i + 1]; q++)
					had |= full.peers[q] / RAILS == gone;
				outside += !had;
			}
			j++;
		}
		changed_total += changed;
		max_changed = changed > max_changed ? changed : max_changed;
		names_free(b, m);
		fq_peer_plan_free(&less);
	}
	is_int(outside, 0, "churn: only NICs that probed the removed node change their peers");
	ok((double)changed_total / NODES / RAILS <= K,
	   "churn: %.2f NICs changed per removed NIC on average (bound k = %d; share %.3f of a rail, < 3k/N "
	   "= %.3f)"
	   ", worst node %zu",
	   (double)changed_total / NODES / RAILS, K, (double)changed_total / NODES / RAILS / NODES,
	   3.0 * K / NODES, max_changed);
	names_free(a, c.n);
	fq_peer_plan_free(&full);
	free(sub);
	cluster_free(&c);
}

int main(void)
{
	struct cluster c;

	test_args();

	cluster_make(&c, 64, 4, 1);
	check_all(&c, 6, "64 nodes x 4 rails, k 6");
	check_all(&c, 1, "64 nodes x 4 rails, k 1");
	check_all(&c, 63, "64 nodes x 4 rails, k 63 (everyone)");
	cluster_free(&c);

	cluster_make(&c, 5, 2, 1);
	check_all(&c, 10, "k larger than the rail (5 nodes, k 10)");
	cluster_free(&c);

	cluster_make(&c, 16, 1, 2);
	check_all(&c, 5, "16 nodes x 2 NICs on one rail, k 5");
	cluster_free(&c);

	cluster_make(&c, 1000, 8, 1);
	check_all(&c, 10, "1000 nodes x 8 rails, k 10");
	cluster_free(&c);

	{ /* one node with 5 NICs on the rail, one with 1: constraints still hold */
		struct fq_peer_nic odd[] = {{"a", "e0", "", 0}, {"a", "e1", "", 0}, {"a", "e2", "", 0},
					    {"a", "e3", "", 0}, {"a", "e4", "", 0}, {"b", "e0", "", 0}};
		struct fq_peer_plan p;
		struct check ck;

		fq_peers_assign(odd, 6, 2, 1, &p);
		ck = plan_check(odd, 6, 2, &p);
		ok(ck.degree && ck.rail && ck.self && ck.dup,
		   "lopsided rail (5 NICs on one node): degrees and rules hold");
		ok(p.first[6] - p.first[5] == 2 && p.first[1] - p.first[0] == 1,
		   "... b gets 2 peers, each a NIC 1");
		fq_peer_plan_free(&p);
	}
	test_determinism();
	test_churn();
	return done_testing();
}
