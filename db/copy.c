/*
 * copy: the batched COPY writers. Rows are encoded into per-table buffers
 * when added (db/encode.c: COPY binary for lane_windows, the bulk of the
 * telemetry, so PostgreSQL parses no text; COPY text for the others) and
 * written by fq_db_flush()
 * with one COPY per table inside one transaction: either the whole batch is
 * stored or none of it is, and then it is still buffered for a retry.
 */
#include "db/internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct copy_table {
	const char *name;
	const char *columns;
	bool binary; /* COPY binary format (db/encode.h), else text */
};

/* Column lists in the order the encoders below write the fields. */
static const struct copy_table tables[FQ_DB_T_COUNT] = {
    [FQ_DB_T_PROBE_WINDOWS] =
	{"probe_windows", "window_start, window_end, src_node, src_nic, dst_node, dst_nic, sent, answered, "
			  "lost, owd_fwd_min_ns, owd_fwd_p50_ns, owd_fwd_p99_ns, owd_fwd_max_ns, "
			  "owd_rev_min_ns, owd_rev_p50_ns, owd_rev_p99_ns, owd_rev_max_ns, rtt_p50_ns, "
			  "timestamp_kind, path_up, agent_seq, owd_fwd_p90_ns, owd_rev_p90_ns"},
    [FQ_DB_T_LANE_WINDOWS] =
	{"lane_windows",
	 "interval_start, interval_end, job_id, step_id, src_rank, dst_rank, lane, lane_kind, "
	 "src_node, src_nic, dst_node, dst_nic, bytes, chunks, messages, owd_min_ns, "
	 "owd_p50_ns, owd_p99_ns, owd_max_ns, tcp_rtt_us, tcp_retrans, tcp_ce, synchronised, "
	 "pacing_rate, throttled_ns, assigned_rate, assigned_ns",
	 true},
    [FQ_DB_T_CLOCK_ESTIMATES] =
	{"clock_estimates", "reported_at, node, peer_node, offset_ns, drift_ppb, error_bound_ns, samples, "
			    "window_start_local_ns, window_end_local_ns, applied_offset_ns, "
			    "applied_error_ns, correction_epoch"},
    [FQ_DB_T_LINK_EVENTS] =
	{"link_events", "time, detected_at, node, nic, remote_node, remote_nic, state, detector, nic_level"},
    [FQ_DB_T_FAILOVER_EVENTS] =
	{"failover_events",
	 "time, job_id, step_id, src_rank, dst_rank, from_lane, to_lane, node, local_nic, "
	 "remote_nic, cause, detect_ns, bytes_resent, duration_ns, failback, conn_id, is_send"},
    [FQ_DB_T_PROFILER_WINDOWS] =
	{"profiler_windows",
	 "interval_start, interval_end, job_id, step_id, rank, node, comm_hash, kind, "
	 "device, sub, id, count, bytes, mean_ns, max_ns, synchronised",
	 true},
    [FQ_DB_T_PROFILER_OPS] =
	{"profiler_ops",
	 "start_time, end_time, job_id, step_id, rank, node, comm_hash, nranks, seq, func, "
	 "algo, proto, p2p, peer, bytes, algbw_gbs, synchronised",
	 true},
};

static const char *const ts_kinds[] = {"unknown", "software", "hardware", "user"};
static const char *const link_states[] = {"unknown", "up", "down"};

/* Checks one string field of row i of table t. */
static int check_str(struct fq_db *db, enum fq_db_table t, size_t i, const char *field, const char *s,
		     bool required)
{
	if (!s) {
		if (!required)
			return 0;
		fq_db_set_error(db, "%s row %zu: %s is missing", tables[t].name, i, field);
		return -EINVAL;
	}
	if (!fq_utf8_valid(s)) {
		fq_db_set_error(db, "%s row %zu: %s is not valid UTF-8", tables[t].name, i, field);
		return -EILSEQ;
	}
	return 0;
}

static int check_enum(struct fq_db *db, enum fq_db_table t, size_t i, const char *field, unsigned v,
		      unsigned count)
{
	if (v < count)
		return 0;
	fq_db_set_error(db, "%s row %zu: %s %u is out of range", tables[t].name, i, field, v);
	return -EINVAL;
}

