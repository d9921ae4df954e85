/* hello: the lane hello and the listeners' wait for it (see hello.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/chunk.h"
#include "nccl-plugin/env.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/plog.h"

void fqn_hello_encode(const struct fqn_hello *h, uint8_t out[FQN_HELLO_SIZE])
{
	memset(out, 0, FQN_HELLO_SIZE);
	fqn_put_le(out, FQN_HELLO_MAGIC, 4);
	fqn_put_le(out + 4, FQN_HELLO_VERSION, 2);
	fqn_put_le(out + 6, h->lane, 2);
	fqn_put_le(out + 8, h->nlanes, 2);
	fqn_put_le(out + 10, h->flags, 2);
	fqn_put_le(out + 12, h->chunk_size, 4);
	fqn_put_le(out + 16, h->token, 8);
	fqn_put_le(out + 24, h->conn_id, 8);
	fqn_put_le(out + 32, h->rank1, 4);
	fqn_put_le(out + 36, h->present, 2);
}

int fqn_hello_decode(const uint8_t in[FQN_HELLO_SIZE], struct fqn_hello *h)
{
	h->lane = (uint16_t)fqn_get_le(in + 6, 2);
	h->nlanes = (uint16_t)fqn_get_le(in + 8, 2);
	h->flags = (uint16_t)fqn_get_le(in + 10, 2);
	h->chunk_size = (uint32_t)fqn_get_le(in + 12, 4);
	h->token = fqn_get_le(in + 16, 8);
	h->conn_id = fqn_get_le(in + 24, 8);
	h->rank1 = (uint32_t)fqn_get_le(in + 32, 4);
	h->present = (uint16_t)fqn_get_le(in + 36, 2);
	if (fqn_get_le(in, 4) != FQN_HELLO_MAGIC || fqn_get_le(in + 4, 2) != FQN_HELLO_VERSION ||
	    fqn_get_le(in + 38, 2) != 0)
		return -EPROTO; /* the reserved u16 is 0 in this version */
	if (h->nlanes < 1 || h->nlanes > FQN_MAX_LANES || h->lane >= h->nlanes)
		return -EPROTO;
	if (!(h->present & (1u << h->lane)) || (h->present >> h->nlanes))
		return -EPROTO;
	if (h->flags & ~(FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN))
		return -EPROTO;
	if (h->chunk_size < 4096 || h->chunk_size > (64u << 20))
		return -EPROTO;
	return 0;
}

int fqn_hello_rejoin_check(const struct fqn_hello *h, const struct fqn_hello *conn, const char **why)
{
	const char *bad = NULL;

	if (h->conn_id != conn->conn_id || h->token != conn->token)
		bad = "another connection";
	else if (!(h->flags & FQN_HELLO_F_REJOIN) || !(h->flags & FQN_HELLO_F_CONTROL))
		bad = "not a control-mode rejoin";
	else if (h->nlanes != conn->nlanes || h->lane >= conn->nlanes)
		bad = "lane count differs from the connection's";
	else if (h->chunk_size != conn->chunk_size)
		bad = "chunk size differs from the connection's";
	*why = bad;
	return bad ? -EPROTO : 0;
}

void fqn_hello_wait_init(struct fqn_hello_wait *w, const char *who)
{
	memset(w, 0, sizeof(*w));
	snprintf(w->who, sizeof(w->who), "%s", who);
}

static void slot_drop(struct fqn_hello_wait *w, int k, int close_fd)
{
	if (close_fd)
		close(w->slot[k].fd);
	w->slot[k] = w->slot[--w->n];
}

/* Close the sockets accepted more than timeout_ns before now_ns. */
static void expire(struct fqn_hello_wait *w, int64_t now_ns, int64_t timeout_ns)
{
	uint64_t before = w->timed_out;

	for (int k = 0; k < w->n;)
		if (now_ns - w->slot[k].since_ns > timeout_ns) {
			slot_drop(w, k, 1);
			w->timed_out++;
		} else {
			k++;
		}
	if (w->timed_out != before)
		FQN_WARN("%s: closed %llu connection(s) that sent no hello within %lld ms", w->who,
			 (unsigned long long)(w->timed_out - before), (long long)(timeout_ns / 1000000));
}

int fqn_hello_wait_add(struct fqn_hello_wait *w, int fd, int tag, int64_t now_ns, int64_t timeout_ns)
{
	if (w->n == FQN_HELLO_SLOTS)
		expire(w, now_ns, timeout_ns);
	if (w->n == FQN_HELLO_SLOTS) {
		close(fd);
		if (w->refused++ == 0 || w->refused % 1000 == 0)
			FQN_WARN("%s: %d connections still owe their hello; refused one (%llu so far)",
				 w->who, FQN_HELLO_SLOTS, (unsigned long long)w->refused);
		return -ENOSPC;
	}
	w->slot[w->n++] = (struct fqn_hello_slot){.fd = fd, .tag = tag, .since_ns = now_ns};
	return 0;
}

int fqn_hello_wait_next(struct fqn_hello_wait *w, size_t want, int64_t now_ns, int64_t timeout_ns,
			struct fqn_hello_slot *out)
{
	expire(w, now_ns, timeout_ns);
	for (int k = 0; k < w->n;) {
		struct fqn_hello_slot *p = &w->slot[k];
		ssize_t n = recv(p->fd, p->buf + p->got, want - p->got, MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			slot_drop(w, k, 1); /* gone before its hello: a port scan or a dead peer */
			continue;
		}
		if (n > 0)
			p->got += (size_t)n;
		if (p->got < want) {
			k++;
			continue;
		}
		*out = *p;
		slot_drop(w, k, 0);
		return 1;
	}
	return 0;
}

void fqn_hello_wait_close(struct fqn_hello_wait *w)
{
	while (w->n)
		slot_drop(w, w->n - 1, 1);
}
