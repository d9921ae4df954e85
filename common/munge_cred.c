#include "common/munge_cred.h"

#include <errno.h>
#include <munge.h>
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

/* A context with our socket (and TTL), or NULL with err filled. */
static munge_ctx_t make_ctx(const char *socket, int ttl_s, char *err, size_t errlen)
{
	munge_ctx_t ctx = munge_ctx_create();

	if (!ctx) {
		snprintf(err, errlen, "munge: out of memory");
		return NULL;
	}
	if (socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge: cannot use socket %s: %s", socket, munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	if (ttl_s > 0 && munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl_s) != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge: bad ttl %d: %s", ttl_s, munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
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
	munge_ctx_t ctx = make_ctx(socket, ttl_s, err, errlen);
	munge_err_t e;
	int rc;

	if (!ctx)
		return -EINVAL;
	if (len > INT32_MAX) {
		munge_ctx_destroy(ctx);
		snprintf(err, errlen, "munge: payload too large");
		return -EMSGSIZE;
	}
	e = munge_encode(cred, ctx, payload, (int)len);
	rc = map_error(e);
	if (rc < 0)
		snprintf(err, errlen, "munge encode: %s",
			 munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : munge_strerror(e));
	munge_ctx_destroy(ctx);
	return rc;
}

int fq_munge_decode(const char *socket, const char *cred, const void *expected, size_t expected_len,
		    uid_t expected_uid, uid_t *uid, gid_t *gid, char *err, size_t errlen)
{
	munge_ctx_t ctx = make_ctx(socket, 0, err, errlen);
	void *payload = NULL;
	int plen = 0, rc;
	uid_t u;
	gid_t g;
	munge_err_t e;

	if (!ctx)
		return -EINVAL;
	e = munge_decode(cred, ctx, &payload, &plen, &u, &g);
	rc = map_error(e);
	if (rc < 0) {
		snprintf(err, errlen, "munge decode: %s",
			 munge_ctx_strerror(ctx) ? munge_ctx_strerror(ctx) : munge_strerror(e));
		goto out;
	}
	if (expected_uid != FQ_MUNGE_ANY_UID && u != expected_uid) {
		snprintf(err, errlen, "munge credential from uid %u, expected uid %u", (unsigned)u,
			 (unsigned)expected_uid);
		rc = -EPERM;
		goto out;
	}
	if ((size_t)plen != expected_len || (expected_len && memcmp(payload, expected, expected_len) != 0)) {
		snprintf(err, errlen, "munge credential is bound to another connection (payload mismatch)");
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
