/*
 * spool-crash: the agent's spool through node crashes (doc/design.md, "What
 * a crash keeps"), on tb-crashfs (tests/testbed/tb-crashfs.c), driven by
 * tests/agent/test-spool-crash.sh:
 *
 *   spool-crash DIR CRASHFS_PID CRASHFS_LOG ROUNDS
 *
 * DIR is a tb-crashfs mount. Each round a child process runs the spool as
 * the agent does (flushes on its worker thread, events waited for as
 * SPANK's StepStart is: told once durable, bulk telemetry flushed once per
 * "window", acks from a pretend controller, its acked seq told as a hello
 * would). It writes what it did, line by line, to a log outside the mount
 * (assigned seqs, seqs told durable, acks, hellos). At a random moment the
 * parent stops it (SIGSTOP), crashes the filesystem (SIGUSR1, waits for
 * tb-crashfs's line), kills it (SIGKILL), reopens the spool on what is
 * durable, and checks against the log: every frame told durable and not
 * acknowledged is there to send, in seq order, decoding; no seq is given
 * again; the hello's seq never goes back; bulk telemetry lost is only what
 * was appended after the last window's flush. A last, exact round: an
 * event told durable, 5 bulk frames appended after its flush, the crash:
 * exactly those 5 are lost.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/frame.h"
#include "slurmd-agent/spool.h"
#include "tests/unit/tap.h"

/* 256 KiB segments (the bound / 16): one rolls over every 32 iterations,
 * so crashes land between a segment's creation and its directory's sync */
#define SPOOL_MAX (4u << 20)
#define MAXSEQ    (1u << 23) /* each open leases 100,000 seqs ahead: two opens a round */

static int logfd;

/* An event (a link event) or bulk telemetry (a probe report), ~2 KB. */
static uint64_t append(struct fq_spool *s, bool bulk)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__ProbeReport p = FABRICIQ__PROBE_REPORT__INIT;
	Fabriciq__LinkEvent l = FABRICIQ__LINK_EVENT__INIT;
	char pad[2000];

	memset(pad, bulk ? 'b' : 'e', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	env.version = FQ_PROTOCOL_VERSION;
	if (bulk) {
		p.local_nic = pad;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROBE;
		env.probe = &p;
	} else {
		l.local_nic = pad;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LINK;
		env.link = &l;
	}
	if (fq_spool_append(s, &env) < 0)
		return 0;
	dprintf(logfd, "%c %" PRIu64 "\n", bulk ? 'B' : 'E', env.seq);
	return env.seq;
}

/* Told durable: what SPANK's answer would say. */
static void on_durable(void *arg, int rc)
{
	dprintf(logfd, "D %" PRIu64 " %d\n", (uint64_t)(uintptr_t)arg, rc);
}

/* The agent's part: events told once durable, bulk flushed each 4th
 * iteration (the window), acks of what was told durable two windows ago,
 * a hello's seq after each. "R" after warm iterations; then on until
 * killed (bounded). */
static void child(const char *dir, int warm)
{
	struct event_base *base = event_base_new();
	uint64_t told_ack = 0, ack_at[3] = {0};
	struct fq_spool *s;

	if (!base || fq_spool_open(dir, SPOOL_MAX, &s) < 0 || fq_spool_attach(s, base) < 0)
		_exit(3);
	dprintf(logfd, "H %" PRIu64 "\n", fq_spool_first_unconfirmed(s));
	for (int i = 0; i < 200000; i++) {
		uint64_t ev = append(s, false), last = 0;

		if (ev && fq_spool_when_durable(s, ev, on_durable, (void *)(uintptr_t)ev) == 1)
			on_durable((void *)(uintptr_t)ev, 0);
		for (int k = 0; k < 3; k++)
			last = append(s, true) ?: last;
		if (i % 4 == 3) { /* the report window */
			ack_at[0] = ack_at[1];
			ack_at[1] = ack_at[2];
			ack_at[2] = fq_spool_durable_seq(s);
			if (last && fq_spool_when_durable(s, last, on_durable, (void *)(uintptr_t)last) == 1)
				on_durable((void *)(uintptr_t)last, 0);
			if (ack_at[0] > told_ack) {
				/* logged first: the controller acknowledged it before the spool hears of it */
				told_ack = ack_at[0];
				dprintf(logfd, "A %" PRIu64 "\n", told_ack);
				fq_spool_ack(s, told_ack);
			}
			dprintf(logfd, "H %" PRIu64 "\n", fq_spool_first_unconfirmed(s));
		}
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (i == warm)
			dprintf(logfd, "R\n");
		if (i > warm)
			usleep(300);
	}
	_exit(4);
}

