/*
 * authq: munge credential checks off the controller's event loop.
 *
 * munge_decode(3) is a round trip to munged over a Unix socket and can block
 * (munged busy, or stuck): run on the event loop, one slow decode stalls
 * every agent. authq runs the decodes on one worker thread, with a queue
 * bounded at `depth` requests; a request beyond it is refused at once
 * (-EBUSY), so a flood of Auth frames costs queue slots, never memory or
 * loop time. Each result is delivered on the event loop's thread.
 */
#ifndef FQ_CONTROLLER_AUTHQ_H
#define FQ_CONTROLLER_AUTHQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/munge_cred.h"

struct event_base;
struct fq_authq;

/* A decode's outcome, on the loop's thread: rc and err as fq_munge_decode
 * (err "" when rc is 0), uid the credential's; reply: the credential
 * minted for the peer's nonce when one was asked and rc is 0 (NULL if it
 * could not be minted: err then says why), valid during the call. */
typedef void (*fq_authq_done_fn)(void *arg, int rc, uid_t uid, const char *err, const char *reply);

/* Starts the worker. munge_socket: NULL for munged's default (copied).
 * NULL on failure (errno set). */
struct fq_authq *fq_authq_create(struct event_base *base, const char *munge_socket, size_t depth);
/* Stops the worker (after the decode in progress) and frees; pending
 * requests are dropped without their callbacks. */
void fq_authq_destroy(struct fq_authq *q);

/* Queues a decode of cred (copied), checked against nonce and
 * expected_uid as fq_munge_decode does; when peer_nonce is not NULL and the
 * credential is good, also mints this process's credential with peer_nonce
 * as payload (munge_encode, also off the loop). Returns a ticket (> 0) for
 * fq_authq_cancel and done(arg, ...) runs later, or: -EBUSY (the queue is
 * full), -ENOMEM, -EMSGSIZE (cred longer than FQ_AUTHQ_CRED_MAX). */
#define FQ_AUTHQ_CRED_MAX 1024
int64_t fq_authq_submit(struct fq_authq *q, const char *cred, const uint8_t nonce[FQ_MUNGE_NONCE_SIZE],
			uid_t expected_uid, const uint8_t *peer_nonce, fq_authq_done_fn done, void *arg);
/* The request's done will not run (its arg is going away). */
void fq_authq_cancel(struct fq_authq *q, int64_t ticket);

/* Requests queued or being decoded. */
size_t fq_authq_pending(struct fq_authq *q);

#endif /* FQ_CONTROLLER_AUTHQ_H */
