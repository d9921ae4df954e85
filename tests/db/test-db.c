/*
 * The db library against a real, private PostgreSQL (started by
 * tests/db/with-postgres.sh, which sets PGHOST/PGDATABASE and FQ_TEST_PG):
 * migrations, COPY of hostile strings, atomic flushes, partitions and
 * retention, and the views' numbers on a small hand-made data set.
 */
#include "common/clock.h"
#include "db/db.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tests/unit/tap.h"

#define SEC 1000000000LL

static PGconn *pg; /* a second connection, to read back what the library wrote */

/* The first column of the first row of sql, as text ("(null)" for NULL,
 * "ERROR: ..." on failure). Valid until the next call. */
static const char *q(const char *sql)
{
	static char out[4096];
	PGresult *res = PQexec(pg, sql);

	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
		snprintf(out, sizeof(out), "ERROR: %s", PQresultErrorMessage(res));
	else if (PQntuples(res) < 1 || PQnfields(res) < 1)
		snprintf(out, sizeof(out), "(no rows)");
	else
		snprintf(out, sizeof(out), "%s", PQgetisnull(res, 0, 0) ? "(null)" : PQgetvalue(res, 0, 0));
	PQclear(res);
	return out;
}

/* q() of a query built with printf's format. */
static const char *qf(const char *f, ...) __attribute__((format(printf, 1, 2)));
static const char *qf(const char *f, ...)
{
	char sql[2048];
	va_list ap;

	va_start(ap, f);
	vsnprintf(sql, sizeof(sql), f, ap);
	va_end(ap);
	return q(sql);
}

static void test_migrations(struct fq_db *db)
{
	int version = -1, applied = -1;
	char sql[128];

	is_int(fq_db_schema_version(db, &version), 0, "schema version of an empty database");
	is_int(version, 0, "... is 0");
	is_int(fq_db_migrate(db, &applied), 0, "migrate from empty");
	is_int(applied, fq_db_code_version(), "... applied every migration");
	fq_db_schema_version(db, &version);
	is_int(version, fq_db_code_version(), "... schema at the code's version");
	snprintf(sql, sizeof(sql), "%d", fq_db_code_version());
	is_str(q("select count(*) from fabriciq.schema_version"), sql,
	       "one schema_version row per migration");
	ok(atoi(q("select count(*) from fabriciq.partitions")) >= 4 * 9,
	   "today's and the next 7 days' partitions");

	is_int(fq_db_migrate(db, &applied), 0, "migrate again");
	is_int(applied, 0, "... applies nothing (idempotent)");

	snprintf(sql, sizeof(sql),
		 "insert into fabriciq.schema_version (version, name) values (%d, 'future')",
		 fq_db_code_version() + 1);
	q(sql);
	is_int(fq_db_migrate(db, &applied), -EPROTONOSUPPORT, "a newer schema is refused");
	snprintf(sql, sizeof(sql), "schema is version %d", fq_db_code_version() + 1);
	like(fq_db_error(db), sql, "... naming the database's version");
	snprintf(sql, sizeof(sql), "(version %d)", fq_db_code_version());
	like(fq_db_error(db), sql, "... and the code's");
	is_int(applied, 0, "... applying nothing");
	q("delete from fabriciq.schema_version where name = 'future'");
}

/* Every string field an agent or a job controls, hostile. */
static const char *const hostile[] = {
    "'); drop table x; --",
    "tab\there",
    "new\nline\r\n",
    "back\\slash \\N \\. \\\\",
    "\"double\" 'single' ; -- /* */ $$ $1",
    "r\xc3\xa9seau \xf0\x9f\x98\x80",
};
#define NHOSTILE (sizeof(hostile) / sizeof(hostile[0]))

static void test_hostile_strings(struct fq_db *db)
{
	struct fq_db_lane_window lw[NHOSTILE];
	struct fq_db_link_event ev[NHOSTILE];
	int64_t t = fq_realtime_ns();
	int same = 0, rc;

	for (size_t i = 0; i < NHOSTILE; i++) {
		lw[i] = (struct fq_db_lane_window){
		    .interval_start_ns = t,
		    .interval_end_ns = t + SEC,
		    .job_id = 7,
		    .step_id = 0,
		    .src_rank = (uint32_t)i,
		    .dst_rank = 99,
		    .lane = 0,
		    .lane_kind = hostile[i],
		    .src_node = hostile[i],
		    .src_nic = hostile[i],
		    .dst_node = hostile[i],
		    .dst_nic = hostile[i],
		    .bytes = 1,
		    .synchronised = true,
		};
		ev[i] = (struct fq_db_link_event){
		    .time_ns = t,
		    .detected_ns = t,
		    .node = "hostile",
		    .nic = hostile[i],
		    .remote_node = hostile[i],
		    .remote_nic = NULL,
		    .state = FQ_DB_LINK_DOWN,
		    .detector = hostile[i],
		};
	}
	is_int(fq_db_add_lane_windows(db, lw, NHOSTILE), 0, "buffer lane windows with hostile strings");
	is_int(fq_db_add_link_events(db, ev, NHOSTILE), 0, "buffer link events with hostile strings");
	is_int(fq_db_pending_rows(db), 2 * NHOSTILE, "... all pending");
	rc = (int)fq_db_flush(db);
	is_int(rc, 2 * NHOSTILE, "flush writes them");
	if (rc < 0)
		diag("%s", fq_db_error(db));
	is_int(fq_db_pending_rows(db), 0, "... nothing pending after");

	/* Read back with parameters and compare byte for byte. */
	for (size_t i = 0; i < NHOSTILE; i++) {
		char rank[16];
		const char *params[1] = {rank};
		PGresult *res;

		snprintf(rank, sizeof(rank), "%zu", i);
		res = PQexecParams(
		    pg,
		    "select lane_kind, src_node, src_nic, dst_node, dst_nic from fabriciq.lane_windows "
		    "where job_id = 7 and src_rank = $1",
		    1, NULL, params, NULL, NULL, 0);
		if (PQntuples(res) == 1) {
			int all = 1;

			for (int c = 0; c < 5; c++)
				all &= !strcmp(PQgetvalue(res, 0, c), hostile[i]);
			same += all;
		}
		PQclear(res);
	}
	is_int(same, NHOSTILE, "every hostile lane string read back verbatim");
	is_str(q("select string_agg(nic, '|' order by nic) = string_agg(detector, '|' order by nic) "
		 "and count(*) = 6 and bool_and(remote_nic is null) from fabriciq.link_events where node = "
		 "'hostile'"),
	       "t", "link event strings verbatim, NULL stays NULL");
	is_str(q("select count(*) from pg_tables where schemaname = 'public' and tablename = 'x'"), "0",
	       "nothing was executed");

	struct fq_db_node node = {.name = hostile[0], .agent_version = hostile[3], .seen_ns = t};

	is_int(fq_db_upsert_node(db, &node), 0, "upsert a node with hostile strings");
	is_str(q("select agent_version from fabriciq.nodes where name = '''); drop table x; --'"), hostile[3],
	       "... stored verbatim");

	lw[0].src_nic = "bad \xff utf-8";
	is_int(fq_db_add_lane_windows(db, lw, 2), -EILSEQ, "invalid UTF-8 refused when added");
	like(fq_db_error(db), "src_nic is not valid UTF-8", "... naming the field");
	lw[0].src_nic = NULL;
	is_int(fq_db_add_lane_windows(db, lw, 1), -EINVAL, "a missing NIC refused");
	is_int(fq_db_pending_rows(db), 0, "... and nothing of either call buffered");
	is_int(fq_db_pending_bytes(db), 0, "... not a byte");
}

