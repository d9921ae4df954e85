/*
 * spank_conf: the SPANK plugin's plugstack.conf arguments and its MODE
 * values (pure: no I/O, no Slurm calls, so unit tests feed strings).
 *
 * plugstack.conf line:
 *   optional /path/spank_fabriciq.so [key=value ...]
 * Keys: ifaces (the back-end NICs, comma-separated, exported to the tasks
 * as FABRICIQ_IFACES unless the job sets it), libdir (the directory of
 * libnccl-net-fabriciq.so, named to NCCL by its path), step_socket,
 * telemetry_socket, clock_page, path_page (paths; "%n"
 * expands to the node name, "%%" to "%"; the last three are overrides of
 * what the agent tells, empty unless given), mode (what a bare --fabriciq
 * means: monitor|control), default (site default for jobs without the
 * option: off|monitor|control), required (yes|no: a step asking for
 * fabriciq fails if the agent is unreachable), timeout_ms (every socket
 * operation with the agent, 1-60000), controller (the API's URL,
 * http://HOST[:PORT]: srun then prints the job-end line, spank/end_report.h;
 * "" (the default): no line), munge_socket (munged's socket for that
 * request; "": munge's default), end_wait_ms (how long srun waits for every
 * node's end of the step to reach the controller, 0-60000, default 5000),
 * monitor_via (how monitor mode observes NCCL: profiler, the default, names
 * fabriciq's profiler plugin in NCCL_PROFILER_PLUGIN and leaves NCCL's
 * transports alone; net, fabriciq's net plugin carries the traffic as
 * control mode does, the behaviour before profiler telemetry),
 * control_profiler (yes|no, default no: control mode also names the
 * profiler plugin, for per-collective figures beside its lanes),
 * profiler_libdir (the directory of libnccl-profiler-fabriciq.so when it
 * is not libdir: a build tree), class (one network class, repeatable:
 * class=NAME,dscp=D[,sl=S],prio=P|weight=W[,qos=QOS[+QOS...]]; see struct
 * fq_spank_class), default_class (the class of a job that names none and
 * whose Slurm QOS maps to none; "": no class).
 * Unknown keys and bad values are errors.
 * Values are read by common/parse.h's parsers (choices, decimal numbers).
 */
#ifndef FQ_SPANK_CONF_H
#define FQ_SPANK_CONF_H

#include <stdbool.h>
#include <stddef.h>

enum fq_spank_mode {
	FQ_MODE_UNSET = 0, /* no option, no propagated value */
	FQ_MODE_OFF,
	FQ_MODE_MONITOR,
	FQ_MODE_CONTROL,
};

#define FQ_SPANK_PATH_MAX 256
#define FQ_SPANK_CLASSES  8  /* network classes in the table */
#define FQ_SPANK_NAME_MAX 32 /* a class's name, with its NUL */

/* A network class ("QoS between jobs"): what a job's lanes are marked
 * with, and what the fabric is expected to do with the mark. The plugins
 * mark; switches schedule (doc/design.md says which fabric does what). */
struct fq_spank_class {
	char name[FQ_SPANK_NAME_MAX]; /* [A-Za-z0-9_-]+ */
	int dscp;                     /* 0..63: IP DS field (TCP lanes, RoCE), FABRICIQ_DSCP */
	int sl;                       /* 0..15: an IB lane's service level; -1: not set */
	/* the fabric's scheduling of the class, one of: strict priority
	 * (0 first, 0..6) or a weight (1..100) in the share of what the
	 * priority classes leave; -1 / 0 when not that kind */
	int prio, weight;
	char qos[128]; /* the Slurm QOS names given this class, '+'-separated; "" none */
};

struct fq_spank_conf {
	char libdir[FQ_SPANK_PATH_MAX];
	char profiler_libdir[FQ_SPANK_PATH_MAX]; /* "": libdir */
	char step_socket[FQ_SPANK_PATH_MAX];     /* unexpanded: may hold %n */
	/* Overrides of the paths the agent tells ("": the agent's). */
	char telemetry_socket[FQ_SPANK_PATH_MAX];
	char clock_page[FQ_SPANK_PATH_MAX];
	char path_page[FQ_SPANK_PATH_MAX];
	char ifaces[FQ_SPANK_PATH_MAX];  /* back-end NICs for FABRICIQ_IFACES; "": the plugin detects them */
	enum fq_spank_mode bare_mode;    /* mode=: --fabriciq without a value */
	enum fq_spank_mode site_default; /* default=: jobs without the option */
	bool required;
	int timeout_ms;
	char controller[FQ_SPANK_PATH_MAX];   /* "": no job-end line */
	char munge_socket[FQ_SPANK_PATH_MAX]; /* "": munge's default */
	int end_wait_ms;
	bool monitor_net;      /* monitor_via=net */
	bool control_profiler; /* control_profiler=yes */
	struct fq_spank_class classes[FQ_SPANK_CLASSES];
	int nclasses;
	char default_class[FQ_SPANK_NAME_MAX]; /* "": none */
};