/* The row checkers and encoders, one pair per table. An encoder fails
 * only on -ENOMEM. */

static int check_probe(struct fq_db *db, const void *row, size_t i)
{
	const struct fq_db_probe_window *r = row;
	enum fq_db_table t = FQ_DB_T_PROBE_WINDOWS;
	int rc;

	if ((rc = check_str(db, t, i, "src_node", r->src_node, true)) ||
	    (rc = check_str(db, t, i, "src_nic", r->src_nic, true)) ||
	    (rc = check_str(db, t, i, "dst_node", r->dst_node, true)) ||
	    (rc = check_str(db, t, i, "dst_nic", r->dst_nic, true)))
		return rc;
	return check_enum(db, t, i, "timestamp_kind", r->timestamp_kind, 4);
}

static int encode_probe(struct fq_buf *b, const void *row)
{
	const struct fq_db_probe_window *r = row;
	int rc = 0;

	rc |= fq_copy_ts(b, true, r->window_start_ns);
	rc |= fq_copy_ts(b, false, r->window_end_ns);
	rc |= fq_copy_str(b, false, r->src_node);
	rc |= fq_copy_str(b, false, r->src_nic);
	rc |= fq_copy_str(b, false, r->dst_node);
	rc |= fq_copy_str(b, false, r->dst_nic);
	rc |= fq_copy_u64(b, false, r->sent);
	rc |= fq_copy_u64(b, false, r->answered);
	rc |= fq_copy_u64(b, false, r->lost);
	rc |= fq_copy_i64_or_null(b, false, r->owd_fwd_min_ns);
	rc |= fq_copy_i64_or_null(b, false, r->owd_fwd_p50_ns);
	rc |= fq_copy_i64_or_null(b, false, r->owd_fwd_p99_ns);
	rc |= fq_copy_i64_or_null(b, false, r->owd_fwd_max_ns);
	rc |= fq_copy_i64_or_null(b, false, r->owd_rev_min_ns);
	rc |= fq_copy_i64_or_null(b, false, r->owd_rev_p50_ns);
	rc |= fq_copy_i64_or_null(b, false, r->owd_rev_p99_ns);
	rc |= fq_copy_i64_or_null(b, false, r->owd_rev_max_ns);
	rc |= fq_copy_i64_or_null(b, false, r->rtt_p50_ns);
	rc |= fq_copy_str(b, false, ts_kinds[r->timestamp_kind]);
	rc |= fq_copy_bool(b, false, r->path_up);
	rc |= fq_copy_u64(b, false, r->agent_seq);
	rc |= fq_copy_i64_or_null(b, false, r->owd_fwd_p90_ns);
	rc |= fq_copy_i64_or_null(b, false, r->owd_rev_p90_ns);
	rc |= fq_copy_eol(b);
	return rc ? -ENOMEM : 0;
}

static int check_lane(struct fq_db *db, const void *row, size_t i)
{
	const struct fq_db_lane_window *r = row;
	enum fq_db_table t = FQ_DB_T_LANE_WINDOWS;
	int rc;

	if ((rc = check_str(db, t, i, "lane_kind", r->lane_kind, true)) ||
	    (rc = check_str(db, t, i, "src_node", r->src_node, true)) ||
	    (rc = check_str(db, t, i, "src_nic", r->src_nic, true)) ||
	    (rc = check_str(db, t, i, "dst_node", r->dst_node, true)) ||
	    (rc = check_str(db, t, i, "dst_nic", r->dst_nic, true)))
		return rc;
	/* Binary COPY sends the columns' own types: a value that does not fit
	 * (which PostgreSQL refused in text) is refused here, not wrapped. */
	if (r->job_id > INT64_MAX || r->bytes > INT64_MAX || r->chunks > INT64_MAX ||
	    r->messages > INT64_MAX || r->src_rank > INT32_MAX || r->dst_rank > INT32_MAX ||
	    r->lane > INT32_MAX || r->tcp_rtt_us > INT32_MAX || r->tcp_retrans > INT32_MAX ||
	    r->tcp_ce > INT32_MAX || r->pacing_rate > INT64_MAX || r->throttled_ns < 0 ||
	    r->assigned_rate > INT64_MAX || r->assigned_ns < 0) {
		fq_db_set_error(db, "%s row %zu: a number is out of range for its column", tables[t].name, i);
		return -ERANGE;
	}
	return 0;
}

