/*
 * frame: length-prefixed protobuf frames, the agent <-> controller wire
 * format (and agent <-> NCCL plugin telemetry).
 *
 * A frame is a 4-byte big-endian payload length, then one serialized
 * fabriciq.Envelope (proto/fabriciq.proto). The length is checked against
 * the receiver's limit before any allocation, so a hostile peer cannot make
 * it allocate more than the limit. The decoder is pure (no I/O): feed it
 * bytes in any split, take complete envelopes out.
 */
#ifndef FQ_COMMON_FRAME_H
#define FQ_COMMON_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/fabriciq.pb-c.h"

#define FQ_PROTOCOL_VERSION  1
#define FQ_FRAME_HEADER_SIZE 4
#define FQ_FRAME_MAX_DEFAULT (4u << 20)

/* Serialize env into a new buffer (header included). Returns 0 and sets
 * *out (free() it) and *len; -EMSGSIZE if the payload exceeds max_payload;
 * -ENOMEM. */
int fq_frame_encode(const Fabriciq__Envelope *env, size_t max_payload, uint8_t **out, size_t *len);

/* Unpack one payload (without header). Returns 0 and *env (free with
 * fq_frame_free); -EBADMSG if it is not an Envelope; -EPROTONOSUPPORT if
 * its version is not FQ_PROTOCOL_VERSION. */
int fq_frame_unpack(const uint8_t *payload, size_t len, Fabriciq__Envelope **env);

void fq_frame_free(Fabriciq__Envelope *env);

struct fq_frame_decoder;

/* A decoder accepting payloads up to max_payload bytes (0: the default).
 * NULL on allocation failure. */
struct fq_frame_decoder *fq_frame_decoder_create(size_t max_payload);
void fq_frame_decoder_destroy(struct fq_frame_decoder *d);

/* Change the limit for every frame not yet returned, buffered ones included
 * (a controller session raises it once the peer has authenticated). */
void fq_frame_decoder_set_max(struct fq_frame_decoder *d, size_t max_payload);

/* Append received bytes (copied). Returns 0, -ENOMEM, or the decoder's
 * sticky error. Read in bounded chunks and drain with fq_frame_decoder_next
 * after each: the buffer then never exceeds max_payload + header + a chunk. */
int fq_frame_decoder_feed(struct fq_frame_decoder *d, const void *data, size_t len);

/* Take the next complete frame: 1 and *env (free with fq_frame_free), 0 if
 * more bytes are needed, or a negative errno: -EMSGSIZE (announced length
 * over the limit), -EBADMSG, -EPROTONOSUPPORT. -EMSGSIZE is sticky: the
 * stream has lost its framing and the connection must be closed. A bad
 * payload (-EBADMSG, -EPROTONOSUPPORT) is skipped, so the caller may count
 * it and go on. */
int fq_frame_decoder_next(struct fq_frame_decoder *d, Fabriciq__Envelope **env);

/* Bytes buffered but not yet returned as frames. */
size_t fq_frame_decoder_pending(const struct fq_frame_decoder *d);

/* Write one whole frame to a blocking fd (retries short writes and EINTR).
 * On a socket, a closed peer gives -EPIPE without raising SIGPIPE.
 * 0 or a negative errno (-EAGAIN on a nonblocking fd: use fq_frame_encode
 * and the event loop's own buffering there). */
int fq_frame_write_fd(int fd, const Fabriciq__Envelope *env, size_t max_payload);

#endif /* FQ_COMMON_FRAME_H */
