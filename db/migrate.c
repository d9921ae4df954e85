/*
 * migrate: schema version, migrations, partition maintenance and listing.
 */
#include "db/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/migrations.h"

/* pg_advisory_lock key held while migrating: "fqmigrat" in ASCII. Every
 * fabriciq migrator takes it, so two started at once apply each migration
 * once: the second waits, then finds nothing left to do. */
#define MIGRATE_LOCK_KEY "7381801563711496564"

int fq_db_schema_version(struct fq_db *db, int *version)
{
	PGresult *res;
	int rc, exists;

	/* An empty database has no schema_version table yet; a query naming
	 * it would fail to plan, so ask the catalog first. */
	res = fq_db_run(db, "reading the schema version",
			"select to_regclass('fabriciq.schema_version') is not null", NULL, &rc);
	if (!res)
		return rc;
	exists = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	*version = 0;
	if (!exists)
		return 0;
	res = fq_db_run(db, "reading the schema version",
			"select coalesce(max(version), 0) from fabriciq.schema_version", NULL, &rc);
	if (!res)
		return rc;
	*version = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

/* Applies one migration and records it, in one transaction. */
static int apply(struct fq_db *db, const struct fq_db_migration *m)
{
	struct fq_db_params p = {0};
	char what[128];
	int rc;

	snprintf(what, sizeof(what), "migration %s", m->name);
	rc = fq_db_exec(db, what, "begin", NULL);
	if (rc)
		return rc;
	rc = fq_db_exec(db, what, m->sql, NULL);
	if (rc)
		goto rollback;
	fq_db_param_i64(&p, m->version);
	fq_db_param_str(&p, m->name);
	rc = fq_db_exec(db, what, "insert into fabriciq.schema_version (version, name) values ($1, $2)", &p);
	if (rc)
		goto rollback;
	return fq_db_exec(db, what, "commit", NULL);

rollback:
	/* Keep the migration's error, not the rollback's. */
	PQclear(PQexec(db->conn, "rollback"));
	return rc;
}

int fq_db_migrate(struct fq_db *db, int *applied)
{
	int rc, unlock_rc, version, n = 0;

	if (applied)
		*applied = 0;
	rc = fq_db_exec(db, "taking the migration lock", "select pg_advisory_lock(" MIGRATE_LOCK_KEY ")",
			NULL);
	if (rc)
		return rc;
	rc = fq_db_schema_version(db, &version);
	if (rc)
		goto unlock;
	if (version > fq_db_code_version()) {
		fq_db_set_error(
		    db,
		    "the database schema is version %d, newer than this fabriciq knows (version %d): "
		    "upgrade fabriciq; nothing was changed",
		    version, fq_db_code_version());
		rc = -EPROTONOSUPPORT;
		goto unlock;
	}
	for (size_t i = 0; i < fq_db_nmigrations; i++) {
		if (fq_db_migrations[i].version <= version)
			continue;
		rc = apply(db, &fq_db_migrations[i]);
		if (rc)
			goto unlock;
		n++;
	}
	rc = fq_db_maintain(db, NULL, NULL);

unlock:
	unlock_rc = fq_db_exec(db, "releasing the migration lock",
			       "select pg_advisory_unlock(" MIGRATE_LOCK_KEY ")", NULL);
	if (!rc)
		rc = unlock_rc;
	if (applied)
		*applied = n;
	return rc;
}

int fq_db_maintain(struct fq_db *db, int *created, int *dropped)
{
	PGresult *res;
	int rc;

	res = fq_db_run(db, "maintaining partitions",
			"select created, dropped from fabriciq.maintain_partitions()", NULL, &rc);
	if (!res)
		return rc;
	if (created)
		*created = atoi(PQgetvalue(res, 0, 0));
	if (dropped)
		*dropped = atoi(PQgetvalue(res, 0, 1));
	PQclear(res);
	return 0;
}

static int64_t us_to_ns(PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10) * 1000;
}

int fq_db_partitions(struct fq_db *db, struct fq_db_partition **parts, size_t *n)
{
	struct fq_db_partition *out;
	PGresult *res;
	int rc, rows;

	*parts = NULL;
	*n = 0;
	res = fq_db_run(db, "listing partitions",
			"select table_name, partition_name, "
			"(extract(epoch from range_start) * 1000000)::int8, "
			"(extract(epoch from range_end) * 1000000)::int8, estimated_rows "
			"from fabriciq.partitions order by table_name, range_start nulls first",
			NULL, &rc);
	if (!res)
		return rc;
	rows = PQntuples(res);
	out = calloc(rows ? (size_t)rows : 1, sizeof(*out));
	if (!out) {
		PQclear(res);
		fq_db_set_error(db, "listing partitions: out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < rows; i++) {
		snprintf(out[i].table, sizeof(out[i].table), "%s", PQgetvalue(res, i, 0));
		snprintf(out[i].name, sizeof(out[i].name), "%s", PQgetvalue(res, i, 1));
		out[i].start_ns = us_to_ns(res, i, 2);
		out[i].end_ns = us_to_ns(res, i, 3);
		out[i].estimated_rows = strtoll(PQgetvalue(res, i, 4), NULL, 10);
	}
	PQclear(res);
	*parts = out;
	*n = (size_t)rows;
	return 0;
}