/* A flush that fails stores nothing and keeps every row for the retry. */
static void test_atomic_flush(struct fq_db *db)
{
	int64_t t = fq_realtime_ns();
	struct fq_db_lane_window lw = {
	    .interval_start_ns = t,
	    .interval_end_ns = t + SEC,
	    .job_id = 8,
	    .lane_kind = "tcp",
	    .src_node = "a",
	    .src_nic = "eth0",
	    .dst_node = "b",
	    .dst_nic = "eth0",
	    .synchronised = true,
	};
	struct fq_db_failover_event fo = {
	    .time_ns = t,
	    .job_id = 8,
	    .node = "a",
	    .local_nic = "eth0",
	    .remote_nic = "eth0",
	    .cause = "boom",
	};

	q("alter table fabriciq.failover_events add constraint test_no_boom check (cause <> 'boom')");
	fq_db_add_lane_windows(db, &lw, 1);
	fq_db_add_failover_events(db, &fo, 1);
	is_int(fq_db_add_agent_seq(db, "seq-node", 41), 0, "buffer an agent seq with the rows");
	fq_db_add_agent_seq(db, "seq-node", 42); /* the last one wins */
	is_int(fq_db_add_agent_seq(db, "bad\xff", 1), -EILSEQ, "a non-UTF-8 node name is refused");
	is_int(fq_db_pending_seqs(db), 2, "... and not buffered");
	ok(fq_db_flush(db) < 0, "a flush the server refuses fails");
	is_str(q("select count(*) from fabriciq.agent_seq where node = 'seq-node'"), "0",
	       "... and stores no seq: rows and seq commit together");
	like(fq_db_error(db), "failover_events", "... naming the table");
	is_str(q("select count(*) from fabriciq.lane_windows where job_id = 8"), "0",
	       "... and stores none of the batch");
	is_int(fq_db_pending_rows(db), 2, "... which stays buffered");
	q("alter table fabriciq.failover_events drop constraint test_no_boom");
	is_int(fq_db_flush(db), 2, "the retry writes both rows");
	is_str(q("select count(*) from fabriciq.lane_windows where job_id = 8"), "1", "... the lane window");
	is_str(q("select last_seq from fabriciq.agent_seq where node = 'seq-node'"), "42",
	       "... and the seq, the last added for the node");
	q("delete from fabriciq.failover_events where job_id = 8");

	/* A seq alone is written too; a lower one replaces it (a restarted count). */
	fq_db_add_agent_seq(db, "seq-node", 7);
	is_int(fq_db_flush(db), 0, "a flush of a seq alone");
	{
		struct fq_db_agent_seq *rows;
		size_t n;
		uint64_t got = 0;
		is_int(fq_db_agent_seqs(db, &rows, &n), 0, "fq_db_agent_seqs");
		for (size_t i = 0; i < n; i++)
			if (!strcmp(rows[i].node, "seq-node"))
				got = rows[i].last_seq;
		is_int(got, 7, "... reads the lowered seq back");
		fq_db_agent_seqs_free(rows, n);
	}
	q("delete from fabriciq.agent_seq where node = 'seq-node'");
}

/* A statement that waits on a lock is cancelled by the statement timeout. */
static void test_statement_timeout(void)
{
	struct fq_db_options o = {.conninfo = "", .connect_timeout_s = 2, .statement_timeout_ms = 300};
	struct fq_db_lane_window lw = {
	    .interval_start_ns = fq_realtime_ns(),
	    .interval_end_ns = fq_realtime_ns() + SEC,
	    .job_id = 9,
	    .lane_kind = "tcp",
	    .src_node = "a",
	    .src_nic = "eth0",
	    .dst_node = "b",
	    .dst_nic = "eth0",
	};
	struct fq_db *db = NULL;
	char err[512];
	int64_t t0, rc;

	is_int(fq_db_connect(&o, &db, err, sizeof(err)), 0, "connect with a connect and a statement timeout");
	if (!db)
		return;
	q("begin");
	q("lock table fabriciq.lane_windows in access exclusive mode");
	fq_db_add_lane_windows(db, &lw, 1);
	t0 = fq_realtime_ns();
	rc = fq_db_flush(db);
	is_int(rc, -ETIMEDOUT, "a COPY into a locked table fails with -ETIMEDOUT");
	ok(fq_realtime_ns() - t0 < 3 * SEC, "... after the statement timeout, not the lock's holder (%.2f s)",
	   (double)(fq_realtime_ns() - t0) / 1e9);
	is_int(fq_db_pending_rows(db), 1, "... the row stays buffered");
	q("commit");
	is_int(fq_db_flush(db), 1, "the lock released, the retry writes it");
	q("delete from fabriciq.lane_windows where job_id = 9");
	fq_db_destroy(db);
}

