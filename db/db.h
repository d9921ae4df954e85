/*
 * db: fabriciq's PostgreSQL storage (libpq): schema migrations, batched
 * COPY writers for the telemetry tables, upserts for topology and Slurm
 * jobs, and the queries the CLI needs. The schema is the files in sql/ (the
 * contract with users), compiled into the library as migrations.
 *
 * A `struct fq_db` is one connection and its write buffers. It is not
 * thread-safe: use one per thread (the library keeps no global state, so
 * several are independent). Every function returns 0 (or a count) on
 * success and a negative errno on failure; fq_db_error() then says what
 * failed, with PostgreSQL's message.
 *
 * Rows are plain structs. Times are int64 ns since the Unix epoch (as on
 * the wire) and are stored as timestamptz (microseconds); delays are ns.
 * Strings are borrowed for the duration of the call, must be valid UTF-8
 * (-EILSEQ otherwise, so one bad row cannot poison a batch) and are stored
 * verbatim; a NULL optional string is stored as SQL NULL.
 */
#ifndef FQ_DB_DB_H
#define FQ_DB_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fq_db;

/* The newest schema version this code knows (the last sql/NNN_*.sql). */
int fq_db_code_version(void);

/* Connects with a libpq conninfo string or URI ("" or NULL: the PG*
 * environment variables and libpq's defaults). Returns 0 and *out, or a
 * negative errno (-ECONNREFUSED: could not connect; -ENOMEM); on failure
 * *out is NULL and, if err is not NULL, err[errlen] holds the reason. */
int fq_db_create(const char *conninfo, struct fq_db **out, char *err, size_t errlen);
/* fq_db_create with limits, for a daemon that must not wait on a slow or
 * unreachable server: connect_timeout_s bounds each connection attempt
 * (0: the conninfo's setting, else libpq's: none; a connect_timeout in
 * the conninfo wins over this one) and statement_timeout_ms each statement
 * (0: the server's; a statement cancelled by it fails with -ETIMEDOUT).
 * Both also hold for the reconnections the library makes by itself. */
struct fq_db_options {
	const char *conninfo;
	int connect_timeout_s;
	int statement_timeout_ms;
};
int fq_db_connect(const struct fq_db_options *o, struct fq_db **out, char *err, size_t errlen);
/* Changes the statement timeout (ms, 0: none) of this and later sessions. */
int fq_db_set_statement_timeout(struct fq_db *db, int ms);

/* True once the connection is lost (the next statement would reconnect,
 * blocking, where a caller may rather open a new one elsewhere). */
bool fq_db_broken(const struct fq_db *db);

/* Closes the connection; buffered rows not flushed are dropped. NULL is fine. */
void fq_db_destroy(struct fq_db *db);

/* The last error, in words (never NULL; "" if none). Valid until the next call. */
const char *fq_db_error(const struct fq_db *db);

/* ---- schema ---------------------------------------------------------- */

/* The schema version stored in the database (0: none). */
int fq_db_schema_version(struct fq_db *db, int *version);

/*
 * Brings the schema up to fq_db_code_version(): each missing migration in
 * its own transaction, under an advisory lock so concurrent migrators wait
 * for each other; then creates the upcoming partitions. Idempotent.
 * *applied (may be NULL) gets the number of migrations applied.
 * -EPROTONOSUPPORT: the database's schema is newer than this code (the
 * error names both versions); nothing is changed.
 */
int fq_db_migrate(struct fq_db *db, int *applied);

/* fabriciq.maintain_partitions(): creates the next days' partitions and
 * drops those past retention; counts in *created / *dropped (may be NULL). */
int fq_db_maintain(struct fq_db *db, int *created, int *dropped);

struct fq_db_partition {
	char table[64];
	char name[64];
	int64_t start_ns, end_ns; /* both 0 for the default partition */
	int64_t estimated_rows;   /* -1: never analysed */
};

/* Every partition of the time-series tables, by table then start. On
 * success *parts (free() it) holds *n entries. */
int fq_db_partitions(struct fq_db *db, struct fq_db_partition **parts, size_t *n);

/* ---- batched COPY writers -------------------------------------------- */