/* Binary, in the column order of tables[FQ_DB_T_LANE_WINDOWS]; the types
 * are those of sql/001_init.sql (int8 job_id, step_id, bytes...; int4
 * ranks, lane, tcp_*), sql/018_qos.sql (int8 pacing_rate, throttled_ns) and
 * sql/019_rates.sql (int8 assigned_rate, assigned_ns). */
static int encode_lane(struct fq_buf *b, const void *row)
{
	const struct fq_db_lane_window *r = row;
	int rc = 0;

	rc |= fq_bin_row(b, 27);
	rc |= fq_bin_ts(b, r->interval_start_ns);
	rc |= fq_bin_ts(b, r->interval_end_ns);
	rc |= fq_bin_i64(b, (int64_t)r->job_id);
	rc |= fq_bin_i64(b, r->step_id);
	rc |= fq_bin_i32(b, (int32_t)r->src_rank);
	rc |= fq_bin_i32(b, (int32_t)r->dst_rank);
	rc |= fq_bin_i32(b, (int32_t)r->lane);
	rc |= fq_bin_str(b, r->lane_kind);
	rc |= fq_bin_str(b, r->src_node);
	rc |= fq_bin_str(b, r->src_nic);
	rc |= fq_bin_str(b, r->dst_node);
	rc |= fq_bin_str(b, r->dst_nic);
	rc |= fq_bin_i64(b, (int64_t)r->bytes);
	rc |= fq_bin_i64(b, (int64_t)r->chunks);
	rc |= fq_bin_i64(b, (int64_t)r->messages);
	rc |= fq_bin_i64_or_null(b, r->owd_min_ns);
	rc |= fq_bin_i64_or_null(b, r->owd_p50_ns);
	rc |= fq_bin_i64_or_null(b, r->owd_p99_ns);
	rc |= fq_bin_i64_or_null(b, r->owd_max_ns);
	rc |= fq_bin_i32(b, (int32_t)r->tcp_rtt_us);
	rc |= fq_bin_i32(b, (int32_t)r->tcp_retrans);
	rc |= fq_bin_i32(b, (int32_t)r->tcp_ce);
	rc |= fq_bin_bool(b, r->synchronised);
	rc |= fq_bin_i64_or_null(b, (int64_t)r->pacing_rate);
	rc |= fq_bin_i64_or_null(b, r->throttled_ns);
	rc |= fq_bin_i64_or_null(b, (int64_t)r->assigned_rate);
	rc |= fq_bin_i64_or_null(b, r->assigned_ns);
	return rc ? -ENOMEM : 0;
}

static int check_clock(struct fq_db *db, const void *row, size_t i)
{
	const struct fq_db_clock_estimate *r = row;
	enum fq_db_table t = FQ_DB_T_CLOCK_ESTIMATES;
	int rc;

	if ((rc = check_str(db, t, i, "node", r->node, true)) ||
	    (rc = check_str(db, t, i, "peer_node", r->peer_node, true)))
		return rc;
	return 0;
}

static int encode_clock(struct fq_buf *b, const void *row)
{
	const struct fq_db_clock_estimate *r = row;
	int rc = 0;

	rc |= fq_copy_ts(b, true, r->reported_ns);
	rc |= fq_copy_str(b, false, r->node);
	rc |= fq_copy_str(b, false, r->peer_node);
	rc |= fq_copy_i64(b, false, r->offset_ns);
	rc |= fq_copy_f64(b, false, r->drift_ppb);
	rc |= fq_copy_i64(b, false, r->error_bound_ns);
	rc |= fq_copy_u64(b, false, r->samples);
	rc |= fq_copy_i64(b, false, r->window_start_local_ns);
	rc |= fq_copy_i64(b, false, r->window_end_local_ns);
	rc |= fq_copy_i64(b, false, r->applied_offset_ns);
	rc |= fq_copy_i64(b, false, r->applied_error_ns);
	rc |= fq_copy_u64(b, false, r->correction_epoch);
	rc |= fq_copy_eol(b);
	return rc ? -ENOMEM : 0;
}