static void add_lanes(struct fq_db *db, int64_t t0)
{
	/* Job 4242 step 0: ranks 0 (node a) and 1 (node b), two lanes each
	 * way, two 1 s intervals. Interval 1: 1 GB per lane; interval 2:
	 * 0.5 GB per lane, and lane 0->1/1 at 94 us p99 instead of 4 us. */
	struct fq_db_lane_window lw[8];
	int k = 0;

	for (int iv = 0; iv < 2; iv++)
		for (int dir = 0; dir < 2; dir++)
			for (uint32_t lane = 0; lane < 2; lane++) {
				bool slow = iv == 1 && dir == 0 && lane == 1;

				lw[k++] = (struct fq_db_lane_window){
				    .interval_start_ns = t0 + iv * SEC,
				    .interval_end_ns = t0 + (iv + 1) * SEC,
				    .job_id = 4242,
				    .step_id = 0,
				    .src_rank = (uint32_t)dir,
				    .dst_rank = (uint32_t)!dir,
				    .lane = lane,
				    .lane_kind = "tcp",
				    .src_node = dir ? "b" : "a",
				    .src_nic = "eth0",
				    .dst_node = dir ? "a" : "b",
				    .dst_nic = "eth0",
				    .bytes = iv ? 500000000 : 1000000000,
				    .chunks = 100,
				    .messages = 10,
				    .owd_min_ns = 2000,
				    .owd_p50_ns = 3000,
				    .owd_p99_ns = slow ? 94000 : 4000,
				    .owd_max_ns = slow ? 120000 : 5000,
				    .synchronised = true,
				};
			}
	fq_db_add_lane_windows(db, lw, 8);
}

static void add_links(struct fq_db *db, int64_t now)
{
	struct fq_db_link link = {"a", "eth0", "b", "eth0", FQ_DB_LINK_UP, now - 300 * SEC, now};
	struct fq_db_probe_window pw[2];
	struct fq_db_link_event ev[6];
	int64_t ago[] = {600, 1200, 1800}; /* path-level downs in the last hour */

	fq_db_upsert_link(db, &link);
	for (int i = 0; i < 2; i++)
		pw[i] = (struct fq_db_probe_window){
		    .window_start_ns = now - (20 - i) * 60 * SEC,
		    .window_end_ns = now - (19 - i) * 60 * SEC,
		    .src_node = "a",
		    .src_nic = "eth0",
		    .dst_node = "b",
		    .dst_nic = "eth0",
		    .sent = 100,
		    .answered = i ? 90 : 100,
		    .lost = i ? 10 : 0,
		    .owd_fwd_p50_ns = i ? 6000 : 5000,
		    .owd_fwd_p99_ns = 8000,
		    .owd_rev_p50_ns = 5000,
		    .owd_rev_p99_ns = 7000,
		    .rtt_p50_ns = 10000,
		    .timestamp_kind = FQ_DB_TS_SOFTWARE,
		    .path_up = true,
		    .agent_seq = 1,
		};
	fq_db_add_probe_windows(db, pw, 2);
	for (int i = 0; i < 3; i++)
		ev[i] = (struct fq_db_link_event){now - ago[i] * SEC,
						  now - ago[i] * SEC,
						  "a",
						  "eth0",
						  "b",
						  "eth0",
						  FQ_DB_LINK_DOWN,
						  "probe",
						  false};
	/* NIC-level down 2 h ago: a flap of every path of a:eth0 (24 h only). */
	ev[3] = (struct fq_db_link_event){now - 7200 * SEC, now - 7200 * SEC, "a", "eth0", NULL, NULL,
					  FQ_DB_LINK_DOWN,  "carrier",        true};
	/* Not this path's flaps: an "up", and another remote NIC's down. */
	ev[4] = (struct fq_db_link_event){now - 500 * SEC, now - 500 * SEC, "a",     "eth0", "b",
					  "eth0",          FQ_DB_LINK_UP,   "probe", false};
	ev[5] = (struct fq_db_link_event){now - 300 * SEC, now - 300 * SEC, "a",     "eth0", "c",
					  "eth0",          FQ_DB_LINK_DOWN, "probe", false};
	fq_db_add_link_events(db, ev, 6);
}

static void add_clocks(struct fq_db *db, int64_t now)
{
	struct fq_db_clock_estimate ce[] = {
	    /* a: fresh, corrected, within budget; two peers. */
	    {now - 5 * SEC, "a", "b", 1500, 0.5, 800, 64, 1, 2, 1200, 500, 3},
	    {now - 5 * SEC, "a", "c", -700, -0.2, 900, 64, 1, 2, 1200, 500, 3},
	    /* an older report of a: not the latest */
	    {now - 65 * SEC, "a", "b", 9999, 0, 99999, 1, 1, 2, 9999, 99999, 2},
	    /* b: last report two hours ago */
	    {now - 7200 * SEC, "b", "a", 10, 0, 100, 64, 1, 2, 10, 100, 3},
	    /* d: fresh but never corrected */
	    {now - 5 * SEC, "d", "a", 10, 0, 100, 64, 1, 2, 10, 100, 0},
	};

	fq_db_add_clock_estimates(db, ce, sizeof(ce) / sizeof(ce[0]));
}

