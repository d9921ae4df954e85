/*
 * ctl-spool-crash: the controller's spool (controller/spool.c) through node
 * crashes on tb-crashfs (tests/testbed/tb-crashfs.c), driven by
 * tests/controller/test-ctl-spool-crash.sh:
 *
 *   ctl-spool-crash DIR CRASHFS_PID CRASHFS_LOG ROUNDS
 *
 * Each round a child uses the spool as the controller does while
 * PostgreSQL is away: a batch of records appended and synced, then
 * acknowledged (its last id logged, outside the mount); every fifth batch
 * the spool is replayed and the position committed (as stored in the
 * database). At a random moment the parent stops it, crashes the
 * filesystem, kills it, reopens the spool and checks: every record
 * acknowledged and not committed is there to replay, in order, whole.
 * Records committed that come back (the truncation after a full replay
 * is not synced) are counted: the database's agent_seq drops them.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "controller/spool.h"
#include "tests/unit/tap.h"

#define REC   1000 /* bytes: the id, then filler derived from it */
#define MAXID (1u << 22)

static int logfd;

static void fill(uint8_t *b, uint64_t id)
{
	memcpy(b, &id, sizeof(id));
	for (size_t i = sizeof(id); i < REC; i++)
		b[i] = (uint8_t)(id * 31 + i);
}

static void child(const char *dir, uint64_t id, int warm)
{
	char err[256];
	uint8_t b[REC];
	struct fq_spool *s;

	if (fq_spool_open(dir, 256u << 20, &s, err, sizeof(err)) < 0)
		_exit(3);
	for (int i = 0; i < 100000; i++) {
		int n = 1 + i % 8;

		for (int k = 0; k < n; k++) {
			fill(b, id++);
			if (fq_spool_append(s, b, REC) < 0)
				_exit(5);
		}
		if (fq_spool_sync(s) == 0)
			dprintf(logfd, "K %" PRIu64 "\n", id - 1);
		if (i % 5 == 4) { /* the database is back for a while: replay, commit */
			const uint8_t *r;
			size_t len;
			uint64_t last = 0;

			while (fq_spool_next(s, &r, &len) == 1)
				memcpy(&last, r, sizeof(last));
			if (fq_spool_commit(s) == 0 && last)
				dprintf(logfd, "C %" PRIu64 "\n", last);
		}
		if (i == warm)
			dprintf(logfd, "R\n");
		if (i > warm)
			usleep(300);
	}
	_exit(4);
}

static int count_lines(const char *path, const char *what)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "re");

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, what) == line || (what[0] == ':' && strstr(line, what));
	if (f)
		fclose(f);
	return n;
}

static uint64_t acked, committed, max_id;

static void read_log(const char *path)
{
	char line[128];
	uint64_t v;
	FILE *f = fopen(path, "re");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line + 1, " %" SCNu64, &v) != 1)
			continue;
		if (line[0] == 'K' && v > acked)
			acked = v;
		if (line[0] == 'C' && v > committed)
			committed = v;
	}
	if (f)
		fclose(f);
	if (acked > max_id)
		max_id = acked;
}

static void check(const char *dir, int r, uint64_t *again)
{
	static bool present[MAXID];
	char err[256];
	struct fq_spool *s;
	const uint8_t *b;
	size_t len;
	uint64_t prev = 0, missing = 0, bad = 0, back = 0;
	int rc;

	if (fq_spool_open(dir, 256u << 20, &s, err, sizeof(err)) < 0) {
		ok(0, "crash %d: the spool opens on what is durable: %s", r, err);
		return;
	}
	memset(present, 0, sizeof(present));
	while ((rc = fq_spool_next(s, &b, &len)) == 1) {
		uint8_t want[REC];
		uint64_t id;

		memcpy(&id, b, sizeof(id));
		fill(want, id);
		if (len != REC || memcmp(b, want, REC) != 0 || id <= prev || id >= MAXID) {
			bad++;
			break;
		}
		present[id] = true;
		back += id <= committed;
		prev = id;
		if (id > max_id)
			max_id = id;
	}
	for (uint64_t id = committed + 1; id <= acked; id++)
		missing += !present[id];
	ok(rc == 0 && bad == 0 && missing == 0,
	   "crash %d: every record acknowledged and not committed (%" PRIu64 "..%" PRIu64
	   ") is there to replay, in order, whole (%" PRIu64 " missing, %" PRIu64 " bad, rc %d)",
	   r, committed + 1, acked, missing, bad, rc);
	*again += back;
	if (back)
		diag("crash %d: %" PRIu64
		     " committed record(s) back for replay (the database drops them by seq)",
		     r, back);
	fq_spool_close(s);
}

int main(int argc, char **argv)
{
	const char *dir, *fslog;
	char logpath[4200];
	uint64_t again = 0;
	pid_t fspid;
	int rounds;

	if (argc != 5) {
		fprintf(stderr, "usage: ctl-spool-crash DIR CRASHFS_PID CRASHFS_LOG ROUNDS\n");
		return 2;
	}
	dir = argv[1];
	fspid = (pid_t)atoi(argv[2]);
	fslog = argv[3];
	rounds = atoi(argv[4]);
	snprintf(logpath, sizeof(logpath), "%s.ids", fslog);
	logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (logfd < 0)
		return 2;
	srand((unsigned)getpid());
	plan(rounds);
	for (int r = 1; r <= rounds; r++) {
		int crashes = count_lines(fslog, ": crash "), st;
		pid_t pid = fork();

		if (pid == 0)
			child(dir, max_id + 1, 10 + 23 * r % 60);
		for (int i = 0; i < 3000 && count_lines(logpath, "R") < r && waitpid(pid, &st, WNOHANG) == 0;
		     i++)
			usleep(1000);
		usleep((useconds_t)(rand() % 100000));
		kill(pid, SIGSTOP);
		kill(fspid, SIGUSR1);
		for (int i = 0; i < 500 && count_lines(fslog, ": crash ") == crashes; i++)
			usleep(10000);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		read_log(logpath);
		check(dir, r, &again);
	}
	diag("%" PRIu64 " committed record(s) came back over %d crashes; %" PRIu64 " acknowledged in all",
	     again, rounds, acked);
	return done_testing();
}
