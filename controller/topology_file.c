/* topology_file: the site's expected-topology file, parsed (topology.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/strmap.h"
#include "controller/topology.h"

struct parser {
	struct fq_topo_decl *d;
	struct fq_strmap names, addrs, hosts, links; /* -> index + 1 */
	size_t cap_sw, cap_hosts, cap_links;
	int line;
	char *err;
	size_t errlen;
};

static int fail(struct parser *p, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, int rc, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (p->err && p->errlen) {
		n = snprintf(p->err, p->errlen, "line %d: ", p->line);
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < p->errlen)
			vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* [A-Za-z0-9._-]{1,63} */
static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 63)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* A dotted quad, each part 0-255 without leading zeros. */
static bool valid_ipv4(const char *s)
{
	for (int part = 0; part < 4; part++) {
		int v = 0, digits = 0;

		for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++)
			v = v * 10 + (*s - '0');
		if (digits < 1 || digits > 3 || v > 255 || (digits > 1 && s[-digits] == '0'))
			return false;
		if (*s != (part < 3 ? '.' : '\0'))
			return false;
		if (part < 3)
			s++;
	}
	return true;
}

static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void *a;

	if (n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 16;
	if (!(a = realloc(*arr, *cap * size)))
		return -ENOMEM;
	*arr = a;
	return 0;
}

static int put_index(struct fq_strmap *m, const char *key, size_t i)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(m, key);

	if (!e)
		return -ENOMEM;
	e->value = (void *)(i + 1);
	return 0;
}

static int find_switch(struct parser *p, const char *name, size_t *out)
{
	void *v = fq_strmap_get(&p->names, name);

	if (!valid_name(name))
		return fail(p, -EINVAL, "'%.64s' is not a switch name ([A-Za-z0-9._-], 1 to 63)", name);
	if (!v)
		return fail(p, -EINVAL, "unknown switch '%s' (declare it first: switch NAME ADDRESS...)",
			    name);
	*out = (size_t)v - 1;
	return 0;
}

static int st_switch(struct parser *p, char **w, int n)
{
	struct fq_topo_decl *d = p->d;
	struct fq_topo_decl_switch *s;

	if (n < 3)
		return fail(p, -EINVAL, "switch needs a name and at least one address");
	if (!valid_name(w[1]))
		return fail(p, -EINVAL, "'%.64s' is not a switch name ([A-Za-z0-9._-], 1 to 63)", w[1]);
	if (fq_strmap_get(&p->names, w[1]))
		return fail(p, -EINVAL, "switch '%s' declared twice", w[1]);
	if (n - 2 > FQ_TOPO_DECL_MAX_ADDRS)
		return fail(p, -E2BIG, "switch '%s': more than %d addresses", w[1], FQ_TOPO_DECL_MAX_ADDRS);
	if (d->n_switches >= FQ_TOPO_DECL_MAX_SWITCHES)
		return fail(p, -E2BIG, "more than %d switches", FQ_TOPO_DECL_MAX_SWITCHES);
	for (int i = 2; i < n; i++) {
		void *other = fq_strmap_get(&p->addrs, w[i]);

		if (!valid_ipv4(w[i]))
			return fail(p, -EINVAL, "'%.64s' is not an IPv4 address (a.b.c.d)", w[i]);
		if (other)
			return fail(p, -EINVAL, "address %s declared twice (also on switch '%s')", w[i],
				    (size_t)other - 1 == d->n_switches ? w[1]
								       : d->switches[(size_t)other - 1].name);
		if (put_index(&p->addrs, w[i], d->n_switches) < 0)
			return -ENOMEM;
	}
	if (grow((void **)&d->switches, &p->cap_sw, d->n_switches, sizeof(*s)) < 0)
		return -ENOMEM;
	s = &d->switches[d->n_switches];
	*s = (struct fq_topo_decl_switch){.line = p->line};
	if (!(s->name = strdup(w[1])) || !(s->addresses = calloc((size_t)n - 2, sizeof(char *)))) {
		free(s->name);
		return -ENOMEM;
	}
	d->n_switches++; /* from here fq_topo_decl_free owns it */
	for (int i = 2; i < n; i++)
		if (!(s->addresses[s->n_addresses++] = strdup(w[i])))
			return -ENOMEM;
	return put_index(&p->names, w[1], d->n_switches - 1);
}

static int st_host(struct parser *p, char **w, int n)
{
	struct fq_topo_decl *d = p->d;
	struct fq_topo_decl_host *h;
	char key[2 * 64 + 2];
	size_t sw;
	int rc;

	if (n != 4)
		return fail(p, -EINVAL, "host takes NODE NIC SWITCH");
	if (!valid_name(w[1]) || !valid_name(w[2]))
		return fail(p, -EINVAL, "'%.64s' is not a name ([A-Za-z0-9._-], 1 to 63)",
			    valid_name(w[1]) ? w[2] : w[1]);
	if ((rc = find_switch(p, w[3], &sw)) < 0)
		return rc;
	snprintf(key, sizeof(key), "%s/%s", w[1], w[2]);
	if (fq_strmap_get(&p->hosts, key))
		return fail(p, -EINVAL, "host %s declared twice", key);
	if (d->n_hosts >= FQ_TOPO_DECL_MAX_HOSTS)
		return fail(p, -E2BIG, "more than %u hosts", FQ_TOPO_DECL_MAX_HOSTS);
	if (grow((void **)&d->hosts, &p->cap_hosts, d->n_hosts, sizeof(*h)) < 0 ||
	    put_index(&p->hosts, key, d->n_hosts) < 0)
		return -ENOMEM;
	h = &d->hosts[d->n_hosts];
	*h = (struct fq_topo_decl_host){.sw = sw, .line = p->line};
	h->node = strdup(w[1]);
	h->nic = strdup(w[2]);
	d->n_hosts++;
	return h->node && h->nic ? 0 : -ENOMEM;
}

