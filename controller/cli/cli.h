/*
 * cli.h: the pieces of the fabriciq CLI (controller/cli/) shared between
 * its files: the invocation (struct cli), the API fetch, command option
 * parsing, and the table and number formatting for people.
 *
 * cli.c: main, the API fetch and the read-only fabric commands (status,
 * nodes, links, events, clock, db); cli_jobs.c: jobs, job, anomalies;
 * cli_fmt.c: value formatting and aligned tables; cli_hints.c: `hints` and
 * `hints --apply` (scontrol, recorded in the database); cli_doctor.c:
 * `doctor`, the node self-check (doctor.h). http_client.h: the HTTP client
 * the API fetch goes through.
 */
#ifndef FQ_CONTROLLER_CLI_CLI_H
#define FQ_CONTROLLER_CLI_CLI_H

#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fq_db;

/* Exit codes (doc/fabriciq.1). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_NOT_FOUND = 3,
};

struct cli {
	const char *controller;
	const char *conninfo;     /* --db: direct mode */
	const char *munge_socket; /* NULL: munge's default */
	bool json;
	int timeout_ms;
	struct fq_db *db; /* open in direct mode */
};

/* ---- values (cli_fmt.c) -------------------------------------------------------
 * Getters of a JSON object's member (NULL/0/"-" when absent), and
 * formatters whose result lives in a ring of scratch buffers until 32 more
 * have been made: long enough to build one table row. */
#define SCRATCH_LEN 160
/* The next scratch buffer (SCRATCH_LEN bytes). */
char *scratch(void);
struct json_object *jget(struct json_object *o, const char *key);
const char *jstr(struct json_object *o, const char *key);
int64_t jint(struct json_object *o, const char *key);
bool jnull(struct json_object *o, const char *key);
double jdbl(struct json_object *o, const char *key);
size_t jlen(struct json_object *o, const char *key);
struct json_object *jidx(struct json_object *o, const char *key, size_t i);
const char *ftime(struct json_object *o, const char *key_ns);
const char *fage(int64_t ns);
const char *fdelay(double ns);
const char *fdelay_at(struct json_object *o, const char *key);
const char *fus(struct json_object *o, const char *key);
const char *fbytes(double v);
const char *fbytes_at(struct json_object *o, const char *key);
const char *fgbps(struct json_object *o, const char *key);
const char *fpct(struct json_object *o, const char *key);
const char *fint(struct json_object *o, const char *key);
const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
const char *fplace(struct json_object *o, const char *node, const char *nic);

/* ---- tables (cli_fmt.c) ------------------------------------------------------- */
#define TABLE_MAX_COLS 16

struct table {
	int ncols;
	char *head[TABLE_MAX_COLS];
	bool right[TABLE_MAX_COLS];
	char **cells;
	size_t rows, cap;
};

void table_init(struct table *t, const char *spec);
/* A copy of s ("-" for NULL) with control characters (terminal escapes
 * from agents' strings) shown as '?'; free() it. */
char *cell_copy(const char *s);
/* One cell (const char *) per column. */
void table_row(struct table *t, ...);
/* Prints and frees the table. */
void table_print(struct table *t);

/* ---- the API and commands (cli.c) --------------------------------------------- */
int fetch(struct cli *c, const char *path, const char *query, struct json_object **out);
void qadd(char *q, size_t len, const char *name, const char *value);

struct command {
	const char *name, *summary, *synopsis, *help; /* summary: one line for `fabriciq --help` */
	int (*run)(struct cli *c, int argc, char **argv);
};

/* The command being run (for its usage line). */
extern const struct command *current;

void command_usage(FILE *f, const struct command *cmd);
int next_opt(int argc, char **argv, const char *shortopts, const struct option *longopts);
int usage_error(const char *fmt_, ...) __attribute__((format(printf, 1, 2)));

/* Parses the options `allowed` (short letters of list_opts) into a query
 * string; -1 after --help, EXIT_USAGE on error, 0 otherwise. */
struct list_args {
	char query[1024];
	bool apply, dry_run;
};
int list_options(int argc, char **argv, const char *allowed, struct list_args *a);

#define LIST_OPTIONS(argc, argv, allowed, a)                                                                 \
	do {                                                                                                 \
		int rc_ = list_options(argc, argv, allowed, a);                                              \
		if (rc_)                                                                                     \
			return rc_ < 0 ? EXIT_OK : rc_;                                                      \
	} while (0)

/* Options of a command that takes none but --help: 0, -1 after --help,
 * EXIT_USAGE. */
int no_options(int argc, char **argv);
#define NO_OPTIONS(argc, argv)                                                                               \
	do {                                                                                                 \
		int rc_ = no_options(argc, argv);                                                            \
		if (rc_)                                                                                     \
			return rc_ < 0 ? EXIT_OK : rc_;                                                      \
	} while (0)

/* The note under a table the API cut at its limit (o's "truncated"). */
void truncated_note(struct json_object *o, const char *what);

/* ---- jobs (cli_jobs.c) ---------------------------------------------------------- */
int cmd_jobs(struct cli *c, int argc, char **argv);
int cmd_job(struct cli *c, int argc, char **argv);
int cmd_anomalies(struct cli *c, int argc, char **argv);
int cmd_incidents(struct cli *c, int argc, char **argv);
int cmd_incident(struct cli *c, int argc, char **argv);

/* ---- hints (cli_hints.c) ------------------------------------------------------ */
int cmd_hints(struct cli *c, int argc, char **argv);

/* ---- topology (cli_topology.c) ------------------------------------------------- */
int cmd_topology(struct cli *c, int argc, char **argv);

/* ---- doctor (cli_doctor.c): the node self-check ---------------------------------- */
int cmd_doctor(struct cli *c, int argc, char **argv);

#endif /* FQ_CONTROLLER_CLI_CLI_H */