/* An incident (a NIC's link_down episode, open from t0 + 1 s, 3 DOWNs) and
 * a member of it, each attached to job 4242.0 with one rank, beside the
 * lane_outlier (id outlier) test_views stored: job_incidents lists the two
 * incidents with the ranks' union, the throughput before and during each
 * (32 and 16 Gbit/s: add_lanes' two intervals) and the lane outages
 * through the NIC from its start (lane 1 at 0.9 s began before it). */
static void test_incidents(struct fq_db *db, int64_t t0, int64_t outlier)
{
	uint32_t r0 = 0, r1 = 1;
	struct fq_db_anomaly_job h0 = {4242, 0, &r0, 1}, h1 = {4242, 0, &r1, 1};
	struct fq_db_anomaly root = {.kind = "link_down",
				     .severity = FQ_DB_SEV_CRITICAL,
				     .start_ns = t0 + SEC,
				     .node = "a",
				     .nic = "eth0",
				     .summary = "eth0 of a down (all 3 paths down)"};
	struct fq_db_anomaly member = {.kind = "flapping",
				       .severity = FQ_DB_SEV_CRITICAL,
				       .start_ns = t0 + 2 * SEC,
				       .node = "a",
				       .nic = "eth0",
				       .summary = "eth0 of a went down 9 times in 1h (more than 8)"};
	int64_t id = 0, mid = 0;
	int rc;

	rc = fq_db_insert_anomaly(db, &root, &h0, 1, &id);
	member.incident_id = id;
	rc |= fq_db_insert_anomaly(db, &member, &h1, 1, &mid);
	rc |= fq_db_update_anomaly(db, id, 3, t0 + SEC * 5 / 2, "eth0 of a down 3 times", NULL);
	is_int(rc, 0, "an incident, a member of it, its 3 DOWNs");
	is_str(qf("select concat_ws(' ', kind, events, extract(epoch from last_at - first_at), member_kinds, "
		  "ranks, gbps_before, gbps_during, lanes_failed_over, outages) from fabriciq.job_incidents "
		  "where job_id = 4242 and incident_id = %" PRId64,
		  outlier),
	       "lane_outlier 1 0.000000 {} {0,1} 32.000 16.000 0 0",
	       "job_incidents: the lane_outlier (no outage on its path) ...");
	is_str(qf("select concat_ws(' ', kind, events, extract(epoch from last_at - first_at), member_kinds, "
		  "ranks, gbps_before, gbps_during, lanes_failed_over, outages, summary, end_time is null) "
		  "from fabriciq.job_incidents where job_id = 4242 and incident_id = %" PRId64,
		  id),
	       "link_down 3 1.500000 {flapping} {0,1} 32.000 16.000 2 3 eth0 of a down 3 times t",
	       "... and the link episode: its member, both ranks, 2 lanes failed over in 3 outages");
	is_str(qf("select count(*) from fabriciq.anomaly_jobs where anomaly_id = %" PRId64, mid), "0",
	       "a member's attachment is its incident's");
	is_str(qf("select count(*) from fabriciq.job_incidents where incident_id = %" PRId64, mid), "0",
	       "the member is no incident of its own");
	is_int(fq_db_update_anomaly(db, outlier, 2, t0, "x", NULL), -ENOENT,
	       "updating a closed anomaly: -ENOENT");
}