/*
 * The *_add functions append rows to a per-table buffer (no I/O); one
 * fq_db_flush() writes every buffer with COPY FROM STDIN in a single
 * transaction. If the flush fails, nothing of it is committed and the rows
 * stay buffered, so the caller may retry or spool them; fq_db_discard()
 * drops them. A row is checked when added: -EINVAL (missing required
 * string) or -EILSEQ (not UTF-8), and nothing of that call is buffered.
 */

enum fq_db_timestamp_kind {
	FQ_DB_TS_UNKNOWN = 0,
	FQ_DB_TS_SOFTWARE = 1,
	FQ_DB_TS_HARDWARE = 2,
	FQ_DB_TS_USER = 3,
};

/* One probe window of one path, as in proto ProbeReport. */
struct fq_db_probe_window {
	int64_t window_start_ns, window_end_ns;
	const char *src_node, *src_nic, *dst_node, *dst_nic;
	uint32_t sent, answered, lost;
	/* Delays in ns; 0 = no sample (stored as NULL). */
	int64_t owd_fwd_min_ns, owd_fwd_p50_ns, owd_fwd_p99_ns, owd_fwd_max_ns;
	int64_t owd_rev_min_ns, owd_rev_p50_ns, owd_rev_p99_ns, owd_rev_max_ns;
	int64_t owd_fwd_p90_ns, owd_rev_p90_ns; /* 0: not sent (NULL) */
	int64_t rtt_p50_ns;
	enum fq_db_timestamp_kind timestamp_kind;
	bool path_up;
	uint64_t agent_seq; /* the agent's frame sequence number */
};

/* One lane interval from the NCCL plugin, as in proto LaneReport. */
struct fq_db_lane_window {
	int64_t interval_start_ns, interval_end_ns;
	uint64_t job_id;
	uint32_t step_id, src_rank, dst_rank, lane;
	const char *lane_kind; /* "tcp", "ib" */
	const char *src_node, *src_nic, *dst_node, *dst_nic;
	uint64_t bytes, chunks, messages;
	int64_t owd_min_ns, owd_p50_ns, owd_p99_ns, owd_max_ns; /* 0 = no sample (NULL) */
	uint32_t tcp_rtt_us, tcp_retrans, tcp_ce;
	bool synchronised;
	uint64_t pacing_rate;   /* bytes/s, 0: none (NULL) */
	int64_t throttled_ns;   /* time capped in the interval; 0: never (NULL) */
	uint64_t assigned_rate; /* the controller's rate at the interval's end, bytes/s; 0: none (NULL) */
	int64_t assigned_ns;    /* time in the interval it had one; 0: never (NULL) */
};

/* One pairwise estimate of a ClockReport; every estimate of one report
 * must carry the same reported_ns (clock_status groups by it). */
struct fq_db_clock_estimate {
	int64_t reported_ns; /* controller receive time */
	const char *node, *peer_node;
	int64_t offset_ns;
	double drift_ppb;
	int64_t error_bound_ns;
	uint32_t samples;
	int64_t window_start_local_ns, window_end_local_ns; /* agent CLOCK_MONOTONIC_RAW */
	int64_t applied_offset_ns, applied_error_ns;
	uint64_t correction_epoch;
};

enum fq_db_link_state {
	FQ_DB_LINK_UNKNOWN = 0,
	FQ_DB_LINK_UP = 1,
	FQ_DB_LINK_DOWN = 2,
};

struct fq_db_link_event {
	int64_t time_ns, detected_ns;
	const char *node, *nic;
	const char *remote_node, *remote_nic; /* NULL for a NIC-level event */
	enum fq_db_link_state state;
	const char *detector; /* "probe", "carrier", "plugin" */
	bool nic_level;
};

struct fq_db_failover_event {
	int64_t time_ns;
	uint64_t job_id;
	uint32_t step_id, src_rank, dst_rank, from_lane, to_lane;
	const char *node, *local_nic, *remote_nic;
	const char *cause; /* "socket-error", "no-progress", "path-down", "failback" */
	int64_t detect_ns;
	uint64_t bytes_resent;
	int64_t duration_ns;
	bool failback;
	uint64_t conn_id; /* the connection both ends know */
	bool is_send;     /* reported by the sending end (else the receiving one) */
};