static int check_link_event(struct fq_db *db, const void *row, size_t i)
{
	const struct fq_db_link_event *r = row;
	enum fq_db_table t = FQ_DB_T_LINK_EVENTS;
	int rc;

	if ((rc = check_str(db, t, i, "node", r->node, true)) ||
	    (rc = check_str(db, t, i, "nic", r->nic, true)) ||
	    (rc = check_str(db, t, i, "remote_node", r->remote_node, false)) ||
	    (rc = check_str(db, t, i, "remote_nic", r->remote_nic, false)) ||
	    (rc = check_str(db, t, i, "detector", r->detector, true)))
		return rc;
	return check_enum(db, t, i, "state", r->state, 3);
}

static int encode_link_event(struct fq_buf *b, const void *row)
{
	const struct fq_db_link_event *r = row;
	int rc = 0;

	rc |= fq_copy_ts(b, true, r->time_ns);
	rc |= fq_copy_ts(b, false, r->detected_ns);
	rc |= fq_copy_str(b, false, r->node);
	rc |= fq_copy_str(b, false, r->nic);
	rc |= fq_copy_str(b, false, r->remote_node);
	rc |= fq_copy_str(b, false, r->remote_nic);
	rc |= fq_copy_str(b, false, link_states[r->state]);
	rc |= fq_copy_str(b, false, r->detector);
	rc |= fq_copy_bool(b, false, r->nic_level);
	rc |= fq_copy_eol(b);
	return rc ? -ENOMEM : 0;
}

static int check_failover(struct fq_db *db, const void *row, size_t i)
{
	const struct fq_db_failover_event *r = row;
	enum fq_db_table t = FQ_DB_T_FAILOVER_EVENTS;
	int rc;

	if ((rc = check_str(db, t, i, "node", r->node, true)) ||
	    (rc = check_str(db, t, i, "local_nic", r->local_nic, true)) ||
	    (rc = check_str(db, t, i, "remote_nic", r->remote_nic, true)) ||
	    (rc = check_str(db, t, i, "cause", r->cause, true)))
		return rc;
	return 0;
}

static int encode_failover(struct fq_buf *b, const void *row)
{
	const struct fq_db_failover_event *r = row;
	int rc = 0;

	rc |= fq_copy_ts(b, true, r->time_ns);
	rc |= fq_copy_u64(b, false, r->job_id);
	rc |= fq_copy_u64(b, false, r->step_id);
	rc |= fq_copy_u64(b, false, r->src_rank);
	rc |= fq_copy_u64(b, false, r->dst_rank);
	rc |= fq_copy_u64(b, false, r->from_lane);
	rc |= fq_copy_u64(b, false, r->to_lane);
	rc |= fq_copy_str(b, false, r->node);
	rc |= fq_copy_str(b, false, r->local_nic);
	rc |= fq_copy_str(b, false, r->remote_nic);
	rc |= fq_copy_str(b, false, r->cause);
	rc |= fq_copy_i64(b, false, r->detect_ns);
	rc |= fq_copy_u64(b, false, r->bytes_resent);
	rc |= fq_copy_i64(b, false, r->duration_ns);
	rc |= fq_copy_bool(b, false, r->failback);
	rc |= fq_copy_i64(b, false, (int64_t)r->conn_id); /* int8: the id's bits, signed */
	rc |= fq_copy_bool(b, false, r->is_send);
	rc |= fq_copy_eol(b);
	return rc ? -ENOMEM : 0;
}

typedef fq_db_check_fn check_fn;
typedef fq_db_encode_fn encode_fn;

/* Checks and encodes n rows; all or none of them end up buffered. */
int fq_db_add_rows(struct fq_db *db, enum fq_db_table t, const void *rows, size_t size, size_t n,
		   check_fn check, encode_fn encode)
{
	struct fq_db_copy_buf *c = &db->copy[t];
	size_t mark = c->buf.len;
	int rc;

	if (tables[t].binary && !c->buf.len && n && fq_bin_header(&c->buf)) {
		fq_db_set_error(db, "%s: out of memory", tables[t].name);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const void *row = (const char *)rows + i * size;

		rc = check(db, row, i);
		if (!rc && (rc = encode(&c->buf, row)))
			fq_db_set_error(db, "%s: out of memory buffering %zu rows", tables[t].name,
					c->rows + n);
		if (rc) {
			c->buf.len = mark;
			return rc;
		}
	}
	c->rows += n;
	return 0;
}