/* Which NCCL plugins a step of this mode gets (pure): *net
 * (NCCL_NET_PLUGIN = fabriciq's net plugin), *profiler
 * (NCCL_PROFILER_PLUGIN = fabriciq's profiler plugin). OFF/UNSET: neither. */
void fq_spank_nccl_plugins(const struct fq_spank_conf *conf, enum fq_spank_mode mode, bool *net,
			   bool *profiler);

/* Fill conf with the built-in defaults (the step socket of
 * common/step_socket.h, no path overrides, libdir as given, monitor, off,
 * not required, 2000 ms, no controller, 5000 ms end wait). */
void fq_spank_conf_defaults(struct fq_spank_conf *conf, const char *libdir);

/* Parse argv[0..ac) (key=value words) over the defaults already in conf.
 * Returns 0, or -EINVAL with a one-line reason naming the word in err. */
int fq_spank_conf_parse(struct fq_spank_conf *conf, int ac, char **argv, char *err, size_t errlen);

/* The class named name in the table, or NULL. */
const struct fq_spank_class *fq_spank_class_find(const struct fq_spank_conf *conf, const char *name);

/* A step's class: the one the job named (the option's, else the one the
 * client propagated, SLURM_FABRICIQ_CLASS's value; NULL or "" if none),
 * else the one its Slurm QOS is given (qos: SLURM_JOB_QOS's value, NULL
 * if unknown), else default_class, else NULL (no class: unmarked).
 * *bad is set when the job named a class the table does not have (then
 * ignored, as an unknown propagated mode is). */
const struct fq_spank_class *fq_spank_step_class(const struct fq_spank_conf *conf, const char *named,
						 const char *qos, bool *bad);

/* The --fabriciq argument: comma-separated words, at most one MODE (as
 * fq_spank_mode_parse) and at most one class=NAME, in any order
 * ("control,class=inference"; NULL or "": the bare mode). Fills *mode
 * and cls ("" when none named; a name is not checked against the table
 * here). Returns 0, or -EINVAL with the reason in err. */
int fq_spank_option_parse(const char *arg, enum fq_spank_mode bare, enum fq_spank_mode *mode, char *cls,
			  size_t clslen, char *err, size_t errlen);

/* Parse a MODE as the user writes it ("monitor", "control", "off"; case
 * matters, as for other Slurm options). NULL or "" gives bare, the
 * configured default of a bare --fabriciq. Returns the mode, or
 * FQ_MODE_UNSET if the word is not a mode. */
enum fq_spank_mode fq_spank_mode_parse(const char *word, enum fq_spank_mode bare);

/* A step's mode: the --fabriciq option (opt) if given, else the mode the
 * client propagated (SLURM_FABRICIQ_MODE's value, NULL if unset; a value
 * that is no mode counts as unset), else the site default. */
enum fq_spank_mode fq_spank_step_mode(enum fq_spank_mode opt, const char *propagated,
				      enum fq_spank_mode site_default);

/* "off", "monitor", "control" ("" for UNSET). */
const char *fq_spank_mode_name(enum fq_spank_mode mode);

/* Expand %n (node) and %% in path into out. Returns 0, -ENAMETOOLONG, or
 * -EINVAL for another %-sequence. */
int fq_spank_path_expand(const char *path, const char *node, char *out, size_t outlen);

/* One of the agent's paths as the tasks get it, into out: the plugstack
 * override (expanded for node) when not "", else what the agent told when
 * not "", else dflt (common/step_socket.h). Returns 0, or -ENAMETOOLONG /
 * -EINVAL as fq_spank_path_expand. */
int fq_spank_agent_path(const char *override, const char *node, const char *told, const char *dflt, char *out,
			size_t outlen);

#endif /* FQ_SPANK_CONF_H */