int fq_db_add_probe_windows(struct fq_db *db, const struct fq_db_probe_window *rows, size_t n);
int fq_db_add_lane_windows(struct fq_db *db, const struct fq_db_lane_window *rows, size_t n);
int fq_db_add_clock_estimates(struct fq_db *db, const struct fq_db_clock_estimate *rows, size_t n);
int fq_db_add_link_events(struct fq_db *db, const struct fq_db_link_event *rows, size_t n);
int fq_db_add_failover_events(struct fq_db *db, const struct fq_db_failover_event *rows, size_t n);

/* One window of the NCCL profiler plugin (proto ProfilerWindow), tagged
 * with its report's step, rank and interval (sql/015_profiler.sql). */
struct fq_db_profiler_window {
	int64_t interval_start_ns, interval_end_ns;
	uint64_t job_id;
	uint32_t step_id, rank;
	const char *node, *kind;
	uint64_t comm_hash;
	int32_t device, sub;
	int64_t id;
	uint64_t count, bytes;
	int64_t mean_ns, max_ns;
	bool synchronised;
};
/* One finished collective or p2p of the profiler (proto ProfilerOp). */
struct fq_db_profiler_op {
	int64_t start_ns, end_ns;
	uint64_t job_id;
	uint32_t step_id, rank, nranks;
	const char *node, *func, *algo, *proto;
	uint64_t comm_hash, seq, bytes;
	bool p2p;
	int32_t peer;
	double algbw_gbs;
	bool synchronised;
};
/* Buffer profiler rows (db/copy_prof.c). 0, -EINVAL (a required string
 * missing, a count or bytes beyond int8, a bandwidth not finite or
 * negative), -EILSEQ (not UTF-8), -ENOMEM; nothing of the call kept on
 * error. */
int fq_db_add_profiler_windows(struct fq_db *db, const struct fq_db_profiler_window *rows, size_t n);
int fq_db_add_profiler_ops(struct fq_db *db, const struct fq_db_profiler_op *rows, size_t n);

/* Rows and bytes buffered, over all tables (to decide when to flush). */
size_t fq_db_pending_rows(const struct fq_db *db);
size_t fq_db_pending_bytes(const struct fq_db *db);

/*
 * Agent frame sequence numbers (fabriciq.agent_seq, sql/004_controller.sql).
 * fq_db_add_agent_seq buffers "node's last stored seq is seq" (no I/O);
 * the next fq_db_flush writes it inside the transaction of its COPY rows
 * (even if there are none), so a batch and the seq that says it is stored
 * are committed together or not at all: a crash between the two cannot
 * make a replay of the batch look new. The last value added for a node
 * wins; it replaces the stored one (it may be lower: the agent restarted
 * its count). -EINVAL / -EILSEQ for a missing or non-UTF-8 node name.
 */
int fq_db_add_agent_seq(struct fq_db *db, const char *node, uint64_t seq);
/* Seqs buffered for the next flush. */
size_t fq_db_pending_seqs(const struct fq_db *db);

struct fq_db_agent_seq {
	char *node;
	uint64_t last_seq;
};
/* Every stored seq; on success *rows (fq_db_agent_seqs_free) holds *n. */
int fq_db_agent_seqs(struct fq_db *db, struct fq_db_agent_seq **rows, size_t *n);
void fq_db_agent_seqs_free(struct fq_db_agent_seq *rows, size_t n);

/*
 * The job report's rank NICs: "rank `rank` of job_id.step_id, on `node`,
 * sent or received a lane through its NIC `nic`" (a lane window's src or
 * dst side), buffered (no I/O) and merged by the next fq_db_flush, in its
 * transaction, into fabriciq.ranks.nic: the distinct NICs the rank's lanes
 * used on its node, sorted and comma-separated ("rail0" or "rail0,rail1").
 * A rank not stored yet is left alone: fq_db_upsert_rank fills a missing
 * nic from the lane windows stored before it. Adding the same pair again
 * is harmless (the caller may remember which it added to spare the
 * statement). -EINVAL / -EILSEQ for a missing or non-UTF-8 string.
 */
