#include "common/frame.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct fq_frame_decoder {
	uint8_t *buf;
	size_t cap, start, end; /* unread bytes are buf[start, end) */
	size_t max_payload;
	int error; /* sticky */
};

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int fq_frame_encode(const Fabriciq__Envelope *env, size_t max_payload, uint8_t **out, size_t *len)
{
	size_t n = fabriciq__envelope__get_packed_size(env);
	uint8_t *buf;

	if (!max_payload)
		max_payload = FQ_FRAME_MAX_DEFAULT;
	if (n > max_payload || n > UINT32_MAX)
		return -EMSGSIZE;
	buf = malloc(FQ_FRAME_HEADER_SIZE + n);
	if (!buf)
		return -ENOMEM;
	put_be32(buf, (uint32_t)n);
	fabriciq__envelope__pack(env, buf + FQ_FRAME_HEADER_SIZE);
	*out = buf;
	*len = FQ_FRAME_HEADER_SIZE + n;
	return 0;
}

int fq_frame_unpack(const uint8_t *payload, size_t len, Fabriciq__Envelope **env)
{
	Fabriciq__Envelope *e = fabriciq__envelope__unpack(NULL, len, payload);

	if (!e)
		return -EBADMSG;
	if (e->version != FQ_PROTOCOL_VERSION) {
		fabriciq__envelope__free_unpacked(e, NULL);
		return -EPROTONOSUPPORT;
	}
	*env = e;
	return 0;
}

void fq_frame_free(Fabriciq__Envelope *env)
{
	if (env)
		fabriciq__envelope__free_unpacked(env, NULL);
}

struct fq_frame_decoder *fq_frame_decoder_create(size_t max_payload)
{
	struct fq_frame_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->max_payload = max_payload ? max_payload : FQ_FRAME_MAX_DEFAULT;
	return d;
}

void fq_frame_decoder_set_max(struct fq_frame_decoder *d, size_t max_payload)
{
	d->max_payload = max_payload ? max_payload : FQ_FRAME_MAX_DEFAULT;
}

void fq_frame_decoder_destroy(struct fq_frame_decoder *d)
{
	if (!d)
		return;
	free(d->buf);
	free(d);
}

size_t fq_frame_decoder_pending(const struct fq_frame_decoder *d)
{
	return d->end - d->start;
}

int fq_frame_decoder_feed(struct fq_frame_decoder *d, const void *data, size_t len)
{
	if (d->error)
		return d->error;
	if (len == 0)
		return 0;
	if (d->cap - d->end < len) {
		size_t used = d->end - d->start;
		/* Slide unread bytes to the front before growing. */
		if (d->start) {
			memmove(d->buf, d->buf + d->start, used);
			d->start = 0;
			d->end = used;
		}
		if (d->cap - d->end < len) {
			size_t want = d->cap ? d->cap : 4096;
			uint8_t *nb;
			while (want - used < len)
				want *= 2;
			nb = realloc(d->buf, want);
			if (!nb)
				return -ENOMEM;
			d->buf = nb;
			d->cap = want;
		}
	}
	memcpy(d->buf + d->end, data, len);
	d->end += len;
	return 0;
}

int fq_frame_decoder_next(struct fq_frame_decoder *d, Fabriciq__Envelope **env)
{
	size_t avail = d->end - d->start;
	uint32_t n;
	int rc;

	if (d->error)
		return d->error;
	if (avail < FQ_FRAME_HEADER_SIZE)
		return 0;
	n = get_be32(d->buf + d->start);
	if (n > d->max_payload) {
		d->error = -EMSGSIZE;
		return d->error;
	}
	if (avail - FQ_FRAME_HEADER_SIZE < n)
		return 0;
	rc = fq_frame_unpack(d->buf + d->start + FQ_FRAME_HEADER_SIZE, n, env);
	d->start += FQ_FRAME_HEADER_SIZE + n;
	if (d->start == d->end)
		d->start = d->end = 0;
	return rc < 0 ? rc : 1;
}

int fq_frame_write_fd(int fd, const Fabriciq__Envelope *env, size_t max_payload)
{
	uint8_t *buf;
	size_t len, off = 0;
	bool use_write = false;
	int rc = fq_frame_encode(env, max_payload, &buf, &len);

	if (rc < 0)
		return rc;
	while (off < len) {
		/* send(MSG_NOSIGNAL): a peer that closed its socket gives -EPIPE,
		 * not a SIGPIPE that kills the daemon; pipes and files fall back
		 * to write(). */
		ssize_t w = use_write ? write(fd, buf + off, len - off)
				      : send(fd, buf + off, len - off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOTSOCK && !use_write) {
				use_write = true;
				continue;
			}
			rc = -errno;
			break;
		}
		off += (size_t)w;
	}
	free(buf);
	return rc;
}