static void test_views(struct fq_db *db)
{
	int64_t now = fq_realtime_ns(), t0 = now - 600 * SEC;
	struct fq_db_step step = {.job_id = 4242,
				  .step_id = 0,
				  .uid = 1000,
				  .mode = "monitor",
				  .node_count = 2,
				  .task_count = 2,
				  .start_ns = t0 - SEC};
	struct fq_db_rank r0 = {4242, 0, 0, 0, "a", "eth0", 100}, r1 = {4242, 0, 1, 0, "b", "eth0", 200};
	uint32_t ranks[] = {1, 0, 1};
	struct fq_db_anomaly_job hit = {4242, 0, ranks, 3};
	struct fq_db_anomaly an = {.kind = "lane_outlier",
				   .severity = FQ_DB_SEV_WARNING,
				   .start_ns = t0 + SEC,
				   .end_ns = t0 + 2 * SEC,
				   .node = "a",
				   .nic = "eth0",
				   .remote_node = "b",
				   .remote_nic = "eth0",
				   .summary = "lane 0->1/1 p99 94 us vs 4 us",
				   .evidence_json = "{\"p99_us\": 94, \"median_us\": 4}"};
	/* Lane 1 of connection 77 (rank 0 on a -> rank 1 on b): out from 0.9 s
	 * to 1.5 s, seen by both ends; out from 3.0 s to 3.2 s, seen only by
	 * the receiver (an idle sender); out at 5 s and never back; a steering
	 * move, which is no outage. Lane 0: one sender-only outage. */
#define FO(AT, LANE, SEND, CAUSE, BACK)                                                                      \
	{                                                                                                    \
		.time_ns = t0 + (AT), .job_id = 4242, .src_rank = 0, .dst_rank = 1, .from_lane = LANE,       \
		.to_lane = LANE, .node = (SEND) ? "a" : "b", .local_nic = (SEND) ? "eth0" : "eth1",          \
		.remote_nic = (SEND) ? "eth1" : "eth0", .cause = CAUSE,                                      \
		.bytes_resent = (SEND) && !(BACK) ? 4096 : 0, .failback = BACK, .conn_id = 77,               \
		.is_send = SEND                                                                              \
	}
	struct fq_db_failover_event fo[] = {
	    FO(SEC, 1, true, "no-progress", false),         FO(SEC * 3 / 2, 1, true, "failback", true),
	    FO(SEC * 9 / 10, 1, false, "path-down", false), FO(SEC * 14 / 10, 1, false, "failback", true),
	    FO(3 * SEC, 1, false, "path-down", false),      FO(SEC * 32 / 10, 1, false, "failback", true),
	    FO(5 * SEC, 1, true, "socket-error", false),    FO(4 * SEC, 1, true, "steer", false),
	    FO(2 * SEC, 0, true, "path-down", false),       FO(SEC * 21 / 10, 0, true, "failback", true),
	};
#undef FO
	struct fq_db_job_efficiency *eff = NULL;
	int64_t id = 0;
	size_t n = 0;
	int rc = 0;
	const char *nodes[] = {"a", "b", "c", "d"};

	for (int i = 0; i < 4; i++) {
		struct fq_db_node node = {.name = nodes[i], .seen_ns = now};

		if (!rc && (rc = fq_db_upsert_node(db, &node)))
			diag("%s", fq_db_error(db));
	}
	if (!rc && (rc = fq_db_upsert_step(db, &step)))
		diag("%s", fq_db_error(db));
	rc |= fq_db_upsert_rank(db, &r0);
	rc |= fq_db_upsert_rank(db, &r1);
	rc |= fq_db_insert_anomaly(db, &an, &hit, 1, &id);
	is_int(rc, 0, "upserts and the anomaly stored");
	if (rc)
		diag("%s", fq_db_error(db));
	add_lanes(db, t0);
	add_links(db, now);
	add_clocks(db, now);
	fq_db_add_failover_events(db, fo, sizeof(fo) / sizeof(fo[0]));
	ok(fq_db_flush(db) == 8 + 2 + 6 + 5 + 10, "the data set flushed");

	is_str(q("select concat_ws(' ', lanes, bytes, achieved_gbps, best_gbps, efficiency, degraded_share, "
		 "median_lane_p99_us, slowest_lane_p99_us, slowest_lanes[1], anomalies, failovers) "
		 "from fabriciq.job_efficiency where job_id = 4242 and step_id = 0"),
	       "4 6000000000 24.000 32.000 0.750 0.500 4.0 49.0 0->1/1 49.0 us 1 4",
	       "job_efficiency: bytes, achieved vs best, degraded share, slowest lane, anomalies, failovers");

	is_str(q("select string_agg(concat_ws(' ', lane, extract(epoch from down_at - (select min(time) from "
		 "fabriciq.failover_events f "
		 "where f.job_id = 4242))::numeric(4,1), "
		 "coalesce((out_ns / 1e6)::int::text, 'open'), src_rank || '->' || dst_rank, src_nic || '->' "
		 "|| dst_nic, "
		 "cause, seen_by, bytes_resent), ', ' order by down_at) from fabriciq.lane_outages where "
		 "job_id = 4242"),
	       "1 0.0 600 0->1 eth0->eth1 no-progress both 4096, 0 1.1 100 0->1 eth0->eth1 path-down sender "
	       "4096, "
	       "1 2.1 200 0->1 eth0->eth1 path-down receiver 0, 1 4.1 open 0->1 eth0->eth1 socket-error "
	       "sender 4096",
	       "lane_outages: both ends' reports of one outage merged, a receiver-only one kept, steering "
	       "left out");

	is_int(fq_db_job_efficiency(db, 4242, &eff, &n), 0, "fq_db_job_efficiency");
	is_int(n, 1, "... one step");
	if (n == 1) {
		ok(fabs(eff[0].achieved_gbps - 24.0) < 1e-9 && fabs(eff[0].best_gbps - 32.0) < 1e-9 &&
		       fabs(eff[0].efficiency - 0.75) < 1e-9 && fabs(eff[0].degraded_share - 0.5) < 1e-9,
		   "... throughput figures");
		is_str(eff[0].slowest_lanes[0], "0->1/1 49.0 us", "... slowest lane first");
		is_str(eff[0].slowest_lanes[1], "0->1/0 4.0 us", "... then the others");
		ok(eff[0].bytes == 6000000000ULL && eff[0].lanes == 4 && eff[0].anomalies == 1 &&
		       eff[0].failovers == 4 && eff[0].first_interval_ns == t0 / 1000 * 1000,
		   "... bytes, lanes, counts, first interval");
	}
	free(eff);
	fq_db_job_efficiency(db, 999999, &eff, &n);
	is_int(n, 0, "an unknown job has no rows");
	free(eff);

	is_str(q("select concat_ws(' ', state, flaps_1h, flaps_24h, windows_1h, sent_1h, lost_1h, loss_1h, "
		 "owd_fwd_p50_us, rtt_p50_us) from fabriciq.link_health "
		 "where src_node = 'a' and src_nic = 'eth0' and dst_node = 'b' and dst_nic = 'eth0'"),
	       "up 3 4 2 200 10 0.0500 5.5 10.0", "link_health: flaps 1 h/24 h, loss, delay");

	is_str(q("select concat_ws(' ', job_id, step_id, ranks, kind, severity, duration, node, nic, "
		 "evidence->>'p99_us') from fabriciq.job_anomalies where job_id = 4242"),
	       "4242 0 {0,1} lane_outlier warning 00:00:01 a eth0 94",
	       "job_anomalies: the anomaly and its ranks");

	is_str(q("select string_agg(node || ':' || status, ' ' order by node) from fabriciq.clock_status "
		 "where node in ('a', 'b', 'c', 'd')"),
	       "a:ok b:stale c:no reports d:unsynchronised",
	       "clock_status: ok, stale, no reports, unsynchronised");
	is_str(q("select concat_ws(' ', applied_offset_ns, applied_error_ns, correction_epoch, peers, "
		 "worst_peer_error_ns) from fabriciq.clock_status where node = 'a'"),
	       "1200 500 3 2 900", "clock_status: a's latest report only");

	test_incidents(db, t0, id);

	is_int(fq_db_close_anomaly(db, id, t0 + 3 * SEC), -ENOENT,
	       "closing an anomaly already closed: -ENOENT");
	struct fq_db_anomaly bad = an;
	bad.kind = "gremlins";
	ok(fq_db_insert_anomaly(db, &bad, NULL, 0, &id) == -EINVAL, "an unknown anomaly kind: -EINVAL");
	like(fq_db_error(db), "anomalies_kind_check", "... naming the constraint");
	struct fq_db_drain_hint hint = {"a", "eth0", false, "fabriciq: eth0 flapping 9 in 1h", 0, now, NULL};
	is_int(fq_db_insert_drain_hint(db, &hint, &id), 0, "a drain hint");
}