int fq_db_add_rank_nic(struct fq_db *db, uint64_t job_id, uint32_t step_id, uint32_t rank, const char *node,
		       const char *nic);

/* Writes every buffered row, seq and rank NIC (see above) in one
 * transaction; returns the number of rows written. */
int64_t fq_db_flush(struct fq_db *db);
void fq_db_discard(struct fq_db *db);

/* ---- topology and jobs (upserts, each its own statement) -------------- */

struct fq_db_node {
	const char *name;
	const char *agent_version, *boot_id; /* optional */
	int64_t seen_ns;
};

enum fq_db_nic_kind {
	FQ_DB_NIC_UNKNOWN = 0,
	FQ_DB_NIC_ETHERNET = 1,
	FQ_DB_NIC_ROCE = 2,
	FQ_DB_NIC_INFINIBAND = 3,
};

struct fq_db_nic {
	const char *node, *name;
	const char *address, *guid; /* optional */
	uint32_t rail;
	uint64_t speed_mbps;
	enum fq_db_nic_kind kind;
	bool front_end;
	int64_t seen_ns;
};

/* A probed path; state_since_ns is kept while the state does not change. */
struct fq_db_link {
	const char *src_node, *src_nic, *dst_node, *dst_nic;
	enum fq_db_link_state state;
	int64_t state_since_ns, seen_ns;
};

struct fq_db_step {
	uint64_t job_id;
	uint32_t step_id;
	uint32_t uid;
	const char *mode;      /* "monitor" or "control"; NULL: "monitor" for a new step, else unchanged */
	const char *net_class; /* the step's network class; NULL or "": unchanged (none for a new step) */
	uint32_t node_count, task_count;
	int64_t start_ns;
	int64_t end_ns; /* 0: running */
	bool has_exit_status;
	int32_t exit_status;
};

struct fq_db_rank {
	uint64_t job_id;
	uint32_t step_id, rank, local_rank;
	const char *node;
	const char *nic; /* optional; NULL: from the lane windows stored (fq_db_add_rank_nic) */
	int32_t pid;
};

int fq_db_upsert_node(struct fq_db *db, const struct fq_db_node *node);
/* The NIC's node must exist (fq_db_upsert_node first): -ENOENT otherwise. */
int fq_db_upsert_nic(struct fq_db *db, const struct fq_db_nic *nic);
int fq_db_upsert_link(struct fq_db *db, const struct fq_db_link *link);
/* Upserts the job (first/last seen, uid) and the step. A later call with
 * end_ns set records the end; start_time keeps its first value. */
int fq_db_upsert_step(struct fq_db *db, const struct fq_db_step *step);
/* Records that node has ended the step (its agent's StepEnd) at end_ns:
 * 1, or 0 when it already had (a replay changes nothing); the step must
 * exist (-ENOENT otherwise). */
int fq_db_step_node_end(struct fq_db *db, uint64_t job_id, uint32_t step_id, const char *node,
			int64_t end_ns);
/* The rank's step must exist: -ENOENT otherwise. */
int fq_db_upsert_rank(struct fq_db *db, const struct fq_db_rank *rank);

/* One path's route, of one of its probe flows (fabriciq.path_routes,
 * sql/010_path_routes.sql, 016_path_flows.sql). */
#define FQ_DB_ROUTE_MAX_HOPS 32
#define FQ_DB_ROUTE_MAX_FLOW 63
struct fq_db_route {
	const char *node, *nic, *remote_node, *remote_nic;
	unsigned flow;           /* <= FQ_DB_ROUTE_MAX_FLOW; 0: the path's first */
	const char *const *hops; /* dotted IPv4, or "" / NULL where no router answered */
	size_t n_hops;           /* <= FQ_DB_ROUTE_MAX_HOPS */
	bool reached;
	int64_t time_ns;
};

/* A new row when the route differs from the path's flow's latest, else
 * the latest row's last_seen moves to time_ns. -EINVAL (with the error
 * set) for a hop that is not an IPv4 address, too many hops or a flow past
 * FQ_DB_ROUTE_MAX_FLOW. */
int fq_db_put_route(struct fq_db *db, const struct fq_db_route *r);

/* ---- anomalies and hints ---------------------------------------------- */

