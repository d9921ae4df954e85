/*
 * http_client: see common/http_client.h.
 */
#include "common/http_client.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

struct url {
	char host[256];
	char port[8];
	char prefix[512];
};

static int parse_url(const char *s, struct url *u)
{
	const char *p, *host_end, *path;
	size_t hl;

	if (strncasecmp(s, "http://", 7))
		return -EINVAL;
	p = s + 7;
	path = p + strcspn(p, "/?#");
	if (*p == '[') { /* [IPv6]:port */
		host_end = memchr(p, ']', (size_t)(path - p));
		if (!host_end)
			return -EINVAL;
		p++;
		hl = (size_t)(host_end - p);
		host_end++;
	} else {
		host_end = memchr(p, ':', (size_t)(path - p));
		if (!host_end)
			host_end = path;
		hl = (size_t)(host_end - p);
	}
	if (!hl || hl >= sizeof(u->host) || memchr(p, '@', hl))
		return -EINVAL;
	memcpy(u->host, p, hl);
	u->host[hl] = '\0';
	snprintf(u->port, sizeof(u->port), "80");
	if (*host_end == ':') {
		size_t pl = (size_t)(path - host_end - 1);
		long port;
		char *end;

		if (!pl || pl >= sizeof(u->port))
			return -EINVAL;
		memcpy(u->port, host_end + 1, pl);
		u->port[pl] = '\0';
		port = strtol(u->port, &end, 10);
		if (*end || port < 1 || port > 65535)
			return -EINVAL;
	} else if (host_end != path) {
		return -EINVAL;
	}
	if (*path == '?' || *path == '#' || strlen(path) >= sizeof(u->prefix))
		return -EINVAL;
	snprintf(u->prefix, sizeof(u->prefix), "%s", path);
	hl = strlen(u->prefix);
	while (hl && u->prefix[hl - 1] == '/')
		u->prefix[--hl] = '\0';
	for (const char *c = u->prefix; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return -EINVAL;
	return 0;
}

/* Waits for `events` on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};

	for (;;) {
		int64_t left = deadline - fq_clock_ns(CLOCK_MONOTONIC) / 1000000;
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(left > 1000000 ? 1000000 : left));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* A connected non-blocking socket to u, or -errno. */
static int dial(const struct url *u, int64_t deadline, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai, *a;
	int rc, fd = -1, last = -ECONNREFUSED;

	rc = getaddrinfo(u->host, u->port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "cannot resolve %s: %s", u->host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (a = ai; a; a = a->ai_next) {
		socklen_t sl = sizeof(rc);

		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			last = -errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		last = -errno;
		if (errno == EINPROGRESS) {
			last = wait_fd(fd, POLLOUT, deadline);
			if (!last && getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &sl) == 0)
				last = -rc;
			if (!last)
				break;
		}
		close(fd);
		fd = -1;
		if (last == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		snprintf(err, errlen, "cannot connect to %s port %s: %s", u->host, u->port, strerror(-last));
	return fd < 0 ? last : fd;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			int rc = wait_fd(fd, POLLOUT, deadline);

			if (rc)
				return rc;
		} else {
			return w < 0 ? -errno : -EPIPE;
		}
	}
	return 0;
}

/* Reads until EOF (the server closes: we sent Connection: close) or until
 * `want` bytes (0: unknown) are in; at most max bytes. */
static int recv_all(int fd, char **buf, size_t *len, size_t max, int64_t deadline)
{
	size_t cap = 0;

	for (;;) {
		ssize_t r;

		if (*len + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 16384;
			char *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			if (*len + 1 >= ncap)
				return -EFBIG;
			nb = realloc(*buf, ncap);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			cap = ncap;
		}
		r = recv(fd, *buf + *len, cap - *len - 1, 0);
		if (r > 0) {
			*len += (size_t)r;
		} else if (r == 0) {
			return 0;
		} else if (errno == EAGAIN || errno == EINTR) {
			int rc = wait_fd(fd, POLLIN, deadline);

			if (rc)
				return rc;
		} else {
			return -errno;
		}
	}
}

/* Decodes a chunked body in place; its length, or -EPROTO. */
static ssize_t dechunk(char *b, size_t n)
{
	size_t in = 0, out = 0;

	for (;;) {
		char *end;
		unsigned long long sz;
		char *eol = memmem(b + in, n - in, "\r\n", 2);

		if (!eol || !isxdigit((unsigned char)b[in]))
			return -EPROTO;
		errno = 0;
		sz = strtoull(b + in, &end, 16);
		if (errno || end > eol)
			return -EPROTO;
		in = (size_t)(eol - b) + 2; /* chunk extensions (";...") are skipped */
		if (sz == 0)
			return (ssize_t)out; /* trailers ignored */
		if (sz > n - in || n - in - sz < 2 || memcmp(b + in + sz, "\r\n", 2))
			return -EPROTO;
		memmove(b + out, b + in, sz);
		out += sz;
		in += sz + 2;
	}
}

/* The value of header `name` in the header block [h, end), or NULL. */
static const char *header(const char *h, const char *end, const char *name, size_t *vlen)
{
	size_t nl = strlen(name);

	while (h < end) {
		const char *eol = memmem(h, (size_t)(end - h), "\r\n", 2);

		if (!eol)
			eol = end;
		if ((size_t)(eol - h) > nl && h[nl] == ':' && !strncasecmp(h, name, nl)) {
			const char *v = h + nl + 1;

			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = (size_t)(eol - v);
			while (*vlen && (v[*vlen - 1] == ' ' || v[*vlen - 1] == '\t'))
				(*vlen)--;
			return v;
		}
		h = eol + 2;
	}
	return NULL;
}

/* Splits the raw response into status and body (moved to the front of raw). */
static int parse_response(char *raw, size_t n, struct fq_http_response *resp, char *err, size_t errlen)
{
	char *hend = memmem(raw, n, "\r\n\r\n", 4), *body;
	const char *v, *first;
	size_t vlen, blen;
	int status;

	if (!hend || n < 12 || strncmp(raw, "HTTP/1.", 7) || raw[8] != ' ' ||
	    !isdigit((unsigned char)raw[9]) || !isdigit((unsigned char)raw[10]) ||
	    !isdigit((unsigned char)raw[11])) {
		snprintf(err, errlen, "the answer is not an HTTP/1.x response");
		return -EPROTO;
	}
	status = (raw[9] - '0') * 100 + (raw[10] - '0') * 10 + (raw[11] - '0');
	first = memmem(raw, (size_t)(hend - raw) + 2, "\r\n", 2) + 2;
	body = hend + 4;
	blen = n - (size_t)(body - raw);
	v = header(first, hend + 2, "Transfer-Encoding", &vlen);
	if (v && vlen == 7 && !strncasecmp(v, "chunked", 7)) {
		ssize_t l = dechunk(body, blen);

		if (l < 0) {
			snprintf(err, errlen, "malformed or truncated chunked body");
			return -EPROTO;
		}
		blen = (size_t)l;
	} else if ((v = header(first, hend + 2, "Content-Length", &vlen))) {
		char num[24];
		unsigned long long cl;
		char *end;

		if (vlen == 0 || vlen >= sizeof(num)) {
			snprintf(err, errlen, "bad Content-Length");
			return -EPROTO;
		}
		memcpy(num, v, vlen);
		num[vlen] = '\0';
		cl = strtoull(num, &end, 10);
		if (*end || !isdigit((unsigned char)num[0]) || cl > blen) {
			snprintf(err, errlen, "response shorter than its Content-Length (%zu of %s bytes)",
				 blen, num);
			return -EPROTO;
		}
		blen = (size_t)cl;
	}
	memmove(raw, body, blen);
	raw[blen] = '\0';
	resp->status = status;
	resp->body = raw;
	resp->len = blen;
	return 0;
}

int fq_http_get(const char *base_url, const char *target, const char *authorization, int timeout_ms,
		size_t max_bytes, struct fq_http_response *resp, char *err, size_t errlen)
{
	int64_t deadline = fq_clock_ns(CLOCK_MONOTONIC) / 1000000 + timeout_ms;
	char *req = NULL, *raw = NULL;
	size_t len = 0;
	struct url u;
	int fd, rc, n;

	memset(resp, 0, sizeof(*resp));
	if (parse_url(base_url, &u)) {
		snprintf(err, errlen, "bad controller URL '%s' (want http://HOST[:PORT][/PREFIX])", base_url);
		return -EINVAL;
	}
	if (target[0] != '/' || strpbrk(target, " \r\n\t")) {
		snprintf(err, errlen, "bad request target");
		return -EINVAL;
	}
	if (authorization && strpbrk(authorization, "\r\n")) {
		snprintf(err, errlen, "bad Authorization value");
		return -EINVAL;
	}
	n = asprintf(&req,
		     "GET %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\nAccept: application/json\r\n"
		     "User-Agent: fabriciq/" PACKAGE_VERSION "\r\n%s%s%sConnection: close\r\n\r\n",
		     u.prefix, target, strchr(u.host, ':') ? "[" : "", u.host, strchr(u.host, ':') ? "]" : "",
		     u.port, authorization ? "Authorization: " : "", authorization ? authorization : "",
		     authorization ? "\r\n" : "");
	if (n < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fd = dial(&u, deadline, err, errlen);
	if (fd < 0) {
		rc = fd;
		goto free_req;
	}
	rc = send_all(fd, req, (size_t)n, deadline);
	if (!rc)
		rc = recv_all(fd, &raw, &len, max_bytes, deadline);
	if (rc) {
		snprintf(err, errlen, "%s %s:%s: %s", rc == -EFBIG ? "response too large from" : "talking to",
			 u.host, u.port, rc == -EFBIG ? "over the size limit" : strerror(-rc));
		goto close_fd;
	}
	rc = parse_response(raw, len, resp, err, errlen);
	if (!rc)
		raw = NULL; /* now resp->body */
close_fd:
	close(fd);
	free(raw);
free_req:
	free(req);
	return rc;
}
