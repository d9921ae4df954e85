#include "common/munge_cred.h"

#include <errno.h>
#include <munge.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int fq_munge_nonce(uint8_t nonce[FQ_MUNGE_NONCE_SIZE])
{
	size_t off = 0;

	while (off < FQ_MUNGE_NONCE_SIZE) {
		ssize_t n = getrandom(nonce + off, FQ_MUNGE_NONCE_SIZE - off, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* A context with our socket (and TTL) in *out. 0, -ENOMEM or -EINVAL with
 * err filled. */
static int make_ctx(const char *socket, int ttl_s, munge_ctx_t *out, char *err, size_t errlen)
{
	munge_ctx_t ctx = munge_ctx_create();

	if (!ctx) {
		seterr(err, errlen, "munge: out of memory");
		return -ENOMEM;
	}
	if (socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
		seterr(err, errlen, "munge: cannot use socket %s: %s", socket, munge_ctx_strerror(ctx));
		goto fail_ctx;
	}
	if (ttl_s > 0 && munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl_s) != EMUNGE_SUCCESS) {
		seterr(err, errlen, "munge: bad ttl %d: %s", ttl_s, munge_ctx_strerror(ctx));
		goto fail_ctx;
	}
	*out = ctx;
	return 0;

fail_ctx:
	munge_ctx_destroy(ctx);
	return -EINVAL;
}

/* munge's own text for the last error on ctx, else the code's. */
static const char *munge_reason(munge_ctx_t ctx, munge_err_t e)
{
	const char *why = munge_ctx_strerror(ctx);

	return why ? why : munge_strerror(e);
}

static int map_error(munge_err_t e)
{
	switch (e) {
	case EMUNGE_SUCCESS:
		return 0;
	case EMUNGE_CRED_EXPIRED:
	case EMUNGE_CRED_REWOUND:
		return -EKEYEXPIRED;
	case EMUNGE_CRED_REPLAYED:
		return -EKEYREVOKED;
	case EMUNGE_CRED_INVALID:
	case EMUNGE_BAD_CRED:
	case EMUNGE_CRED_UNAUTHORIZED:
	case EMUNGE_BAD_CIPHER:
	case EMUNGE_BAD_MAC:
	case EMUNGE_BAD_ZIP:
	case EMUNGE_BAD_REALM:
	case EMUNGE_BAD_VERSION:
	case EMUNGE_BAD_LENGTH:
		return -EKEYREJECTED;
	case EMUNGE_SOCKET:
		return -ECONNREFUSED;
	case EMUNGE_NO_MEMORY:
		return -ENOMEM;
	default:
		return -EPROTO;
	}
}

int fq_munge_encode(const char *socket, const void *payload, size_t len, int ttl_s, char **cred, char *err,
		    size_t errlen)
{
	munge_ctx_t ctx;
	munge_err_t e;
	int rc;

	if (len > INT32_MAX) {
		seterr(err, errlen, "munge: payload of %zu bytes is too large", len);
		return -EMSGSIZE;
	}
	rc = make_ctx(socket, ttl_s, &ctx, err, errlen);
	if (rc < 0)
		return rc;
	e = munge_encode(cred, ctx, payload, (int)len);
	rc = map_error(e);
	if (rc < 0)
		seterr(err, errlen, "munge encode (socket %s): %s", socket ? socket : "default",
		       munge_reason(ctx, e));
	munge_ctx_destroy(ctx);
	return rc;
}

int fq_munge_decode(const char *socket, const char *cred, const void *expected, size_t expected_len,
		    uid_t expected_uid, uid_t *uid, gid_t *gid, char *err, size_t errlen)
{
	munge_ctx_t ctx;
	void *payload = NULL;
	int plen = 0, rc;
	uid_t u;
	gid_t g;
	munge_err_t e;

	rc = make_ctx(socket, 0, &ctx, err, errlen);
	if (rc < 0)
		return rc;
	/* munge fills payload (ours to free) even for an expired or
	 * replayed credential, so free it on every path. */
	e = munge_decode(cred, ctx, &payload, &plen, &u, &g);
	rc = map_error(e);
	if (rc < 0) {
		seterr(err, errlen, "munge decode: %s", munge_reason(ctx, e));
		goto out;
	}
	if (expected_uid != FQ_MUNGE_ANY_UID && u != expected_uid) {
		seterr(err, errlen, "munge credential from uid %u, expected uid %u", (unsigned)u,
		       (unsigned)expected_uid);
		rc = -EPERM;
		goto out;
	}
	if ((size_t)plen != expected_len || (expected_len && memcmp(payload, expected, expected_len) != 0)) {
		seterr(err, errlen, "munge credential is bound to another connection (payload mismatch)");
		rc = -EBADMSG;
		goto out;
	}
	if (uid)
		*uid = u;
	if (gid)
		*gid = g;
out:
	free(payload);
	munge_ctx_destroy(ctx);
	return rc;
}