enum fq_db_severity {
	FQ_DB_SEV_INFO = 0,
	FQ_DB_SEV_WARNING = 1,
	FQ_DB_SEV_CRITICAL = 2,
};

struct fq_db_anomaly {
	const char *kind; /* link_down, flapping, path_delay, lane_outlier, inband_mismatch,
			     slow_sender, slow_receiver, ... (sql/: the check constraint), peer_slow */
	enum fq_db_severity severity;
	int64_t start_ns, end_ns;                          /* end 0: still open */
	const char *node, *nic, *remote_node, *remote_nic; /* optional */
	const char *summary;
	const char *evidence_json; /* a JSON object; NULL: {} */
	int64_t incident_id;       /* the incident (an anomaly) it is a member of; 0: none */
	const char *component;     /* a fabric anomaly's blamed component ("spine3"); NULL: none */
};

/* One job step an anomaly hit, and the ranks of it it touched. */
struct fq_db_anomaly_job {
	uint64_t job_id;
	uint32_t step_id;
	const uint32_t *ranks;
	size_t nranks;
};

/* Inserts the anomaly and its job attachments in one transaction; *id gets
 * its id. -EINVAL: unknown kind or bad JSON (said in fq_db_error). */
int fq_db_insert_anomaly(struct fq_db *db, const struct fq_db_anomaly *a,
			 const struct fq_db_anomaly_job *jobs, size_t njobs, int64_t *id);
/* Attaches more job steps to an existing anomaly (ranks are merged); a
 * member of an incident (incident_id) attaches them to its incident. */
int fq_db_attach_anomaly(struct fq_db *db, int64_t id, const struct fq_db_anomaly_job *jobs, size_t njobs);
/* Anomaly id becomes a member of incident (another anomaly): its jobs are
 * the incident's too (copied now; later ones are attached to both). */
int fq_db_set_incident(struct fq_db *db, int64_t id, int64_t incident);
/* A link episode's DOWNs so far (events), its last DOWN and summary, and
 * the component blamed (NULL or "": unchanged); -ENOENT if no such open
 * anomaly. */
int fq_db_update_anomaly(struct fq_db *db, int64_t id, unsigned events, int64_t last_ns, const char *summary,
			 const char *component);
/* Sets the end time of an open anomaly; -ENOENT if no such open anomaly. */
int fq_db_close_anomaly(struct fq_db *db, int64_t id, int64_t end_ns);

/* A hint: a node's drain or resume, or a fabric hint (component set: the
 * action 'check', no node; schema 14). */
struct fq_db_drain_hint {
	const char *node;   /* NULL for a fabric hint */
	const char *nic;    /* optional; NULL for a fabric hint */
	bool resume;        /* false: drain */
	const char *reason; /* drain, resume: the Slurm reason; a fabric hint: what to check */
	int64_t anomaly_id; /* 0: none */
	int64_t created_ns;
	const char *component; /* a fabric hint: the switch or link to check; NULL: a node's hint */
};

/* Inserts the hint; *id (may be NULL) gets its id. -EINVAL: a node's hint
 * without a node, or a fabric hint with a node, a NIC or resume. */
int fq_db_insert_drain_hint(struct fq_db *db, const struct fq_db_drain_hint *h, int64_t *id);

/* ---- queries ---------------------------------------------------------- */

/* One row of the job_efficiency view (one job step). */
struct fq_db_job_efficiency {
	uint64_t job_id;
	uint32_t step_id;
	int64_t first_interval_ns, last_interval_ns; /* 0: no lane windows */
	uint32_t lanes;
	uint64_t bytes;
	double achieved_gbps, best_gbps, efficiency, degraded_share; /* NaN: no data */
	double median_lane_p99_us, slowest_lane_p99_us;              /* NaN: no data */
	char slowest_lanes[3][64];                                   /* "" when fewer lanes */
	uint32_t anomalies, failovers;
};

/* The job's steps, by step id. On success *rows (free() it) holds *n
 * entries (0 if the job is unknown). */
int fq_db_job_efficiency(struct fq_db *db, uint64_t job_id, struct fq_db_job_efficiency **rows, size_t *n);

#endif /* FQ_DB_DB_H */