/* The exact round: an event told durable, then 5 bulk frames appended
 * after its flush (no window flush yet), then "R" and a pause. */
static void child_exact(const char *dir)
{
	struct event_base *base = event_base_new();
	struct fq_spool *s;
	uint64_t ev;
	int told = 0;

	if (!base || fq_spool_open(dir, SPOOL_MAX, &s) < 0 || fq_spool_attach(s, base) < 0)
		_exit(3);
	ev = append(s, false);
	if (!ev || fq_spool_when_durable(s, ev, on_durable, (void *)(uintptr_t)ev) != 0)
		_exit(5);
	while (fq_spool_durable_seq(s) < ev && told++ < 5000) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	event_base_loop(base, EVLOOP_NONBLOCK); /* the waiter's line */
	for (int k = 0; k < 5; k++)
		append(s, true);
	dprintf(logfd, "R\n");
	for (;;)
		pause();
}

static int crashes_logged(const char *log)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(log, "re");

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, ": crash ") != NULL;
	if (f)
		fclose(f);
	return n;
}

/* Whether round r's child has said "R" (one line a round). */
static bool ready(const char *path, int r)
{
	char line[64];
	int n = 0;
	FILE *f = fopen(path, "re");

	while (f && n < r && fgets(line, sizeof(line), f))
		n += line[0] == 'R';
	if (f)
		fclose(f);
	return n >= r;
}

struct seen {
	unsigned char kind[MAXSEQ]; /* 'E', 'B' (assigned) */
	bool told[MAXSEQ];
	uint64_t max_assigned, acked, hello;
};

static struct seen sn;

static void read_log(const char *path)
{
	char line[128];
	uint64_t v;
	int rc;
	FILE *f = fopen(path, "re");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line + 1, " %" SCNu64, &v) != 1 || v >= MAXSEQ)
			continue;
		switch (line[0]) {
		case 'E':
		case 'B':
			sn.kind[v] = (unsigned char)line[0];
			if (v > sn.max_assigned)
				sn.max_assigned = v;
			break;
		case 'D':
			if (sscanf(line + 2, "%*u %d", &rc) == 1 && rc == 0)
				sn.told[v] = true;
			break;
		case 'A':
			if (v > sn.acked)
				sn.acked = v;
			break;
		case 'H':
			if (v > sn.hello)
				sn.hello = v;
			break;
		}
	}
	if (f)
		fclose(f);
}