static int st_link(struct parser *p, char **w, int n)
{
	struct fq_topo_decl *d = p->d;
	char key[2 * 64 + 2];
	size_t a, b;
	int rc;

	if (n != 3)
		return fail(p, -EINVAL, "link takes SWITCH SWITCH");
	if ((rc = find_switch(p, w[1], &a)) < 0 || (rc = find_switch(p, w[2], &b)) < 0)
		return rc;
	if (a == b)
		return fail(p, -EINVAL, "link from switch '%s' to itself", w[1]);
	snprintf(key, sizeof(key), "%s~%s", strcmp(w[1], w[2]) < 0 ? w[1] : w[2],
		 strcmp(w[1], w[2]) < 0 ? w[2] : w[1]);
	if (fq_strmap_get(&p->links, key))
		return fail(p, -EINVAL, "link %s declared twice", key);
	if (d->n_links >= FQ_TOPO_DECL_MAX_LINKS)
		return fail(p, -E2BIG, "more than %u links", FQ_TOPO_DECL_MAX_LINKS);
	if (grow((void **)&d->links, &p->cap_links, d->n_links, sizeof(*d->links)) < 0 ||
	    put_index(&p->links, key, d->n_links) < 0)
		return -ENOMEM;
	d->links[d->n_links++] = (struct fq_topo_decl_link){.a = a, .b = b, .line = p->line};
	return 0;
}

/* One line (NUL-terminated, no newline), split into words in place. */
static int parse_line(struct parser *p, char *line)
{
	char *w[FQ_TOPO_DECL_MAX_ADDRS + 3], *save = NULL, *tok;
	int n = 0;

	if ((tok = strchr(line, '#')))
		*tok = '\0';
	for (tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
		if (n == (int)(sizeof(w) / sizeof(w[0])))
			return fail(p, -E2BIG, "more than %zu words", sizeof(w) / sizeof(w[0]));
		w[n++] = tok;
	}
	if (n == 0)
		return 0;
	if (!strcmp(w[0], "switch"))
		return st_switch(p, w, n);
	if (!strcmp(w[0], "host"))
		return st_host(p, w, n);
	if (!strcmp(w[0], "link"))
		return st_link(p, w, n);
	return fail(p, -EINVAL, "unknown statement '%.64s' (switch, host or link)", w[0]);
}

int fq_topo_decl_parse(const char *text, size_t len, struct fq_topo_decl **out, char *err, size_t errlen)
{
	struct parser p = {.err = err, .errlen = errlen};
	char line[FQ_TOPO_DECL_MAX_LINE + 1];
	size_t at = 0;
	int rc = 0;

	*out = NULL;
	if (len > FQ_TOPO_DECL_MAX_BYTES)
		return fail(&p, -E2BIG, "file larger than %u bytes", FQ_TOPO_DECL_MAX_BYTES);
	if (!(p.d = calloc(1, sizeof(*p.d))))
		return -ENOMEM;
	while (!rc && at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t n = (nl ? (size_t)(nl - text) : len) - at;

		p.line++;
		if (n > FQ_TOPO_DECL_MAX_LINE)
			rc = fail(&p, -E2BIG, "longer than %d bytes", FQ_TOPO_DECL_MAX_LINE);
		else if (memchr(text + at, '\0', n))
			rc = fail(&p, -EINVAL, "a NUL byte");
		else {
			memcpy(line, text + at, n);
			line[n] = '\0';
			rc = parse_line(&p, line);
		}
		at += n + 1;
	}
	if (rc == -ENOMEM)
		fail(&p, rc, "out of memory");
	fq_strmap_clear(&p.names, NULL);
	fq_strmap_clear(&p.addrs, NULL);
	fq_strmap_clear(&p.hosts, NULL);
	fq_strmap_clear(&p.links, NULL);
	if (rc < 0) {
		fq_topo_decl_free(p.d);
		return rc;
	}
	*out = p.d;
	return 0;
}

void fq_topo_decl_free(struct fq_topo_decl *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_switches; i++) {
		for (size_t j = 0; j < d->switches[i].n_addresses; j++)
			free(d->switches[i].addresses[j]);
		free(d->switches[i].addresses);
		free(d->switches[i].name);
	}
	for (size_t i = 0; i < d->n_hosts; i++) {
		free(d->hosts[i].node);
		free(d->hosts[i].nic);
	}
	free(d->switches);
	free(d->hosts);
	free(d->links);
	free(d);
}

int fq_topo_decl_load(const char *path, struct fq_topo_decl **out, char *err, size_t errlen)
{
	char why[256] = "", *text;
	FILE *f;
	size_t n;
	int rc;

	*out = NULL;
	if (!(f = fopen(path, "re"))) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	text = malloc(FQ_TOPO_DECL_MAX_BYTES + 1);
	n = text ? fread(text, 1, FQ_TOPO_DECL_MAX_BYTES + 1, f) : 0;
	fclose(f);
	if (!text) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	if (n > FQ_TOPO_DECL_MAX_BYTES) {
		free(text);
		snprintf(err, errlen, "%s: over %u bytes", path, FQ_TOPO_DECL_MAX_BYTES);
		return -E2BIG;
	}
	rc = fq_topo_decl_parse(text, n, out, why, sizeof(why));
	free(text);
	if (rc < 0)
		snprintf(err, errlen, "%s: %s", path, why);
	return rc;
}
