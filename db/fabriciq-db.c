/*
 * fabriciq-db: create and upgrade the fabriciq schema, show its state,
 * maintain its partitions. Will become `fabriciq db ...` in the CLI.
 * Exit codes (doc/fabriciq-db.8): 0 ok, 1 failure, 2 usage, 3 the
 * database schema is newer than this tool, 4 (status) migration needed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/encode.h"

enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_TOO_NEW = 3,
	EXIT_NEEDS_MIGRATION = 4,
};

struct opts {
	const char *conninfo;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: fabriciq-db [OPTIONS] COMMAND\n"
		"Create, upgrade and inspect the fabriciq PostgreSQL schema.\n"
		"\n"
		"Commands:\n"
		"  migrate    apply the missing migrations (idempotent), create upcoming partitions\n"
		"  status     schema version and partitions of the time-series tables\n"
		"  maintain   create the next days' partitions, drop those past retention\n"
		"\n"
		"Options:\n"
		"  -d, --conninfo=STR  libpq connection string or URI (default: PGHOST, PGDATABASE... )\n"
		"  -j, --json          machine-readable output\n"
		"  -h, --help          this help\n"
		"  -V, --version       the version\n"
		"\n"
		"Exit status: 0 ok; 1 failure (connection, SQL); 2 usage; 3 the database schema is\n"
		"newer than this fabriciq; 4 (status) the schema needs `fabriciq-db migrate`.\n"
		"This fabriciq knows schema version %d.\n",
		fq_db_code_version());
}

static void print_json(struct json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

static int cmd_migrate(struct fq_db *db, const struct opts *o)
{
	int rc, applied = 0, version = 0;

	rc = fq_db_migrate(db, &applied);
	if (rc) {
		fprintf(stderr, "fabriciq-db: migrate: %s\n", fq_db_error(db));
		return rc == -EPROTONOSUPPORT ? EXIT_TOO_NEW : EXIT_FAIL;
	}
	if (fq_db_schema_version(db, &version)) {
		fprintf(stderr, "fabriciq-db: migrate: %s\n", fq_db_error(db));
		return EXIT_FAIL;
	}
	if (o->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "schema_version", json_object_new_int(version));
		json_object_object_add(j, "applied", json_object_new_int(applied));
		print_json(j);
	} else if (applied) {
		printf("schema migrated to version %d (%d migration%s applied)\n", version, applied,
		       applied == 1 ? "" : "s");
	} else {
		printf("schema at version %d: up to date, nothing applied\n", version);
	}
	return EXIT_OK;
}

/* "2026-11-22 00:00:00" or "" for the default partition. */
static const char *bound(int64_t ns, char out[FQ_TS_LEN])
{
	if (!ns) {
		out[0] = '\0';
		return out;
	}
	fq_ts_format(ns, out);
	out[19] = '\0'; /* whole seconds, UTC */
	return out;
}

static void print_partitions(const struct fq_db_partition *p, size_t n, struct json_object *j)
{
	char from[FQ_TS_LEN], to[FQ_TS_LEN];
	struct json_object *arr = j ? json_object_new_array() : NULL;

	if (!j)
		printf("%-16s %-28s %-19s  %-19s  %s\n", "TABLE", "PARTITION", "FROM (UTC)", "TO (UTC)",
		       "ROWS");
	for (size_t i = 0; i < n; i++) {
		bound(p[i].start_ns, from);
		bound(p[i].end_ns, to);
		if (!j) {
			char rows[32] = "?"; /* never analysed */

			if (p[i].estimated_rows >= 0)
				snprintf(rows, sizeof(rows), "%" PRId64, p[i].estimated_rows);
			printf("%-16s %-28s %-19s  %-19s  %s\n", p[i].table, p[i].name,
			       *from ? from : "(default)", to, rows);
			continue;
		}
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "table", json_object_new_string(p[i].table));
		json_object_object_add(e, "partition", json_object_new_string(p[i].name));
		json_object_object_add(e, "default", json_object_new_boolean(!p[i].start_ns && !p[i].end_ns));
		json_object_object_add(e, "from_ns", json_object_new_int64(p[i].start_ns));
		json_object_object_add(e, "to_ns", json_object_new_int64(p[i].end_ns));
		json_object_object_add(e, "estimated_rows", json_object_new_int64(p[i].estimated_rows));
		json_object_array_add(arr, e);
	}
	if (j)
		json_object_object_add(j, "partitions", arr);
}

static int cmd_status(struct fq_db *db, const struct opts *o)
{
	struct fq_db_partition *parts = NULL;
	struct json_object *j = NULL;
	int version, code = fq_db_code_version(), ret;
	size_t n = 0;

	if (fq_db_schema_version(db, &version)) {
		fprintf(stderr, "fabriciq-db: status: %s\n", fq_db_error(db));
		return EXIT_FAIL;
	}
	ret = version > code ? EXIT_TOO_NEW : version < code ? EXIT_NEEDS_MIGRATION : EXIT_OK;
	/* Partitions exist from schema version 2 on. */
	if (version >= 2 && fq_db_partitions(db, &parts, &n)) {
		fprintf(stderr, "fabriciq-db: status: %s\n", fq_db_error(db));
		return EXIT_FAIL;
	}
	if (o->json) {
		j = json_object_new_object();
		json_object_object_add(j, "schema_version", json_object_new_int(version));
		json_object_object_add(j, "code_version", json_object_new_int(code));
		json_object_object_add(j, "state",
				       json_object_new_string(ret == EXIT_TOO_NEW ? "newer than code"
							      : ret               ? "needs migration"
										  : "up to date"));
	} else {
		printf("schema version: %d (this fabriciq: %d, %s)\n", version, code,
		       ret == EXIT_TOO_NEW ? "database is newer: upgrade fabriciq"
		       : ret               ? "run `fabriciq-db migrate`"
					   : "up to date");
	}
	if (j || n)
		print_partitions(parts, n, j);
	if (j)
		print_json(j);
	free(parts);
	return ret;
}

static int cmd_maintain(struct fq_db *db, const struct opts *o)
{
	int created, dropped;

	if (fq_db_maintain(db, &created, &dropped)) {
		fprintf(stderr, "fabriciq-db: maintain: %s\n", fq_db_error(db));
		return EXIT_FAIL;
	}
	if (o->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "created", json_object_new_int(created));
		json_object_object_add(j, "dropped", json_object_new_int(dropped));
		print_json(j);
	} else {
		printf("partitions: %d created, %d dropped\n", created, dropped);
	}
	return EXIT_OK;
}

static const struct command {
	const char *name;
	int (*run)(struct fq_db *db, const struct opts *o);
} commands[] = {
    {"migrate", cmd_migrate},
    {"status", cmd_status},
    {"maintain", cmd_maintain},
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"conninfo", required_argument, NULL, 'd'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.conninfo = ""};
	const struct command *cmd = NULL;
	struct fq_db *db;
	char err[1024];
	int c, ret;

	while ((c = getopt_long(argc, argv, "d:jhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.conninfo = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("fabriciq-db %s (schema version %d)\n", PACKAGE_VERSION, fq_db_code_version());
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fabriciq-db: %s\n",
			optind == argc ? "missing command" : "one command at a time");
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name))
			cmd = &commands[i];
	if (!cmd) {
		fprintf(stderr, "fabriciq-db: unknown command '%s' (migrate, status, maintain)\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (fq_db_create(o.conninfo, &db, err, sizeof(err))) {
		fprintf(stderr, "fabriciq-db: %s\n", err);
		return EXIT_FAIL;
	}
	ret = cmd->run(db, &o);
	fq_db_destroy(db);
	return ret;
}
