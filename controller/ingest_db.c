/*
 * ingest_db: the database connection's health for ingest (ingest_int.h):
 * connecting (and migrating) when needed, down and retried after a
 * growing backoff, a short statement timeout while retrying.
 */
#include "controller/ingest_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "db/db.h"

/* ---- database connection ------------------------------------------- */

void ing_db_down(struct fq_ingest *ing, const char *what)
{
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC);

	if (!ing->down)
		fq_warn("database unavailable (%s): frames go to the spool %s until it is back", what,
			ing->spool_dir);
	ing->down = true;
	ing->backoff_ns = ing->backoff_ns ? ing->backoff_ns * 2 : ing->cfg.backoff_min_ns;
	if (ing->backoff_ns > ing->cfg.backoff_max_ns)
		ing->backoff_ns = ing->cfg.backoff_max_ns;
	ing->retry_ns = now + ing->backoff_ns;
}

/* The statement timeout for a retry while down, else the configured one. */
static void set_timeout(struct fq_ingest *ing, bool retry)
{
	int ms = ing->cfg.statement_timeout_ms;

	if (retry && ms > RETRY_TIMEOUT_MS)
		ms = RETRY_TIMEOUT_MS;
	if (ing->db && ing->timeout_ms != ms && fq_db_set_statement_timeout(ing->db, ms) == 0)
		ing->timeout_ms = ms;
}

void ing_db_ok(struct fq_ingest *ing)
{
	if (ing->down) {
		fq_info("database is back");
		set_timeout(ing, false);
	}
	ing->down = false;
	ing->backoff_ns = 0;
}

static int migrate(struct fq_db *db, char *err, size_t errlen)
{
	int rc = fq_db_migrate(db, NULL);

	if (rc < 0)
		snprintf(err, errlen, "migrating the schema: %s", fq_db_error(db));
	return rc;
}

/* Opens *db off the loop (dbconnect.h): true once it is open. Until then
 * false; a failed open is the database down (the callers wait out its
 * backoff). A lost connection is opened again the same way, never reset
 * on the loop. */
bool ing_db_open(struct fq_ingest *ing, struct fq_db **db, struct fq_dbconnect **open,
		 const struct fq_db_options *o, fq_dbconnect_setup_fn setup)
{
	char err[512];
	int rc;

	if (*db && fq_db_broken(*db)) {
		fq_db_destroy(*db);
		*db = NULL;
	}
	if (*db)
		return true;
	if (!*open) {
		if ((rc = fq_dbconnect_start(open, o, setup)) < 0) {
			snprintf(err, sizeof(err), "cannot start connecting: %s", strerror(-rc));
			ing_db_down(ing, err);
			return false;
		}
	}
	if (fq_dbconnect_poll(*open, db, err, sizeof(err)) == 0)
		return false;
	*open = NULL;
	if (!*db) {
		ing_db_down(ing, err);
		return false;
	}
	return true;
}

/* True if the database may be used now (connecting when needed). */
bool ing_db_usable(struct fq_ingest *ing)
{
	struct fq_db_options o = {
	    .conninfo = ing->conninfo,
	    .connect_timeout_s = ing->cfg.connect_timeout_s,
	};

	if (ing->down && fq_clock_ns(CLOCK_MONOTONIC) < ing->retry_ns)
		return false;
	if (!ing->db || fq_db_broken(ing->db)) {
		if (!ing_db_open(ing, &ing->db, &ing->db_open, &o, ing->cfg.migrate ? migrate : NULL))
			return false;
		fq_info("database connected");
		/* After the migration, which may legitimately take long. */
		ing->timeout_ms = 0;
	}
	set_timeout(ing, ing->down);
	if (ing_load_seqs(ing) < 0) {
		ing_db_down(ing, "cannot read fabriciq.agent_seq");
		return false;
	}
	return true;
}