int fq_db_add_probe_windows(struct fq_db *db, const struct fq_db_probe_window *rows, size_t n)
{
	return fq_db_add_rows(db, FQ_DB_T_PROBE_WINDOWS, rows, sizeof(*rows), n, check_probe, encode_probe);
}

int fq_db_add_lane_windows(struct fq_db *db, const struct fq_db_lane_window *rows, size_t n)
{
	return fq_db_add_rows(db, FQ_DB_T_LANE_WINDOWS, rows, sizeof(*rows), n, check_lane, encode_lane);
}

int fq_db_add_clock_estimates(struct fq_db *db, const struct fq_db_clock_estimate *rows, size_t n)
{
	return fq_db_add_rows(db, FQ_DB_T_CLOCK_ESTIMATES, rows, sizeof(*rows), n, check_clock, encode_clock);
}

int fq_db_add_link_events(struct fq_db *db, const struct fq_db_link_event *rows, size_t n)
{
	return fq_db_add_rows(db, FQ_DB_T_LINK_EVENTS, rows, sizeof(*rows), n, check_link_event,
			      encode_link_event);
}

int fq_db_add_failover_events(struct fq_db *db, const struct fq_db_failover_event *rows, size_t n)
{
	return fq_db_add_rows(db, FQ_DB_T_FAILOVER_EVENTS, rows, sizeof(*rows), n, check_failover,
			      encode_failover);
}

size_t fq_db_pending_rows(const struct fq_db *db)
{
	size_t n = 0;

	for (int t = 0; t < FQ_DB_T_COUNT; t++)
		n += db->copy[t].rows;
	return n;
}

size_t fq_db_pending_bytes(const struct fq_db *db)
{
	size_t n = 0;

	for (int t = 0; t < FQ_DB_T_COUNT; t++)
		n += db->copy[t].buf.len;
	return n;
}

void fq_db_discard(struct fq_db *db)
{
	for (int t = 0; t < FQ_DB_T_COUNT; t++) {
		db->copy[t].buf.len = 0;
		db->copy[t].rows = 0;
	}
	db->seq_nodes.len = db->seq_values.len = 0;
	db->nseqs = 0;
	for (int i = 0; i < 5; i++)
		db->rn[i].len = 0;
	db->nrank_nics = 0;
}

/* ---- agent seqs -------------------------------------------------------- */

/* Appends sep and s as a double-quoted array literal element. */
static int put_array_elem(struct fq_buf *b, char sep, const char *s)
{
	size_t n = strlen(s);

	if (fq_buf_reserve(b, 2 * n + 4))
		return -ENOMEM;
	b->p[b->len++] = sep;
	b->p[b->len++] = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			b->p[b->len++] = '\\';
		b->p[b->len++] = *s;
	}
	b->p[b->len++] = '"';
	return 0;
}

int fq_db_add_agent_seq(struct fq_db *db, const char *node, uint64_t seq)
{
	char num[24];
	size_t mark_n = db->seq_nodes.len, mark_v = db->seq_values.len;
	char sep = db->nseqs ? ',' : '{';

	if (!node) {
		fq_db_set_error(db, "agent seq: node is missing");
		return -EINVAL;
	}
	if (!fq_utf8_valid(node)) {
		fq_db_set_error(db, "agent seq: node is not valid UTF-8");
		return -EILSEQ;
	}
	snprintf(num, sizeof(num), "%llu", (unsigned long long)seq);
	if (seq > INT64_MAX || put_array_elem(&db->seq_nodes, sep, node) ||
	    put_array_elem(&db->seq_values, sep, num)) {
		db->seq_nodes.len = mark_n;
		db->seq_values.len = mark_v;
		fq_db_set_error(db, "agent seq of %s: %s", node,
				seq > INT64_MAX ? "out of range" : "out of memory");
		return seq > INT64_MAX ? -ERANGE : -ENOMEM;
	}
	db->nseqs++;
	return 0;
}

size_t fq_db_pending_seqs(const struct fq_db *db)
{
	return db->nseqs;
}

