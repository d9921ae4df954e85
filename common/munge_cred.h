/*
 * munge_cred: munge credentials bound to a connection.
 *
 * The agent authenticates to the controller by sending a credential whose
 * payload is the connection's nonce (chosen by the controller and sent
 * first). The controller accepts it only if munge decodes it, it is not
 * expired or replayed (munged keeps a replay cache), its uid is the one
 * agents run as, and its payload is this connection's nonce: a credential
 * captured on another connection is useless here.
 */
#ifndef FQ_COMMON_MUNGE_CRED_H
#define FQ_COMMON_MUNGE_CRED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FQ_MUNGE_NONCE_SIZE 16
#define FQ_MUNGE_ANY_UID    ((uid_t)-1)
/* An HTTP request authenticated by munge carries "Authorization: MUNGE
 * CRED" (the controller's API: controller/api.h). */
#define FQ_MUNGE_AUTH_SCHEME "MUNGE "

/* Fill a nonce from getrandom(2). 0 or a negative errno. */
int fq_munge_nonce(uint8_t nonce[FQ_MUNGE_NONCE_SIZE]);

/* Mint a credential carrying payload, valid ttl_s seconds (0: munged's
 * default). socket: munged's socket (NULL: the system default). Returns 0
 * and *cred (free() it), or with err filled (when not NULL):
 *   -ECONNREFUSED  munged unreachable,  -EMSGSIZE  payload too large,
 *   -EINVAL        bad socket path or ttl,  -ENOMEM,  -EPROTO  other. */
int fq_munge_encode(const char *socket, const void *payload, size_t len, int ttl_s, char **cred, char *err,
		    size_t errlen);

/* Decode cred and check it. Returns 0 with *uid and *gid set (either may be
 * NULL), or:
 *   -EKEYEXPIRED   expired (or issued in the future),
 *   -EKEYREVOKED   replayed (decoded before),
 *   -EKEYREJECTED  forged, corrupt or from another key,
 *   -EPERM         minted by a uid other than expected_uid (FQ_MUNGE_ANY_UID: any),
 *   -EBADMSG       payload differs from expected (another connection's),
 *   -ECONNREFUSED  munged unreachable,
 *   -EPROTO        any other munge error,
 *   -EINVAL/-ENOMEM as for fq_munge_encode.
 * err (when not NULL) names the reason in words. Thread-safe: each call
 * uses its own munge context. */
int fq_munge_decode(const char *socket, const char *cred, const void *expected, size_t expected_len,
		    uid_t expected_uid, uid_t *uid, gid_t *gid, char *err, size_t errlen);

#endif /* FQ_COMMON_MUNGE_CRED_H */