/* Hints (schema 14): a node's drain, and a fabric hint, 'check', with the
 * component and what to check but no node; neither without its place. */
static void test_hints(struct fq_db *db)
{
	int64_t now = fq_realtime_ns(), id = 0, hid = 0;
	struct fq_db_anomaly spine = {.kind = "fabric_delay",
				      .severity = FQ_DB_SEV_WARNING,
				      .start_ns = now - SEC,
				      .component = "spine3",
				      .summary = "spine3 congested: 12 delayed paths cross it"};
	struct fq_db_drain_hint check = {.reason = "check spine3: its buffer and queue occupancy",
					 .created_ns = now,
					 .component = "spine3"};
	struct fq_db_drain_hint bad = check;

	is_int(fq_db_insert_anomaly(db, &spine, NULL, 0, &id), 0, "a fabric incident on spine3");
	check.anomaly_id = id;
	is_int(fq_db_insert_drain_hint(db, &check, &hid), 0, "its fabric hint");
	is_str(qf("select concat_ws('|', coalesce(node, '-'), coalesce(nic, '-'), action, component, reason, "
		  "applied_at is null) from fabriciq.drain_hints where id = %" PRId64
		  " and anomaly_id = %" PRId64,
		  hid, id),
	       "-|-|check|spine3|check spine3: its buffer and queue occupancy|t",
	       "... stored: action check, the component, what to check, the incident, no node");
	bad.node = "n1";
	is_int(fq_db_insert_drain_hint(db, &bad, NULL), -EINVAL, "a fabric hint with a node: -EINVAL");
	like(fq_db_error(db), "no node, NIC or resume", "... saying why");
	bad.node = NULL, bad.resume = true;
	is_int(fq_db_insert_drain_hint(db, &bad, NULL), -EINVAL, "a fabric hint to resume: -EINVAL");
	bad = (struct fq_db_drain_hint){.reason = "fabriciq: x", .created_ns = now};
	is_int(fq_db_insert_drain_hint(db, &bad, NULL), -EINVAL, "a drain hint without a node: -EINVAL");
	like(fq_db_error(db), "node is missing", "... saying so");
	like(q("insert into fabriciq.drain_hints (node, action, reason, component, created_at) "
	       "values ('n1', 'check', 'x', 'spine3', now())"),
	     "drain_hints_place_check", "the schema refuses a check of a node too, naming the constraint");
	like(q("insert into fabriciq.drain_hints (node, action, reason, component, created_at) "
	       "values ('n1', 'drain', 'fabriciq: x', 'spine3', now())"),
	     "drain_hints_place_check", "... a drain with a component");
	like(q("insert into fabriciq.drain_hints (action, reason, created_at) values ('drain', 'x', now())"),
	     "drain_hints_place_check", "... a drain of no node");
	like(q("insert into fabriciq.drain_hints (node, action, reason, created_at) "
	       "values ('n1', 'reboot', 'x', now())"),
	     "drain_hints_action_check", "... an unknown action");
}

/* The job report's rank NICs: merged from the lanes' sides into
 * fabriciq.ranks.nic at flush, or filled from stored lane windows when the
 * rank is stored after them. */
static void test_rank_nics(struct fq_db *db)
{
	int64_t now = fq_realtime_ns();
	struct fq_db_step step = {.job_id = 777, .step_id = 3, .uid = 1000, .start_ns = now - SEC};
	struct fq_db_rank r0 = {777, 3, 0, 0, "a", NULL, 100}, r1 = {777, 3, 1, 0, "b", NULL, 200},
			  r2 = {777, 3, 2, 1, "b", NULL, 201};
	struct fq_db_lane_window lw = {.interval_start_ns = now - SEC,
				       .interval_end_ns = now,
				       .job_id = 777,
				       .step_id = 3,
				       .src_rank = 2,
				       .dst_rank = 0,
				       .lane_kind = "tcp",
				       .src_node = "b",
				       .src_nic = "rail1",
				       .dst_node = "a",
				       .dst_nic = "rail0",
				       .bytes = 1};
	int rc = fq_db_upsert_step(db, &step);

	rc |= fq_db_upsert_rank(db, &r0);
	rc |= fq_db_upsert_rank(db, &r1);
	is_int(rc, 0, "rank NICs: step and two ranks stored without a NIC");
	is_str(q("select coalesce(string_agg(nic, ' '), 'none') from fabriciq.ranks where job_id = 777"),
	       "none", "... no NIC yet");
	rc = fq_db_add_rank_nic(db, 777, 3, 0, "a", "rail0");
	rc |= fq_db_add_rank_nic(db, 777, 3, 1, "b", "rail1");
	rc |= fq_db_add_rank_nic(db, 777, 3, 0, "a", "rail1");
	rc |= fq_db_add_rank_nic(db, 777, 3, 1, "a", "rail0"); /* not its node: ignored */
	rc |= fq_db_add_rank_nic(db, 777, 3, 2, "b", "rail1"); /* not stored yet */
	rc |= fq_db_add_lane_windows(db, &lw, 1);
	is_int(rc, 0, "... five rank NICs and a lane buffered");
	is_int(fq_db_add_rank_nic(db, 777, 3, 0, "a", NULL), -EINVAL, "... a missing NIC refused");
	is_int(fq_db_add_rank_nic(db, 777, 3, 0, "a", "\xff"), -EILSEQ, "... a non-UTF-8 NIC refused");
	is_int(fq_db_flush(db), 1, "... flushed with the lane");
	is_str(
	    q("select string_agg(rank || '=' || coalesce(nic, '-'), ' ' order by rank) from fabriciq.ranks "
	      "where job_id = 777"),
	    "0=rail0,rail1 1=rail1", "... merged per rank: sorted, comma-separated, its own node only");
	is_int(fq_db_upsert_rank(db, &r2), 0, "... a rank stored after its lanes");
	is_str(q("select nic from fabriciq.ranks where job_id = 777 and rank = 2"), "rail1",
	       "... gets its NIC from the stored lane windows");
	fq_db_add_rank_nic(db, 777, 3, 0, "a", "rail0");
	is_int(fq_db_flush(db), 0, "... a known NIC again: nothing to write");
	is_str(q("select nic from fabriciq.ranks where job_id = 777 and rank = 0"), "rail0,rail1",
	       "... the list unchanged");
	fq_db_add_rank_nic(db, 777, 3, 1, "b", "rail1");
	fq_db_discard(db);
	is_int(fq_db_flush(db), 0, "... discarded with the batch");
	q("delete from fabriciq.lane_windows where job_id = 777");
	q("delete from fabriciq.steps where job_id = 777");
}