int fq_db_add_rank_nic(struct fq_db *db, uint64_t job_id, uint32_t step_id, uint32_t rank, const char *node,
		       const char *nic)
{
	const char *v[5];
	char num[3][24];
	size_t mark[5];
	char sep = db->nrank_nics ? ',' : '{';

	if (!node || !nic) {
		fq_db_set_error(db, "rank NIC: %s is missing", node ? "nic" : "node");
		return -EINVAL;
	}
	if (!fq_utf8_valid(node) || !fq_utf8_valid(nic)) {
		fq_db_set_error(db, "rank NIC: node or nic is not valid UTF-8");
		return -EILSEQ;
	}
	if (job_id > INT64_MAX) {
		fq_db_set_error(db, "rank NIC: job %llu out of range", (unsigned long long)job_id);
		return -ERANGE;
	}
	snprintf(num[0], sizeof(num[0]), "%llu", (unsigned long long)job_id);
	snprintf(num[1], sizeof(num[1]), "%u", step_id);
	snprintf(num[2], sizeof(num[2]), "%u", rank);
	v[0] = num[0], v[1] = num[1], v[2] = num[2], v[3] = node, v[4] = nic;
	for (int i = 0; i < 5; i++)
		mark[i] = db->rn[i].len;
	for (int i = 0; i < 5; i++) {
		if (put_array_elem(&db->rn[i], sep, v[i])) {
			for (int k = 0; k < 5; k++)
				db->rn[k].len = mark[k];
			fq_db_set_error(db, "rank NIC: out of memory");
			return -ENOMEM;
		}
	}
	db->nrank_nics++;
	return 0;
}

/* The buffered rank NICs, one statement, after the flush's COPY rows.
 * A rank whose list holds them all already is not rewritten. */
static int write_rank_nics(struct fq_db *db)
{
	struct fq_db_params p = {0};

	for (int i = 0; i < 5; i++) {
		if (fq_buf_reserve(&db->rn[i], 2)) {
			fq_db_set_error(db, "rank NICs: out of memory");
			return -ENOMEM;
		}
		memcpy(db->rn[i].p + db->rn[i].len, "}", 2);
		fq_db_param_str(&p, db->rn[i].p);
	}
	return fq_db_exec(
	    db, "storing rank NICs",
	    "update fabriciq.ranks r set nic = (select string_agg(distinct x, ',' order by x)"
	    "  from unnest(string_to_array(r.nic, ',') || u.nics) as x) "
	    "from (select j, s, k, n, array_agg(distinct c) as nics"
	    "  from unnest($1::int8[], $2::int8[], $3::int[], $4::text[], $5::text[]) as t(j, s, k, n, c)"
	    "  group by j, s, k, n) as u "
	    "where r.job_id = u.j and r.step_id = u.s and r.rank = u.k and r.node = u.n"
	    " and (r.nic is null or not (u.nics <@ string_to_array(r.nic, ',')))",
	    &p);
}

/* The buffered seqs, one statement; the last one of a node wins. */
static int write_seqs(struct fq_db *db)
{
	struct fq_db_params p = {0};
	int rc;

	if (fq_buf_reserve(&db->seq_nodes, 2) || fq_buf_reserve(&db->seq_values, 2)) {
		fq_db_set_error(db, "agent seqs: out of memory");
		return -ENOMEM;
	}
	memcpy(db->seq_nodes.p + db->seq_nodes.len, "}", 2);
	memcpy(db->seq_values.p + db->seq_values.len, "}", 2);
	fq_db_param_str(&p, db->seq_nodes.p);
	fq_db_param_str(&p, db->seq_values.p);
	rc =
	    fq_db_exec(db, "storing agent seqs",
		       "insert into fabriciq.agent_seq (node, last_seq, updated_at) "
		       "select distinct on (n) n, s, now() "
		       "from unnest($1::text[], $2::int8[]) with ordinality as t(n, s, i) order by n, i desc "
		       "on conflict (node) do update set last_seq = excluded.last_seq, updated_at = now()",
		       &p);
	return rc;
}

