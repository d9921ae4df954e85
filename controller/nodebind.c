/* nodebind: node names bound to the address their agent first came from (nodebind.h). */
#include "controller/nodebind.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/mkdirs.h"
#include "controller/strmap.h"

struct fq_nodebind {
	char *path;
	struct fq_strmap map; /* node -> address (malloc'd string) */
};

static int seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

/* A node name as a word of the file: bytes other than [A-Za-z0-9._-] as
 * %XX (a name is whatever an agent sent: spaces, newlines, '#'). */
static void escape(const char *in, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *in && o + 4 <= len; in++) {
		unsigned char ch = (unsigned char)*in;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '.' || ch == '_' || ch == '-') {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
				      : -1;
}

/* escape's inverse, in place: 0, or -EINVAL for a bad or NUL escape. */
static int unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		if (hexval(s[1]) < 0 || hexval(s[2]) < 0 || (hexval(s[1]) | hexval(s[2])) == 0)
			return -EINVAL;
		*o++ = (char)(hexval(s[1]) << 4 | hexval(s[2]));
		s += 2;
	}
	*o = '\0';
	return 0;
}

static int put(struct fq_strmap *m, const char *node, const char *addr)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(m, node);
	char *v = strdup(addr);

	if (!e || !v) {
		free(v);
		return -ENOMEM;
	}
	free(e->value);
	e->value = v;
	return 0;
}

/* Parse the file into m: 0 (a missing file is empty), or a negative errno. */
static int load(const char *path, struct fq_strmap *m, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char line[1024], node[3 * 255 + 1], addr[128], extra[2];
	int no = 0, rc = 0;

	if (!f)
		return errno == ENOENT ? 0 : seterr(err, errlen, -errno, "%s: %s", path, strerror(errno));
	while (!rc && fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#');
		int n;

		no++;
		if (hash)
			*hash = '\0';
		n = sscanf(line, "%765s %127s %1s", node, addr, extra);
		if (n <= 0)
			continue;
		if (n != 2 || unescape(node) < 0)
			rc = seterr(err, errlen, -EINVAL, "%s:%d: not a \"NODE ADDRESS\" line", path, no);
		else if ((rc = put(m, node, addr)) < 0)
			seterr(err, errlen, rc, "%s: out of memory", path);
	}
	if (!rc && ferror(f))
		rc = seterr(err, errlen, -EIO, "%s: read error", path);
	fclose(f);
	return rc;
}

int fq_nodebind_open(const char *path, struct fq_nodebind **out, char *err, size_t errlen)
{
	struct fq_nodebind *b = calloc(1, sizeof(*b));
	char *dir = strdup(path);
	int rc;

	*out = NULL;
	if (!b || !dir || !(b->path = strdup(path))) {
		rc = seterr(err, errlen, -ENOMEM, "node bindings: out of memory");
		goto fail;
	}
	if ((rc = fq_mkdirs(dirname(dir), 0700)) < 0) {
		seterr(err, errlen, rc, "node bindings %s: mkdir: %s", path, strerror(-rc));
		goto fail;
	}
	if ((rc = load(path, &b->map, err, errlen)) < 0)
		goto fail;
	free(dir);
	*out = b;
	return 0;
fail:
	free(dir);
	fq_nodebind_close(b);
	return rc;
}

int fq_nodebind_reload(struct fq_nodebind *b, char *err, size_t errlen)
{
	struct fq_strmap fresh = {0};
	int rc = load(b->path, &fresh, err, errlen);

	if (rc < 0) {
		fq_strmap_clear(&fresh, free);
		return rc;
	}
	fq_strmap_clear(&b->map, free);
	b->map = fresh;
	return 0;
}

static void write_line(struct fq_strmap_entry *e, void *arg)
{
	char word[3 * 255 + 1];

	escape(e->key, word, sizeof(word));
	fprintf(arg, "%s %s\n", word, (const char *)e->value);
}

/* Rewrite the file from the map: a temporary beside it, synced, renamed
 * over it, and the directory synced. 0 or a negative errno. */
static int save(const struct fq_nodebind *b)
{
	char tmp[PATH_MAX], *dir;
	FILE *f;
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", b->path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	fputs("# fabriciq controller: each node name and the address its agent connects from (trusted on "
	      "first use).\n# To move a node: delete its line, then reload the controller (SIGHUP).\n",
	      f);
	fq_strmap_each(&b->map, write_line, f);
	if (fflush(f) || fsync(fileno(f)))
		rc = -errno;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, b->path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	if (!(dir = strdup(b->path)))
		return -ENOMEM;
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

const char *fq_nodebind_get(const struct fq_nodebind *b, const char *node)
{
	return fq_strmap_get(&b->map, node);
}

int fq_nodebind_check(struct fq_nodebind *b, const char *node, const char *addr, const char **bound)
{
	const char *have = fq_strmap_get(&b->map, node);
	int rc;

	if (have) {
		if (bound)
			*bound = have;
		return strcmp(have, addr) ? -EPERM : 0;
	}
	if ((rc = put(&b->map, node, addr)) < 0)
		return rc;
	if ((rc = save(b)) < 0)
		fq_error("node bindings %s: cannot save %s %s (held in memory until a restart): %s", b->path,
			 node, addr, strerror(-rc));
	if (bound)
		*bound = fq_strmap_get(&b->map, node);
	return 1;
}

size_t fq_nodebind_count(const struct fq_nodebind *b)
{
	return b->map.count;
}

void fq_nodebind_close(struct fq_nodebind *b)
{
	if (!b)
		return;
	fq_strmap_clear(&b->map, free);
	free(b->path);
	free(b);
}