/* Lane windows go as COPY binary: a number that does not fit its column
 * is refused when added (text COPY refused it at the server), not wrapped;
 * the edges that fit are stored exactly. */
/* A step's end per node (schema 8) and its summary; a StepEnd without its
 * StepStart (the controller restarted between them) keeps the step's mode. */
static void test_step_ends(struct fq_db *db)
{
	int64_t now = (int64_t)time(NULL) * SEC;
	struct fq_db_step start = {.job_id = 888,
				   .step_id = 1,
				   .uid = 1001,
				   .mode = "control",
				   .node_count = 2,
				   .task_count = 2,
				   .start_ns = now - 2 * SEC};
	struct fq_db_step end = {
	    .job_id = 888, .step_id = 1, .start_ns = now, .end_ns = now, .has_exit_status = true};
	int rc = fq_db_upsert_step(db, &start);

	rc |= fq_db_upsert_step(db, &end);
	is_int(rc, 0, "a step and its end");
	is_int(fq_db_step_node_end(db, 888, 1, "a", now) * 10 +
		   fq_db_step_node_end(db, 888, 1, "a", now + SEC),
	       10, "node a's end: 1 (recorded), again: 0 (a replay)");
	is_str(q("select concat_ws(' ', mode, uid, node_count, nodes_ended, incidents, anomalies, failovers, "
		 "end_time is not null) from fabriciq.step_summary(888, 1)"),
	       "control 1001 2 1 0 0 0 t",
	       "step_summary: the end without its start kept the mode; node a counted once, of 2");
	is_int(fq_db_step_node_end(db, 888, 1, "b", now), 1, "node b's end");
	is_str(q("select nodes_ended from fabriciq.step_summary(888, 1)"), "2", "... 2 of 2: complete");
	is_int(fq_db_step_node_end(db, 888, 9, "a", now), -ENOENT,
	       "the end of a step never started: -ENOENT");
}

static void test_lane_ranges(struct fq_db *db)
{
	struct fq_db_lane_window lw = {.interval_start_ns = -1,
				       .interval_end_ns = 1700000000123456789LL,
				       .job_id = INT64_MAX,
				       .step_id = UINT32_MAX,
				       .src_rank = INT32_MAX,
				       .lane_kind = "tcp",
				       .src_node = "a",
				       .src_nic = "n",
				       .dst_node = "b",
				       .dst_nic = "n",
				       .bytes = INT64_MAX,
				       .owd_p99_ns = -5};
	struct fq_db_lane_window bad = lw;

	bad.dst_rank = (uint32_t)INT32_MAX + 1;
	is_int(fq_db_add_lane_windows(db, &bad, 1), -ERANGE, "lane ranges: a rank above int4 refused");
	bad = lw;
	bad.job_id = (uint64_t)INT64_MAX + 1;
	is_int(fq_db_add_lane_windows(db, &bad, 1), -ERANGE, "... a job id above int8 refused");
	is_int(fq_db_add_lane_windows(db, &lw, 1), 0, "... the largest values that fit accepted");
	is_int(fq_db_flush(db), 1, "... and stored");
	is_str(q("select concat_ws(' ', interval_start, interval_end, job_id, step_id, src_rank, bytes, "
		 "owd_min_ns,"
		 " owd_p99_ns, synchronised) from fabriciq.lane_windows where job_id = 9223372036854775807"),
	       "1969-12-31 23:59:59.999999+00 2023-11-14 22:13:20.123456+00 9223372036854775807 4294967295 "
	       "2147483647 9223372036854775807 -5 f",
	       "... exactly (times truncated to the us towards the past, 0 delays NULL)");
	q("delete from fabriciq.lane_windows where job_id = 9223372036854775807");
}

