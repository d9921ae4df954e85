/* topo-model: see topo-model.h. */
#include "tests/controller/topo-model.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct model M;
struct traces T;

void fabric(int hosts, int leaves, int spines, int rails, int pods, int cores)
{
	int lpr = leaves >= rails ? leaves / rails : 1;

	memset(&M, 0, sizeof(M));
	M.hosts = hosts;
	M.rails = rails;
	for (int i = 0; i < leaves + spines + cores; i++) {
		int tier = i < leaves ? 1 : i < leaves + spines ? 2 : 3;
		int k = tier == 1 ? i : tier == 2 ? i - leaves : i - leaves - spines;

		M.tier[M.n_sw] = tier;
		snprintf(M.name[M.n_sw++], 32, "%s%d",
			 tier == 1   ? "leaf"
			 : tier == 2 ? "spine"
				     : "core",
			 k + 1);
	}
	for (int l = 0; l < leaves; l++)
		for (int s = 0; s < spines; s++)
			if (l * pods / leaves == s * pods / spines) {
				M.link[M.n_links].a = l;
				M.link[M.n_links++].b = leaves + s;
			}
	for (int s = 0; pods > 1 && s < spines; s++)
		for (int c = 0; c < cores; c++) {
			M.link[M.n_links].a = leaves + s;
			M.link[M.n_links++].b = leaves + spines + c;
		}
	for (int i = 0; i < M.n_links; i++) {
		snprintf(M.link[i].addr[0], 32, "198.18.%d.%d", i / 128, 2 * (i % 128));
		snprintf(M.link[i].addr[1], 32, "198.18.%d.%d", i / 128, 2 * (i % 128) + 1);
	}
	for (int h = 0; h < hosts; h++)
		for (int r = 0; r < rails; r++) {
			int j = M.n_nics++;

			M.nic[j].host = h;
			M.nic[j].rail = r;
			M.nic[j].leaf = (r * lpr + h * lpr / hosts) % leaves;
			snprintf(M.nic[j].leaf_addr, 32, "198.19.%d.%d", j / 128, 2 * (j % 128));
			snprintf(M.nic[j].addr, 32, "198.19.%d.%d", j / 128, 2 * (j % 128) + 1);
			snprintf(M.nic[j].name, 48, "n%d/rail%d", h + 1, r);
		}
}

