/*
 * path_page: the node agent's view of every probed path, published in a
 * shared file that job processes map read-only (beside the clock page).
 *
 * The NCCL plugin looks up the path of a lane (local NIC, remote address)
 * and stops using a lane whose path the probe mesh has seen DOWN, usually
 * well before the lane's own socket or QP would time out.
 *
 * The page also carries the controller's rates (issue 20, QoS between
 * jobs): a job's lanes over a path that shares a congested link with a
 * higher network class's send at most a rate (struct fq_path_rate), which
 * the job's plugin applies as the lanes' pacing rate.
 *
 * Layout (native-endian, one file of FQ_PATH_PAGE_SIZE bytes):
 *   off  0  u32 magic       FQ_PATH_PAGE_MAGIC ("FQPH")
 *   off  4  u32 version     FQ_PATH_PAGE_VERSION (3)
 *   off  8  u64 seq         seqlock, as the clock page's
 *   off 16  u32 count       entries in use (<= FQ_PATH_PAGE_MAX)
 *   off 20  u32 flags       reserved, 0
 *   off 24  i64 updated_ns  local CLOCK_MONOTONIC_RAW of the last publication
 *   off 32  u64 updates
 *   off 40  u32 nrates      rates in use (<= FQ_PATH_PAGE_RATES)
 *   off 64  entries[FQ_PATH_PAGE_MAX], 128 bytes each (struct fq_path_entry)
 *   then    rates[FQ_PATH_PAGE_RATES], 48 bytes each (struct fq_path_rate)
 * Version 3 added the rates (2: none); a reader of another version gets
 * -EPROTO, as does a page of the wrong size.
 */
#ifndef FQ_COMMON_PATH_PAGE_H
#define FQ_COMMON_PATH_PAGE_H

#include <stddef.h>
#include <stdint.h>

#define FQ_PATH_PAGE_MAGIC   0x48505146u /* "FQPH" */
#define FQ_PATH_PAGE_VERSION 3u
#define FQ_PATH_PAGE_MAX     1024
#define FQ_PATH_PAGE_RATES   512
#define FQ_PATH_PAGE_SIZE    (64 + FQ_PATH_PAGE_MAX * 128 + FQ_PATH_PAGE_RATES * 48)

/* Advice from the controller about a path (issue: steering). The controller
 * sees the lane delays of every job; when two jobs collide (on a NIC, or on
 * a switch link their lanes' traced routes share) it picks one of them and
 * tells the agents on that job's nodes, which put it here. A job process
 * whose lane runs over this path, whose job id matches advice_job and, if
 * advice_port is not 0, whose local port is advice_port should move that
 * lane's traffic elsewhere: re-open it on a new source port (a new ECMP
 * hash). The advice
 * holds until advice_until_ns (local CLOCK_MONOTONIC_RAW); a new advice
 * gets a new advice_gen, so a reader acts once per generation. */
enum fq_path_advice {
	FQ_PATH_ADVICE_NONE = 0,
	FQ_PATH_ADVICE_MOVE = 1, /* congested by another job: move off this path's hash */
};

enum fq_path_state {
	FQ_PATH_STATE_UNKNOWN = 0,
	FQ_PATH_STATE_UP = 1,
	FQ_PATH_STATE_DOWN = 2,
};

struct fq_path_entry {
	char local_nic[16];      /* NUL-terminated */
	char remote_node[40];    /* NUL-terminated */
	char remote_nic[16];     /* NUL-terminated */
	uint32_t remote_ipv4;    /* network byte order */
	uint32_t state;          /* enum fq_path_state */
	int64_t changed_ns;      /* local raw clock of the last transition */
	int64_t owd_p50_ns;      /* forward one-way delay, last window; 0: unknown */
	int64_t rtt_p50_ns;      /* last window; 0: unknown */
	uint32_t advice;         /* enum fq_path_advice */
	uint32_t advice_job;     /* the job the advice is for (0: every job) */
	int64_t advice_until_ns; /* local raw clock; the advice lapses after it */
	uint32_t advice_gen;     /* bumped for each new advice */
	uint32_t advice_port;    /* the lane to move, by its local source port (0: any lane of the path) */
};

_Static_assert(sizeof(struct fq_path_entry) == 128, "path page entry is 128 bytes");

/* A rate from the controller (proto Advice kind "rate"): every lane of
 * job from local_nic to remote_ipv4 sends at most rate bytes/s until
 * until_ns (local CLOCK_MONOTONIC_RAW), when it lapses unless renewed. A
 * new or changed rate gets a new gen. */
struct fq_path_rate {
	char local_nic[16];   /* NUL-terminated */
	uint32_t remote_ipv4; /* network byte order */
	uint32_t job;
	uint64_t rate; /* bytes/s per lane, > 0 */
	int64_t until_ns;
	uint32_t gen;
	uint32_t pad; /* 0 */
};

_Static_assert(sizeof(struct fq_path_rate) == 48, "path page rate is 48 bytes");

struct fq_path_page_writer;
struct fq_path_page_reader;

/* Create (or truncate) the page at path, mode 0644. 0 or a negative errno. */
int fq_path_page_writer_open(const char *path, struct fq_path_page_writer **out);
/* Publish n entries and nrates rates (clipped to FQ_PATH_PAGE_MAX and
 * FQ_PATH_PAGE_RATES). */
void fq_path_page_publish(struct fq_path_page_writer *w, const struct fq_path_entry *e, size_t n,
			  const struct fq_path_rate *rates, size_t nrates, int64_t now_ns);
void fq_path_page_writer_close(struct fq_path_page_writer *w);

/* Map an existing page read-only: 0, -ENOENT (no agent), -EPROTO (wrong
 * size, magic or version), or another negative errno. */
int fq_path_page_reader_open(const char *path, struct fq_path_page_reader **out);
/* The state of the path from local_nic (NULL: any) to remote_ipv4 (network
 * order): 0 and *e filled, -ENOENT (not probed), -EAGAIN (writer busy for
 * every bounded try), -EPROTO. */
int fq_path_page_lookup(struct fq_path_page_reader *r, const char *local_nic, uint32_t remote_ipv4,
			struct fq_path_entry *e);
/* The rate for job's lanes from local_nic to remote_ipv4 (network order)
 * in force at now_ns (local CLOCK_MONOTONIC_RAW): 0 and *out filled,
 * -ENOENT (none, or lapsed), -EAGAIN, -EPROTO as lookup's. */
int fq_path_page_rate(struct fq_path_page_reader *r, const char *local_nic, uint32_t remote_ipv4,
		      uint32_t job, int64_t now_ns, struct fq_path_rate *out);
/* How many of this node's paths to remote_node are UP (>= 0), or a
 * negative errno as lookup's. */
int fq_path_page_node_up(struct fq_path_page_reader *r, const char *remote_node);
/* The writer's last publication time (updated_ns, local
 * CLOCK_MONOTONIC_RAW; 0: never published), so a reader can refuse a page
 * whose agent has stopped. */
int64_t fq_path_page_updated_ns(struct fq_path_page_reader *r);
void fq_path_page_reader_close(struct fq_path_page_reader *r);

#endif /* FQ_COMMON_PATH_PAGE_H */