/* After crash r: the spool reopened on what is durable. */
static void check(const char *dir, int r, uint64_t *lost_bulk, uint64_t *lost_events)
{
	static bool present[MAXSEQ], kept[MAXSEQ];
	static uint64_t before; /* the last seq given before this round */
	uint8_t buf[8192];
	struct fq_spool *s;
	uint64_t seq, prev = 0, missing = 0, told = 0, bad = 0, lb = 0, le = 0, upto = 0;
	int64_t n;

	if (fq_spool_open(dir, SPOOL_MAX, &s) < 0) {
		ok(0, "crash %d: the spool opens on what is durable", r);
		return;
	}
	memset(present, 0, sizeof(present));
	fq_spool_rewind(s);
	while ((n = fq_spool_next(s, buf, sizeof(buf), &seq)) > 0) {
		Fabriciq__Envelope *env;

		if (seq <= prev || seq >= MAXSEQ || fq_frame_unpack(buf + 4, (size_t)n - 4, &env) < 0) {
			bad++;
			break;
		}
		bad += env->seq != seq ||
		       (sn.kind[seq] == 'B') != (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROBE);
		fq_frame_free(env);
		present[seq] = true;
		prev = seq;
	}
	/* What must be there: a frame of this round up to the last one told
	 * durable (durability is a prefix within one run of the spool), and
	 * a frame of an earlier round that was there at the check before
	 * (one lost at an earlier crash, never told, is gone for good). */
	for (uint64_t q = sn.acked > before ? sn.acked + 1 : before + 1; q <= sn.max_assigned; q++)
		if (sn.told[q])
			upto = q;
	for (uint64_t q = sn.acked + 1; q <= sn.max_assigned; q++) {
		bool must = q <= before ? kept[q] : q <= upto;

		told += sn.told[q] && sn.kind[q] == 'E';
		if (must && sn.kind[q] && !present[q] && missing++ < 5)
			diag("crash %d: seq %" PRIu64 " (%c%s) missing", r, q, sn.kind[q],
			     sn.told[q] ? ", told" : "");
		if (q > before && q > upto && sn.kind[q] && !present[q])
			*(sn.kind[q] == 'B' ? &lb : &le) += 1;
	}
	memcpy(kept, present, sizeof(kept));
	before = sn.max_assigned;
	ok(n == 0 && bad == 0 && missing == 0,
	   "crash %d: every frame up to the last told durable (%" PRIu64
	   ") and every one kept by the crash before (%" PRIu64 " events told above ack %" PRIu64
	   ") is there to send, in order, each decoding as what was appended (%" PRIu64 " missing, %" PRIu64
	   " wrong)",
	   r, upto, told, sn.acked, missing, bad);
	ok(fq_spool_next_seq(s) > sn.max_assigned,
	   "crash %d: no seq given again (next %" PRIu64 " > %" PRIu64 " given)", r, fq_spool_next_seq(s),
	   sn.max_assigned);
	ok(fq_spool_first_unconfirmed(s) >= sn.hello,
	   "crash %d: the hello's seq does not go back (%" PRIu64 ", %" PRIu64 " told before)", r,
	   fq_spool_first_unconfirmed(s), sn.hello);
	*lost_bulk += lb;
	*lost_events += le;
	diag("crash %d: lost %" PRIu64 " bulk frame(s), %" PRIu64 " event(s), none of them told durable", r,
	     lb, le);
	fq_spool_close(s);
}

int main(int argc, char **argv)
{
	const char *dir, *fslog;
	char logpath[4200];
	pid_t fspid;
	int rounds;
	uint64_t lost_bulk = 0, lost_events = 0, xb = 0, xe = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: spool-crash DIR CRASHFS_PID CRASHFS_LOG ROUNDS\n");
		return 2;
	}
	dir = argv[1];
	fspid = (pid_t)atoi(argv[2]);
	fslog = argv[3];
	rounds = atoi(argv[4]);
	snprintf(logpath, sizeof(logpath), "%s.seqs", fslog);
	logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (logfd < 0)
		return 2;
	srand((unsigned)getpid());
	plan(3 * (rounds + 1) + 1);
	/* the last round is the exact one (child_exact) */
	for (int r = 1; r <= rounds + 1; r++) {
		int crashes = crashes_logged(fslog), st;
		uint64_t lb = 0, le = 0;
		pid_t pid = fork();

		if (pid == 0 && r <= rounds)
			child(dir, 20 + 37 * r % 90);
		else if (pid == 0)
			child_exact(dir);
		for (int i = 0; i < 3000 && !ready(logpath, r) && waitpid(pid, &st, WNOHANG) == 0; i++)
			usleep(1000);
		if (r <= rounds)
			usleep((useconds_t)(rand() %
					    150000)); /* a random moment: between writes, flushes and acks */
		kill(pid, SIGSTOP);
		kill(fspid, SIGUSR1);
		for (int i = 0; i < 500 && crashes_logged(fslog) == crashes; i++)
			usleep(10000);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		if (!WIFSIGNALED(st)) {
			ok(0, "round %d: the child ran until killed (status %d)", r, st);
			continue;
		}
		read_log(logpath);
		check(dir, r, &lb, &le);
		if (r > rounds) {
			xb = lb;
			xe = le;
		} else {
			lost_bulk += lb;
			lost_events += le;
		}
	}
	ok(xb == 5 && xe == 0,
	   "crash %d, after an event told durable and 5 bulk frames appended since its flush: exactly those "
	   "5 "
	   "lost (%" PRIu64 " bulk, %" PRIu64 " events)",
	   rounds + 1, xb, xe);
	diag("the %d random crashes lost %" PRIu64 " bulk frame(s) and %" PRIu64
	     " event(s), none told durable",
	     rounds, lost_bulk, lost_events);
	return done_testing();
}