static void test_partitions(struct fq_db *db)
{
	struct fq_db_lane_window lw = {
	    .interval_start_ns = 1893801600LL * SEC, /* 2030-01-05 00:00 UTC: no partition yet */
	    .interval_end_ns = 1893801601LL * SEC,
	    .job_id = 9,
	    .lane_kind = "tcp",
	    .src_node = "a",
	    .src_nic = "eth0",
	    .dst_node = "b",
	    .dst_nic = "eth0",
	    .synchronised = true,
	};
	struct fq_db_link_event old = {1577836800LL * SEC, 1577836800LL * SEC, "a", "eth0", NULL, NULL,
				       FQ_DB_LINK_DOWN,    "carrier",          true}; /* 2020-01-01 */
	struct fq_db_partition *parts = NULL;
	size_t n = 0, found = 0;

	is_str(q("select fabriciq.create_partitions('2030-01-01', 2)"), "12",
	       "create_partitions: 6 tables x 2 days");
	is_str(q("select fabriciq.create_partitions('2030-01-01', 2)"), "0", "... again: none");
	fq_db_add_lane_windows(db, &lw, 1);
	fq_db_add_link_events(db, &old, 1);
	is_int(fq_db_flush(db), 2, "rows for days without a partition are stored");
	is_str(q("select tableoid::regclass from fabriciq.lane_windows where job_id = 9"),
	       "fabriciq.lane_windows_default", "... in the default partition");
	is_str(q("select fabriciq.create_partition('lane_windows', '2030-01-05')"), "t",
	       "create that day's partition");
	is_str(q("select tableoid::regclass from fabriciq.lane_windows where job_id = 9"),
	       "fabriciq.lane_windows_p20300105", "... the row moved into it");
	is_int(fq_db_partitions(db, &parts, &n), 0, "fq_db_partitions");
	for (size_t i = 0; i < n; i++)
		found += !strcmp(parts[i].name, "lane_windows_p20300105") &&
			 parts[i].start_ns == 1893801600LL * SEC && parts[i].end_ns == 1893888000LL * SEC;
	is_int(found, 1, "... lists it with its range");
	free(parts);

	/* At 2030-03-01, 30-day tables keep nothing before 2030-01-30; link
	 * events (365 days) keep their 2030 partitions. */
	ok(atoi(q("select fabriciq.drop_expired_partitions('2030-03-01')")) >= 3 * 3,
	   "drop_expired_partitions at 2030-03-01");
	is_str(q("select to_regclass('fabriciq.lane_windows_p20300105') is null and "
		 "to_regclass('fabriciq.probe_windows_p20300101') is null"),
	       "t", "... dropped the 30-day tables' old partitions");
	is_str(q("select count(*) from fabriciq.lane_windows where job_id = 9"), "0", "... with their rows");
	is_str(q("select to_regclass('fabriciq.link_events_p20300101') is not null"), "t",
	       "... kept link_events' (365 days)");
	is_str(q("select count(*) from fabriciq.link_events where time < '2021-01-01'"), "0",
	       "... and deleted expired rows from the default partition");
}

/* Routes of a path's probe flows (sql/016_path_flows.sql): each flow its
 * own history; path_routes_current and route_changes are flow 0's. */
static void test_flow_routes(struct fq_db *db)
{
	const char *h0[] = {"198.19.0.2", "198.18.101.1", "198.18.102.0"};
	const char *h1[] = {"198.19.0.2", "198.18.101.3", "198.18.102.2"};
	const char *h2[] = {"198.19.0.2", "", "198.18.102.4"};
	struct fq_db_route r = {.node = "fn1",
				.nic = "rail0",
				.remote_node = "fn2",
				.remote_nic = "rail0",
				.hops = h0,
				.n_hops = 3,
				.reached = true,
				.time_ns = 1893456000000000000LL};

	is_int(fq_db_put_route(db, &r), 0, "flow 0's route stored");
	r.flow = 1, r.hops = h1, r.time_ns += 1000000000;
	is_int(fq_db_put_route(db, &r), 0, "flow 1's, over another spine");
	r.time_ns += 1000000000;
	is_int(fq_db_put_route(db, &r), 0, "flow 1's again (a resend)");
	r.hops = h2, r.time_ns += 1000000000;
	is_int(fq_db_put_route(db, &r), 0, "flow 1's changed");
	is_str(q("select count(*) from fabriciq.path_routes where node = 'fn1'"), "3",
	       "three rows: flow 0's, flow 1's two routes (the resend moved last_seen)");
	is_str(q("select count(*) || ' ' || min(hops::text) from fabriciq.path_routes_current where node = "
		 "'fn1'"),
	       "1 {198.19.0.2,198.18.101.1,198.18.102.0}",
	       "path_routes_current: the path's one route, flow 0's");
	is_str(q("select string_agg(flow || ':' || hops::text, ' ' order by flow) from "
		 "fabriciq.path_flow_routes_current where node = 'fn1'"),
	       "0:{198.19.0.2,198.18.101.1,198.18.102.0} 1:{198.19.0.2,NULL,198.18.102.4}",
	       "path_flow_routes_current: each flow's latest");
	is_str(q("select count(*) from fabriciq.route_changes where node = 'fn1'"), "0",
	       "route_changes: flow 0's only (flow 1's change is not the path's)");
	r.flow = FQ_DB_ROUTE_MAX_FLOW + 1;
	is_int(fq_db_put_route(db, &r), -EINVAL, "a flow past FQ_DB_ROUTE_MAX_FLOW: -EINVAL");
}

int main(void)
{
	struct fq_db *db = NULL;
	char err[512];

	if (!getenv("FQ_TEST_PG"))
		skip_all("no private PostgreSQL (run through tests/db/with-postgres.sh)");
	pg = PQconnectdb("");
	if (PQstatus(pg) != CONNECTION_OK) {
		printf("Bail out! cannot connect to the test server: %s", PQerrorMessage(pg));
		return 1;
	}
	PQclear(PQexec(pg, "set timezone = 'UTC'"));
	is_int(fq_db_create(NULL, &db, err, sizeof(err)), 0, "connect (PG* environment)");
	if (!db) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	test_migrations(db);
	test_hostile_strings(db);
	test_atomic_flush(db);
	test_statement_timeout();
	test_views(db);
	test_hints(db);
	test_rank_nics(db);
	test_step_ends(db);
	test_lane_ranges(db);
	test_partitions(db);
	test_flow_routes(db);
	fq_db_destroy(db);
	PQfinish(pg);
	return done_testing();
}