static uint64_t fnv(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

/* Hop distances to switch dst over the links. */
static void distances(int dst, int *dist)
{
	int queue[MAXSW], head = 0, tail = 0;

	for (int i = 0; i < M.n_sw; i++)
		dist[i] = -1;
	dist[dst] = 0;
	queue[tail++] = dst;
	while (head < tail) {
		int s = queue[head++];

		for (int l = 0; l < M.n_links; l++) {
			int o = M.link[l].a == s ? M.link[l].b : M.link[l].b == s ? M.link[l].a : -1;

			if (o >= 0 && dist[o] < 0) {
				dist[o] = dist[s] + 1;
				queue[tail++] = o;
			}
		}
	}
}

int model_flows = 1;

/* One trace from NIC i to NIC j, ECMP by the 5-tuple of the pair's flow
 * (fixed per directed pair and flow) hashed with each switch's own seed. */
static void trace(int i, int j, int flow)
{
	size_t t = T.n++;
	struct fq_topo_trace *tr = &T.tr[t];
	int dist[MAXSW], cur = M.nic[i].leaf, n = 0;
	uint64_t tuple = fnv(fnv(1469598103934665603ull, M.nic[i].addr), M.nic[j].addr);
	char port[16];

	if (flow) {
		snprintf(port, sizeof(port), ":%d", 7101 + flow);
		tuple = fnv(tuple, port);
	}

	distances(M.nic[j].leaf, dist);
	T.sw[t][n] = cur;
	T.via[t][n] = -1;
	T.hops[t][n++] = M.silent[cur] ? "" : M.nic[i].leaf_addr;
	while (cur != M.nic[j].leaf) {
		int cand[MAXL], nc = 0, l, side;

		for (l = 0; l < M.n_links; l++) {
			int o = M.link[l].a == cur ? M.link[l].b : M.link[l].b == cur ? M.link[l].a : -1;

			if (o >= 0 && dist[o] == dist[cur] - 1)
				cand[nc++] = l;
		}
		l = cand[(fnv(tuple, M.name[cur]) >> 7) % (uint64_t)nc];
		side = M.link[l].a == cur ? 1 : 0;
		cur = side ? M.link[l].b : M.link[l].a;
		T.sw[t][n] = cur;
		T.via[t][n] = l;
		T.hops[t][n++] = M.silent[cur] ? "" : M.link[l].addr[side];
	}
	*tr = (struct fq_topo_trace){.node = T.node[M.nic[i].host],
				     .nic = T.nicname[M.nic[i].rail],
				     .address = M.nic[i].addr,
				     .remote_node = T.node[M.nic[j].host],
				     .remote_nic = T.nicname[M.nic[j].rail],
				     .remote_address = M.nic[j].addr,
				     .hops = T.hops[t],
				     .n_hops = (size_t)n,
				     .reached = !M.nic[j].mute,
				     .flow = (unsigned)flow};
	if (M.nic[j].mute) /* traceroute goes on past the last router: no answer */
		T.hops[t][tr->n_hops++] = "";
}

/* Every directed pair of NICs on different hosts. */
void all_traces(void)
{
	T.n = 0;
	for (int h = 0; h < MAXN; h++) {
		snprintf(T.node[h], 16, "n%d", h + 1);
		snprintf(T.nicname[h], 16, "rail%d", h);
	}
	for (int i = 0; i < M.n_nics; i++)
		for (int j = 0; j < M.n_nics; j++)
			for (int k = 0; k < model_flows && M.nic[i].host != M.nic[j].host; k++)
				trace(i, j, k);
}

static int addr_cmp(const char *a, const char *b)
{
	struct in_addr x, y;

	inet_pton(AF_INET, a, &x);
	inet_pton(AF_INET, b, &y);
	return ntohl(x.s_addr) < ntohl(y.s_addr) ? -1 : ntohl(x.s_addr) > ntohl(y.s_addr);
}

/* The model's switch s: the addresses of it that answered any hop, sorted. */
int seen_addrs(int s, const char **out)
{
	int n = 0;

	for (size_t t = 0; t < T.n; t++)
		for (size_t k = 0; k < T.tr[t].n_hops && k < MAXHOP; k++) {
			const char *a = T.hops[t][k];
			int dup = 0;

			if (!*a || T.sw[t][k] != s)
				continue;
			for (int i = 0; i < n; i++)
				dup |= !strcmp(out[i], a);
			if (!dup)
				out[n++] = a;
		}
	for (int i = 1; i < n; i++) /* insertion sort, numeric */
		for (int j = i; j > 0 && addr_cmp(out[j - 1], out[j]) > 0; j--) {
			const char *x = out[j];

			out[j] = out[j - 1];
			out[j - 1] = x;
		}
	return n;
}

/* The name the topology should give model switch s: declared (the model's
 * name) or ROLE@LOWEST. */
void want_name(int s, bool declared, char *out, size_t len)
{
	static const char *const roles[] = {"switch", "leaf", "spine", "core"};
	const char *a[MAXSW * MAXN];

	if (declared)
		snprintf(out, len, "%s", M.name[s]);
	else if (seen_addrs(s, a))
		snprintf(out, len, "%s@%s", roles[M.tier[s]], a[0]);
	else
		out[0] = '\0';
}

/* The model as a declared file, less switch skip (and its lines) and link
 * skip_link (-1: none), plus extra. */
char *decl_text(int skip, int skip_link, const char *extra)
{
	static char buf[1 << 16];
	size_t n = 0;

	for (int s = 0; s < M.n_sw; s++) {
		if (s == skip)
			continue;
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "switch %s", M.name[s]);
		for (int j = 0; j < M.n_nics; j++)
			if (M.nic[j].leaf == s)
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s", M.nic[j].leaf_addr);
		for (int l = 0; l < M.n_links; l++)
			if (M.link[l].a == s || M.link[l].b == s)
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s",
						      M.link[l].addr[M.link[l].b == s]);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\n");
	}
	for (int j = 0; j < M.n_nics; j++)
		if (M.nic[j].leaf != skip)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "host n%d rail%d %s\n",
					      M.nic[j].host + 1, M.nic[j].rail, M.name[M.nic[j].leaf]);
	for (int l = 0; l < M.n_links; l++)
		if (l != skip_link && M.link[l].a != skip && M.link[l].b != skip)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "# cable %d\nlink %s %s\n", l,
					      M.name[M.link[l].a], M.name[M.link[l].b]);
	snprintf(buf + n, sizeof(buf) - n, "%s", extra);
	return buf;
}

/* Model links no trace crossed: the declared ones link_not_seen names. */
int uncrossed(void)
{
	int n = 0;

	for (int l = 0; l < M.n_links; l++) {
		bool crossed = false;

		for (size_t i = 0; i < T.n; i++)
			for (size_t k = 1; k < T.tr[i].n_hops; k++)
				crossed |= T.via[i][k] == l && *T.hops[i][k] && *T.hops[i][k - 1];
		n += !crossed;
	}
	return n;
}
