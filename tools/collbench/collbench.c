/*
 * fabriciq-collbench: time collectives over any ncclNet plugin, driving it
 * as NCCL's proxy does, with nccl-tests' output (size, time, algbw, busbw
 * with the same bus factors) or JSON.
 *
 * Ranks come from --rank/--nranks or SLURM_PROCID/SLURM_NTASKS; handles
 * travel over a TCP bootstrap at rank 0 (--bootstrap HOST:PORT).
 */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "tools/collbench/bootstrap.h"
#include "tools/collbench/coll.h"
#include "tools/collbench/netdrv.h"
#include "tools/collbench/profrun.h"

enum coll_kind {
	COLL_ALLREDUCE,
	COLL_ALLTOALL,
	COLL_PINGPONG
};

struct opts {
	const char *plugin;
	const char *bootstrap;
	enum coll_kind coll;
	size_t min_bytes, max_bytes;
	int factor;
	int iters, warmup;
	int rank, nranks;
	int dev, abi;
	int json, check;
	double timeout_s;
	int timeline_ms;        /* 0: off */
	int percentiles;        /* --percentiles: per-iteration latency quantiles */
	int idle_us;            /* --idle-us: the engine's sleep on a pass that moved nothing */
	int gap_us;             /* --gap-us: a pause before each iteration (warmup too), not timed */
	const char *start_file; /* wait for it after connecting (NULL: start at once) */
	const char *profiler;   /* a profiler plugin to drive beside the net plugin */
	int profiler_abi;       /* 0: the newest it exports */
	int profiler_net;       /* enum profdrv_net */
};

/* The profiler runtime, when --profiler is given (one per process). */
static struct profrun *prof;
static uint64_t prof_seq;