int fq_db_agent_seqs(struct fq_db *db, struct fq_db_agent_seq **rows, size_t *n)
{
	PGresult *res;
	int rc, nt;

	*rows = NULL;
	*n = 0;
	res = fq_db_run(db, "reading fabriciq.agent_seq", "select node, last_seq from fabriciq.agent_seq",
			NULL, &rc);
	if (!res)
		return rc;
	nt = PQntuples(res);
	if (nt && !(*rows = calloc((size_t)nt, sizeof(**rows)))) {
		PQclear(res);
		fq_db_set_error(db, "reading fabriciq.agent_seq: out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < nt; i++) {
		if (!((*rows)[i].node = strdup(PQgetvalue(res, i, 0)))) {
			fq_db_agent_seqs_free(*rows, (size_t)i);
			*rows = NULL;
			PQclear(res);
			fq_db_set_error(db, "reading fabriciq.agent_seq: out of memory");
			return -ENOMEM;
		}
		(*rows)[i].last_seq = strtoull(PQgetvalue(res, i, 1), NULL, 10);
	}
	*n = (size_t)nt;
	PQclear(res);
	return 0;
}

void fq_db_agent_seqs_free(struct fq_db_agent_seq *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].node);
	free(rows);
}

/* Reads the results of a finished COPY; 0 if it succeeded. */
static int copy_result(struct fq_db *db, enum fq_db_table t)
{
	PGresult *res;
	int rc = 0;

	while ((res = PQgetResult(db->conn))) {
		if (!rc && PQresultStatus(res) != PGRES_COMMAND_OK) {
			char what[128];

			rc = fq_db_errno_of(res, db->conn);
			snprintf(what, sizeof(what), "COPY of %zu rows into fabriciq.%s", db->copy[t].rows,
				 tables[t].name);
			fq_db_set_result_error(db, what, res);
		}
		PQclear(res);
	}
	return rc;
}

/* libpq copies what it is given into its own output buffer: sending in
 * slices bounds that copy instead of doubling a large batch in memory. */
#define COPY_SLICE (256 * 1024)

static int copy_table(struct fq_db *db, enum fq_db_table t)
{
	const struct fq_buf *b = &db->copy[t].buf;
	char sql[512];
	PGresult *res;
	int rc;

	snprintf(sql, sizeof(sql), "copy fabriciq.%s (%s) from stdin%s", tables[t].name, tables[t].columns,
		 tables[t].binary ? " with (format binary)" : "");
	res = PQexec(db->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_IN) {
		char what[128];

		rc = fq_db_errno_of(res, db->conn);
		snprintf(what, sizeof(what), "COPY into fabriciq.%s", tables[t].name);
		fq_db_set_result_error(db, what, res);
		PQclear(res);
		return rc;
	}
	PQclear(res);
	for (size_t off = 0; off < b->len; off += COPY_SLICE) {
		size_t len = b->len - off < COPY_SLICE ? b->len - off : COPY_SLICE;

		if (PQputCopyData(db->conn, b->p + off, (int)len) != 1) {
			fq_db_set_error(db, "COPY into fabriciq.%s: sending rows: %s", tables[t].name,
					PQerrorMessage(db->conn));
			PQputCopyEnd(db->conn, "client failed to send");
			copy_result(db, t);
			return -ECONNRESET;
		}
	}
	if ((tables[t].binary && PQputCopyData(db->conn, fq_bin_trailer, FQ_BIN_TRAILER_LEN) != 1) ||
	    PQputCopyEnd(db->conn, NULL) != 1) {
		fq_db_set_error(db, "COPY into fabriciq.%s: ending: %s", tables[t].name,
				PQerrorMessage(db->conn));
		copy_result(db, t);
		return -ECONNRESET;
	}
	return copy_result(db, t);
}

int64_t fq_db_flush(struct fq_db *db)
{
	size_t rows = fq_db_pending_rows(db);
	int rc;

	if (!rows && !db->nseqs && !db->nrank_nics)
		return 0;
	rc = fq_db_exec(db, "flush", "begin", NULL);
	if (rc)
		return rc;
	for (int t = 0; t < FQ_DB_T_COUNT; t++) {
		if (db->copy[t].rows && (rc = copy_table(db, (enum fq_db_table)t)))
			goto rollback;
	}
	if (db->nrank_nics && (rc = write_rank_nics(db)))
		goto rollback;
	if (db->nseqs && (rc = write_seqs(db)))
		goto rollback;
	/* A failed commit aborts the transaction: the rows stay buffered. */
	rc = fq_db_exec(db, "flush: commit", "commit", NULL);
	if (rc)
		return rc;
	fq_db_discard(db);
	return (int64_t)rows;

rollback:
	PQclear(PQexec(db->conn, "rollback"));
	return rc;
}