static const char *const coll_names[] = {"allreduce", "alltoall", "pingpong"};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: fabriciq-collbench [options]\n"
	    "  -p, --plugin PATH|NAME   ncclNet plugin .so (default: $NCCL_NET_PLUGIN, else fabriciq)\n"
	    "      --coll NAME          allreduce (float sum, verified) | alltoall | pingpong\n"
	    "  -c, --check 0|1          verify the results (default 1)\n"
	    "  -b, --minbytes SIZE      smallest size (default 8)\n"
	    "  -e, --maxbytes SIZE      largest size (default 64M; at most 256M)\n"
	    "  -f, --stepfactor N       multiply the size by N each step (default 2)\n"
	    "  -n, --iters N            timed iterations per size (default 20)\n"
	    "  -w, --warmup_iters N     untimed iterations first (default 5)\n"
	    "      --rank R --nranks N  this rank and the world size (default: SLURM_PROCID, SLURM_NTASKS)\n"
	    "      --bootstrap HOST:PORT  rank 0's bootstrap address (all ranks give the same)\n"
	    "      --dev N              plugin device (default 0)\n"
	    "      --abi N              use ncclNetPlugin_vN (default: the highest exported)\n"
	    "      --timeout S          give up on a stuck transfer after S seconds (default 60)\n"
	    "      --timeline MS        verify every timed iteration (receive buffer poisoned first) and\n"
	    "                           print '# timeline T_S BUSBW_GBPS ITERS WRONG UNIX_S' every MS ms "
	    "(rank 0)\n"
	    "      --percentiles        time every iteration (the slowest rank's time of each) and print\n"
	    "                           '# latency ITERS P50_US P90_US P99_US MAX_US' per size (rank 0)\n"
	    "      --gap-us N           pause N us before each iteration, warmup too (not timed): a job\n"
	    "                           that sends small messages now and then, as inference does\n"
	    "      --idle-us N          a pass over the requests that moved nothing sleeps N us (default 0:\n"
	    "                           spin, as NCCL's proxy; ranks sharing a few cores need N > 0)\n"
	    "      --json               one JSON document instead of the table\n"
	    "      --start-file PATH    once every rank is connected, rank 0 prints '# connected' (to\n"
	    "                           stderr with --json) and\n"
	    "                           every rank waits until PATH exists (at most --timeout / 2)\n"
	    "                           before the first iteration: a harness sets the fabric up for\n"
	    "                           the lanes the plugin opened\n"
	    "      --profiler PATH      also drive this NCCL profiler plugin, as NCCL does (a proxy thread\n"
	    "                           runs the transfers); each rank prints a '# profiler' line at the "
	    "end\n"
	    "                           (default: $NCCL_PROFILER_PLUGIN, as NCCL; none if unset)\n"
	    "      --profiler-abi N     use ncclProfiler_vN, 1..6 (default: the newest exported)\n"
	    "      --profiler-net socket|ib  the transport events each request gets, as NCCL's socket\n"
	    "                           or IB transport sends them (default socket)\n"
	    "  -h, --help\n"
	    "  -V, --version\n"
	    "The short options are nccl-tests' (-b -e -f -n -w -c); its per-collective binaries are\n"
	    "--coll here.\n"
	    "The plugin's log goes to stderr, each line stamped with the realtime clock: WARN always,\n"
	    "INFO with NCCL_DEBUG=INFO, as under NCCL.\n");
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return -1;
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		return -1;
	*out = (size_t)v;
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("fabriciq-collbench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* The logger handed to the plugin, as NCCL's: WARN always, INFO with
 * NCCL_DEBUG=INFO (or TRACE); each line stamped with the realtime clock,
 * so a plugin's failover and failback can be set against the testbed's
 * link events. */
static void plugin_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	static int info = -1;
	const char *msg, *pfx = "fabriciq: ";
	struct timespec ts;
	char buf[640];
	va_list ap;

	(void)flags, (void)file, (void)line;
	if (info < 0) {
		const char *d = getenv("NCCL_DEBUG");

		info = d && (strcasecmp(d, "INFO") == 0 || strcasecmp(d, "TRACE") == 0);
	}
	if (level != NCCL_LOG_WARN && !(level == NCCL_LOG_INFO && info))
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	msg = strncmp(buf, pfx, strlen(pfx)) == 0 ? buf + strlen(pfx) : buf;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "%lld.%06ld fabriciq: %s: %s\n", (long long)ts.tv_sec, ts.tv_nsec / 1000,
		level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum {
		O_RANK = 256,
		O_NRANKS,
		O_BOOT,
		O_ABI,
		O_JSON,
		O_TIMEOUT,
		O_TIMELINE,
		O_COLL,
		O_DEV,
		O_PROF,
		O_PROF_ABI,
		O_PROF_NET,
		O_START,
		O_PCT,
		O_IDLE,
		O_GAP
	};
	static const struct option lo[] = {
	    {"plugin", 1, 0, 'p'},
	    {"coll", 1, 0, O_COLL},
	    {"check", 1, 0, 'c'},
	    {"minbytes", 1, 0, 'b'},
	    {"maxbytes", 1, 0, 'e'},
	    {"stepfactor", 1, 0, 'f'},
	    {"iters", 1, 0, 'n'},
	    {"warmup_iters", 1, 0, 'w'},
	    {"dev", 1, 0, O_DEV},
	    {"rank", 1, 0, O_RANK},
	    {"nranks", 1, 0, O_NRANKS},
	    {"bootstrap", 1, 0, O_BOOT},
	    {"abi", 1, 0, O_ABI},
	    {"json", 0, 0, O_JSON},
	    {"timeout", 1, 0, O_TIMEOUT},
	    {"timeline", 1, 0, O_TIMELINE},
	    {"profiler", 1, 0, O_PROF},
	    {"profiler-abi", 1, 0, O_PROF_ABI},
	    {"profiler-net", 1, 0, O_PROF_NET},
	    {"start-file", 1, 0, O_START},
	    {"percentiles", 0, 0, O_PCT},
	    {"idle-us", 1, 0, O_IDLE},
	    {"gap-us", 1, 0, O_GAP},
	    {"help", 0, 0, 'h'},
	    {"version", 0, 0, 'V'},
	    {0, 0, 0, 0},
	};
	const char *env;
	int c, t;

	*o = (struct opts){.min_bytes = 8,
			   .max_bytes = 64 << 20,
			   .factor = 2,
			   .iters = 20,
			   .warmup = 5,
			   .rank = -1,
			   .nranks = -1,
			   .check = 1,
			   .timeout_s = 60};
	env = getenv("NCCL_NET_PLUGIN");
	o->plugin = env && *env ? env : "fabriciq";
	env = getenv("NCCL_PROFILER_PLUGIN"); /* as NCCL: a profiler named in the environment is loaded */
	o->profiler = env && *env ? env : NULL;
	if ((env = getenv("SLURM_PROCID")))
		o->rank = atoi(env);
	if ((env = getenv("SLURM_NTASKS")))
		o->nranks = atoi(env);
	while ((c = getopt_long(argc, argv, "p:c:b:e:f:n:w:hV", lo, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'p':
			o->plugin = optarg;
			break;
		case 'c':
			bad = parse_int(optarg, 0, 1, &o->check) < 0;
			break;
		case O_COLL:
			for (t = 0; t < 3 && strcmp(optarg, coll_names[t]) != 0; t++)
				;
			bad = t == 3;
			o->coll = (enum coll_kind)t;
			break;
		case 'b':
			bad = parse_size(optarg, &o->min_bytes) < 0;
			break;
		case 'e':
			bad = parse_size(optarg, &o->max_bytes) < 0 || o->max_bytes > (256u << 20);
			break;
		case 'f':
			bad = parse_int(optarg, 2, 1024, &o->factor) < 0;
			break;
		case 'n':
			bad = parse_int(optarg, 1, 1000000, &o->iters) < 0;
			break;
		case 'w':
			bad = parse_int(optarg, 0, 1000000, &o->warmup) < 0;
			break;
		case O_DEV:
			bad = parse_int(optarg, 0, 1024, &o->dev) < 0;
			break;
		case O_RANK:
			bad = parse_int(optarg, 0, 1 << 20, &o->rank) < 0;
			break;
		case O_NRANKS:
			bad = parse_int(optarg, 1, 1 << 20, &o->nranks) < 0;
			break;
		case O_BOOT:
			o->bootstrap = optarg;
			break;
		case O_ABI:
			bad = parse_int(optarg, NETDRV_MIN_VERSION, NETDRV_MAX_VERSION, &o->abi) < 0;
			break;
		case O_JSON:
			o->json = 1;
			break;
		case O_PROF:
			o->profiler = optarg;
			break;
		case O_PROF_NET:
			bad = strcmp(optarg, "socket") != 0 && strcmp(optarg, "ib") != 0;
			o->profiler_net = strcmp(optarg, "ib") == 0 ? PROFDRV_NET_IB : PROFDRV_NET_SOCKET;
			break;
		case O_PROF_ABI:
			bad =
			    parse_int(optarg, PROFDRV_MIN_VERSION, PROFDRV_MAX_VERSION, &o->profiler_abi) < 0;
			break;
		case O_START:
			o->start_file = optarg;
			break;
		case O_PCT:
			o->percentiles = 1;
			break;
		case O_IDLE:
			bad = parse_int(optarg, 0, 1000000, &o->idle_us) < 0;
			break;
		case O_GAP:
			bad = parse_int(optarg, 0, 10000000, &o->gap_us) < 0;
			break;
		case O_TIMELINE:
			bad = parse_int(optarg, 10, 600000, &o->timeline_ms) < 0;
			break;
		case O_TIMEOUT:
			bad = parse_int(optarg, 1, 3600, &t) < 0;
			o->timeout_s = t;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("fabriciq-collbench %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		if (bad) {
			die("bad value '%s' for %s (see --help)", optarg,
			    argv[optind - 1] == optarg ? argv[optind - 2] : argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		die("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (o->min_bytes > o->max_bytes) {
		die("--minbytes is larger than --maxbytes");
		return -1;
	}
	if (o->rank < 0 || o->nranks < 1 || o->rank >= o->nranks) {
		die("no valid rank: give --rank and --nranks, or run under srun");
		return -1;
	}
	if (o->nranks > 1 && !o->bootstrap) {
		die("--bootstrap HOST:PORT is needed with more than one rank");
		return -1;
	}
	if (o->coll == COLL_PINGPONG && o->nranks < 2) {
		die("pingpong needs two ranks");
		return -1;
	}
	return 0;
}

/* NCCL's rule: the value as a file name, then libnccl-net-<value>.so. */
static struct netdrv *load_plugin(const struct opts *o)
{
	char err[512], err2[512], name[512];
	struct netdrv *d;

	if (netdrv_open(o->plugin, o->abi, &d, err, sizeof(err)) == 0)
		return d;
	if (!strchr(o->plugin, '/')) {
		snprintf(name, sizeof(name), "libnccl-net-%s.so", o->plugin);
		if (netdrv_open(name, o->abi, &d, err2, sizeof(err2)) == 0)
			return d;
		if (strstr(err, "cannot load"))
			memcpy(err, err2, sizeof(err));
	}
	die("%s", err);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct bufs {
	char *send, *recv, *tmp;
};

static void init_data(const struct opts *o, struct bufs *b, size_t bytes)
{
	if (o->coll == COLL_ALLREDUCE) {
		float *f = (float *)b->send;
		for (size_t i = 0; i < bytes / sizeof(float); i++)
			f[i] = (float)(o->rank + 1 + (int)(i % 7));
	} else if (o->coll == COLL_ALLTOALL) {
		size_t per = bytes / (size_t)o->nranks;
		for (size_t i = 0; i < per * (size_t)o->nranks; i++) /* block p goes to rank p */
			b->send[i] = (char)(o->rank * 31 + (int)(i / per) * 7 + (int)(i % 251));
	} else {
		memset(b->send, o->rank, bytes);
	}
}

/* Mismatched elements after the last iteration. */
static long count_wrong(const struct opts *o, const struct bufs *b, size_t bytes)
{
	long wrong = 0;
	int n = o->nranks;

	if (o->coll == COLL_ALLREDUCE) {
		const float *f = (const float *)b->recv;
		for (size_t i = 0; i < bytes / sizeof(float); i++)
			wrong += f[i] != (float)(n * (n + 1) / 2 + n * (int)(i % 7));
	} else if (o->coll == COLL_ALLTOALL) {
		size_t per = bytes / (size_t)n;
		for (size_t i = 0; i < per * (size_t)n; i++) /* block p came from rank p */
			wrong += b->recv[i] != (char)((int)(i / per) * 31 + o->rank * 7 +
						      (int)((i % per + (size_t)o->rank * per) % 251));
	}
	return wrong;
}

static int run_plain(struct mesh *m, const struct opts *o, struct bufs *b, size_t bytes)
{
	switch (o->coll) {
	case COLL_ALLREDUCE:
		return coll_allreduce(m, (float *)b->send, (float *)b->recv, (float *)b->tmp,
				      bytes / sizeof(float));
	case COLL_ALLTOALL:
		return coll_alltoall(m, b->send, b->recv, bytes / (size_t)o->nranks);
	default:
		return coll_pingpong(m, b->send, bytes);
	}
}

/* One operation on the profiler's proxy thread. */
struct prof_job {
	struct mesh *m;
	const struct opts *o;
	struct bufs *b;
	size_t bytes;
	int half; /* pingpong: 0 there, 1 back */
};

static int prof_job_run(void *arg)
{
	struct prof_job *j = arg;

	if (j->o->coll == COLL_PINGPONG)
		return coll_pingpong_half(j->m, j->b->send, j->bytes, j->half);
	return run_plain(j->m, j->o, j->b, j->bytes);
}

/* Through the profiler: allreduce and alltoall are one collective each
 * (NCCL 2.28+ has AlltoAll), a pingpong two p2ps (rank 0 Send then Recv,
 * rank 1 the reverse; other ranks have none). */
static int run_once(struct mesh *m, const struct opts *o, struct bufs *b, size_t bytes)
{
	struct prof_job j = {.m = m, .o = o, .b = b, .bytes = bytes};
	struct profdrv_op op = {.root = -1, .peer = -1, .nchannels = 1, .algo = "RING", .proto = "SIMPLE"};
	int rc = 0;

	if (!prof)
		return run_plain(m, o, b, bytes);
	if (o->coll != COLL_PINGPONG) {
		op.func = o->coll == COLL_ALLREDUCE ? "AllReduce" : "AlltoAll";
		op.datatype = o->coll == COLL_ALLREDUCE ? "ncclFloat32" : "ncclInt8";
		op.count = o->coll == COLL_ALLREDUCE ? bytes / sizeof(float) : bytes / (size_t)o->nranks;
		op.seq = prof_seq++;
		return profrun_op(prof, &op, o->coll == COLL_ALLREDUCE ? 2 * (o->nranks - 1) : 1,
				  prof_job_run, &j);
	}
	if (o->rank > 1)
		return 0;
	op = (struct profdrv_op){
	    .is_p2p = 1, .datatype = "ncclInt8", .count = bytes, .peer = 1 - o->rank, .nchannels = 1};
	for (j.half = 0; j.half < 2 && rc == 0; j.half++) {
		op.func = (o->rank == 0) != j.half ? "Send" : "Recv";
		rc = profrun_op(prof, &op, 1, prof_job_run, &j);
	}
	return rc;
}

/* nccl-tests prints its devices too: what the plugin reports, per device. */
static void print_devices(struct netdrv *d)
{
	int n = 0;

	netdrv_devices(d, &n);
	for (int i = 0; i < n; i++) {
		struct netdrv_props p;

		if (netdrv_props(d, i, &p) == ncclSuccess)
			printf("# device %d: %s, %d Mbps, pci %s, guid %016llx, maxRecvs %d\n", i, p.name,
			       p.speed, p.pci_path ? p.pci_path : "none", (unsigned long long)p.guid,
			       p.max_recvs);
	}
}

static void print_header(const struct opts *o, struct netdrv *d)
{
	if (o->json) {
		printf("{\"plugin\": \"%s\", \"abi\": %d, \"coll\": \"%s\", \"nranks\": %d, \"iters\": %d, "
		       "\"results\": [",
		       netdrv_name(d), netdrv_version(d), coll_names[o->coll], o->nranks, o->iters);
		return;
	}
	printf("# fabriciq-collbench: %s over plugin '%s' (ncclNetPlugin_v%d), %d ranks, %d iterations\n",
	       coll_names[o->coll], netdrv_name(d), netdrv_version(d), o->nranks, o->iters);
	print_devices(d);
	printf("#%12s %12s %8s %6s %10s %8s %8s %8s\n", "size", "count", "type", "redop", "time", "algbw",
	       "busbw", "#wrong");
	printf("#%12s %12s %8s %6s %10s %8s %8s %8s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)",
	       "(GB/s)", "");
}

static void print_row(const struct opts *o, size_t bytes, double us, long wrong, int first)
{
	int n = o->nranks;
	double algbw = us > 0 ? (double)bytes / us / 1e3 : 0;
	double factor = o->coll == COLL_ALLREDUCE  ? 2.0 * (n - 1) / n
			: o->coll == COLL_ALLTOALL ? (double)(n - 1) / n
						   : 1;
	size_t count = o->coll == COLL_ALLREDUCE ? bytes / 4 : bytes;

	if (o->json) {
		printf("%s\n  {\"size\": %zu, \"count\": %zu, \"time_us\": %.2f, \"algbw_gbps\": %.4f, "
		       "\"busbw_gbps\": %.4f, "
		       "\"wrong\": %ld}",
		       first ? "" : ",", bytes, count, us, algbw, algbw * factor, wrong);
		return;
	}
	printf(" %12zu %12zu %8s %6s %10.2f %8.3f %8.3f %8ld\n", bytes, count,
	       o->coll == COLL_ALLREDUCE ? "float" : "int8", o->coll == COLL_ALLREDUCE ? "sum" : "none", us,
	       algbw, algbw * factor, wrong);
	fflush(stdout);
}

/* Round a size down to what the collective can split evenly. */
static size_t usable_bytes(const struct opts *o, size_t bytes)
{
	size_t unit = o->coll == COLL_ALLREDUCE  ? sizeof(float)
		      : o->coll == COLL_ALLTOALL ? (size_t)o->nranks
						 : 1;

	return bytes / unit * unit;
}

static double bus_factor(const struct opts *o)
{
	int n = o->nranks;

	return o->coll == COLL_ALLREDUCE  ? 2.0 * (n - 1) / n
	       : o->coll == COLL_ALLTOALL ? (double)(n - 1) / n
					  : 1;
}

/* The timed iterations. Each one's seconds into lat[i] (NULL: not kept).
 * With --timeline, each result verified (a stale buffer from the
 * iteration before cannot pass) and a busbw line per interval. */
static int run_iters(struct mesh *m, const struct opts *o, struct bufs *b, size_t bytes, double t0,
		     long *wrong, double *lat)
{
	double last = t0;
	int done = 0, rc = 0;

	for (int i = 0; i < o->iters && rc == 0; i++) {
		double t, t1;

		if (o->timeline_ms)
			memset(b->recv, 0xff, bytes);
		if (o->gap_us)
			nanosleep(&(struct timespec){.tv_sec = o->gap_us / 1000000,
						     .tv_nsec = o->gap_us % 1000000 * 1000L},
				  NULL);
		t1 = now_s();
		rc = run_once(m, o, b, bytes);
		t = now_s();
		if (lat)
			lat[i] = t - t1;
		if (rc == 0 && o->timeline_ms && o->check)
			*wrong += count_wrong(o, b, bytes);
		done++;
		if (o->timeline_ms && o->rank == 0 &&
		    (t - last >= o->timeline_ms / 1e3 || i == o->iters - 1)) {
			double bw = (double)bytes * done / (t - last) / 1e9 * bus_factor(o);
			struct timespec rt;

			clock_gettime(CLOCK_REALTIME, &rt); /* to line up with events outside the run */
			printf("# timeline %.3f %.4f %d %ld %.3f\n", t - t0, bw, done, *wrong,
			       (double)rt.tv_sec + rt.tv_nsec / 1e9);
			fflush(stdout);
			last = t;
			done = 0;
		}
	}
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* --percentiles: an iteration lasts until its slowest rank is done (a
 * collective is as late as its last rank), so each iteration's time is
 * the largest over the ranks; rank 0 prints their quantiles (nearest
 * rank). 0, or -1 when a rank was lost. */
static int print_latency(struct bootstrap *bs, const struct opts *o, const double *lat)
{
	size_t n = (size_t)o->iters;
	double *all = malloc(sizeof(double) * n * (size_t)o->nranks), *it = malloc(sizeof(double) * n);
	int rc = -1;

	if (!all || !it || bootstrap_allgather(bs, lat, all, sizeof(double) * n) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		it[i] = 0;
		for (int r = 0; r < o->nranks; r++)
			it[i] = all[(size_t)r * n + i] > it[i] ? all[(size_t)r * n + i] : it[i];
	}
	qsort(it, n, sizeof(double), cmp_double);
#define Q(p) (it[(size_t)((p) * (double)n + 0.999999) - 1] * 1e6)
	if (o->rank == 0) {
		fprintf(o->json ? stderr : stdout, "# latency %zu %.1f %.1f %.1f %.1f\n", n, Q(0.5), Q(0.9),
			Q(0.99), it[n - 1] * 1e6);
		fflush(o->json ? stderr : stdout);
	}
#undef Q
	rc = 0;
out:
	free(all);
	free(it);
	return rc;
}

static int bench(struct mesh *m, struct bootstrap *bs, const struct opts *o, struct bufs *b)
{
	double *times = malloc(sizeof(double) * (size_t)o->nranks);
	long *wrongs = malloc(sizeof(long) * (size_t)o->nranks);
	double *lat = o->percentiles ? malloc(sizeof(double) * (size_t)o->iters) : NULL;
	int first = 1, rc = 0;

	if (!times || !wrongs || (o->percentiles && !lat)) {
		die("out of memory for %d iterations' times", o->iters);
		rc = -1;
	}
	for (size_t size = o->min_bytes; size <= o->max_bytes && rc == 0; size *= (size_t)o->factor) {
		size_t bytes = usable_bytes(o, size);
		double t0, t, tmax = 0;
		long wrong = 0, wsum = 0;

		if (bytes == 0)
			continue;
		init_data(o, b, bytes);
		for (int i = 0; i < o->warmup && rc == 0; i++) {
			if (o->gap_us) /* warming up as it will run: the fabric's state (and the
					* controller's rates) are those of the timed iterations */
				nanosleep(&(struct timespec){.tv_sec = o->gap_us / 1000000,
							     .tv_nsec = o->gap_us % 1000000 * 1000L},
					  NULL);
			rc = run_once(m, o, b, bytes);
		}
		bootstrap_barrier(bs);
		t0 = now_s();
		rc = run_iters(m, o, b, bytes, t0, &wrong, lat);
		t = (now_s() - t0) / o->iters * 1e6;
		if (rc < 0) {
			die("rank %d: %s at %zu bytes", o->rank, mesh_error(m), bytes);
			break;
		}
		if (o->coll == COLL_PINGPONG)
			t /= 2; /* half round trip */
		wrong += o->check ? count_wrong(o, b, bytes) : 0;
		bootstrap_allgather(bs, &t, times, sizeof(t));
		bootstrap_allgather(bs, &wrong, wrongs, sizeof(wrong));
		for (int r = 0; r < o->nranks; r++) {
			tmax = times[r] > tmax ? times[r] : tmax;
			wsum += wrongs[r];
		}
		if (o->rank == 0)
			print_row(o, bytes, tmax, wsum, first);
		if (lat && print_latency(bs, o, lat) < 0) {
			die("rank %d: a rank was lost gathering the iterations' times", o->rank);
			rc = -1;
		}
		first = 0;
		if (wsum)
			rc = -1;
		if (size == 0)
			break;
	}
	free(times);
	free(wrongs);
	free(lat);
	return rc;
}

/* --start-file: every rank connected, then rank 0 says so and waits for the
 * file (the others wait in the barrier after it). */
static int wait_start(struct bootstrap *bs, const struct opts *o)
{
	double end = now_s() + o->timeout_s / 2;

	if (bootstrap_barrier(bs) < 0) {
		die("rank %d: a rank was lost before the start", o->rank);
		return -1;
	}
	if (o->rank == 0) {
		fprintf(o->json ? stderr : stdout, "# connected\n"); /* JSON keeps stdout one document */
		fflush(o->json ? stderr : stdout);
		while (access(o->start_file, F_OK) != 0) {
			if (now_s() > end) {
				die("%s did not appear in %.0f s", o->start_file, o->timeout_s / 2);
				return -1;
			}
			nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
		}
	}
	if (bootstrap_barrier(bs) < 0) {
		die("rank %d: a rank was lost before the start", o->rank);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bootstrap *bs = NULL;
	struct netdrv *d = NULL;
	struct mesh *m = NULL;
	struct bufs b = {0};
	struct opts o;
	char err[512];
	int rc = 2, ndev = 0;

	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	d = load_plugin(&o);
	if (!d)
		return 2;
	if (netdrv_init(d, plugin_log) != ncclSuccess) {
		die("plugin init failed (see its warnings above)");
		goto out;
	}
	if (netdrv_devices(d, &ndev) != ncclSuccess || o.dev >= ndev) {
		die("device %d does not exist (the plugin has %d)", o.dev, ndev);
		goto out;
	}
	if (bootstrap_open(o.nranks > 1 ? o.bootstrap : "127.0.0.1:0", o.rank, o.nranks, (int)o.timeout_s,
			   &bs, err, sizeof(err)) < 0) {
		die("%s", err);
		goto out;
	}
	if (mesh_open(d, bs, o.dev, o.timeout_s, &m, err, sizeof(err)) < 0) {
		die("rank %d: %s", o.rank, err);
		goto out;
	}
	b.send = malloc(o.max_bytes + 64);
	b.recv = malloc(o.max_bytes + 64);
	b.tmp = malloc(o.max_bytes + 64);
	if (!b.send || !b.recv || !b.tmp) {
		die("cannot allocate 3 x %zu bytes", o.max_bytes);
		goto out;
	}
	if (o.profiler) {
		/* One communicator: every rank derives the same hash. */
		uint64_t h = 1469598103934665603ull ^ (uint64_t)o.nranks;

		for (const char *c = o.bootstrap ? o.bootstrap : ""; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ull;
		if (profrun_open(o.profiler, o.profiler_abi, (enum profdrv_net)o.profiler_net, h, o.rank,
				 o.nranks, m, plugin_log, &prof, err, sizeof(err)) < 0) {
			die("%s", err);
			goto out;
		}
	}
	/* the kernel rounds a sleep up by the timer slack (50 us by default):
	 * an idle pass must not cost a latency-bound rank more than it asked */
	if (o.idle_us)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	mesh_set_idle(m, o.idle_us);
	if (o.start_file && wait_start(bs, &o) < 0)
		goto out;
	if (o.rank == 0)
		print_header(&o, d);
	rc = bench(m, bs, &o, &b) < 0 ? 1 : 0;
	if (o.rank == 0) {
		if (o.json)
			printf("\n]}\n");
		else
			printf("# %s\n", rc ? "FAILED" : "OK");
	}
	if (prof)
		profrun_report(prof, o.rank, o.json ? stderr : stdout);
	bootstrap_barrier(bs);
out:
	profrun_close(prof);
	free(b.send);
	free(b.recv);
	free(b.tmp);
	mesh_close(m);
	bootstrap_close(bs);
	netdrv_close(d);
	return rc;
}
