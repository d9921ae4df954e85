/*
 * config: table-driven configuration.
 *
 * A daemon declares its options once, as a table of struct fq_cfg_option
 * (name, type, where it lives in the daemon's config struct, default, range,
 * help). The same table drives the defaults, the file parser, validation,
 * command-line overrides, --help and the dump of the running values.
 *
 * File format (SYSCONFDIR/fabriciq/fabriciq.conf by default: /etc/fabriciq
 * with ./configure --sysconfdir=/etc), one setting a line:
 *
 *     # comment
 *     agent.probe_interval = 10ms        # a comment may follow a value
 *     controller.listen = "198.18.0.1:7100"
 *
 * Keys are "namespace.name". All parts read the same file: a component
 * accepts and ignores keys of the other known namespaces (FQ_CFG_NAMESPACES),
 * and rejects unknown namespaces and unknown names in its own namespace, so a
 * typo never passes silently; so does a key set twice. Values: integers,
 * doubles, booleans (yes/no/true/false/on/off/1/0), strings (double quotes
 * keep blanks and '#'; there are no escapes, so a string cannot hold '"'),
 * durations ("250ms", "1.5s", "10us", "5m", "2h"; a bare number is seconds),
 * sizes ("256MiB", "1G", "4096"; K/M/G/T are powers of 1024), enums (one of
 * the listed names): the parsers of common/parse.h. Errors read "PATH:LINE: message".
 */
#ifndef FQ_COMMON_CONFIG_H
#define FQ_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/parse.h"

/* FQ_SYSCONFDIR: configure's sysconfdir (Makefile.am AM_CPPFLAGS). */
#define FQ_CONFIG_PATH FQ_SYSCONFDIR "/fabriciq/fabriciq.conf"

/* The namespaces of the one shared file. */
#define FQ_CFG_NAMESPACES                                                                                    \
	{                                                                                                    \
		"agent", "controller", "plugin", "spank", "db", NULL                                         \
	}

enum fq_cfg_type {
	FQ_CFG_INT,      /* int64_t */
	FQ_CFG_UINT,     /* uint64_t */
	FQ_CFG_DOUBLE,   /* double */
	FQ_CFG_BOOL,     /* bool */
	FQ_CFG_STRING,   /* char *, owned by the config, freed by fq_cfg_free */
	FQ_CFG_DURATION, /* uint64_t nanoseconds */
	FQ_CFG_SIZE,     /* uint64_t bytes */
	FQ_CFG_ENUM,     /* int: index into choices */
};

struct fq_cfg_option {
	const char *name; /* without the namespace: "probe_interval" */
	enum fq_cfg_type type;
	size_t offset;              /* offsetof(struct daemon_config, field) */
	const char *def;            /* default, written as in the file; NULL: 0 / NULL string */
	double min, max;            /* numeric range, inclusive; min == max: unbounded */
	const char *const *choices; /* FQ_CFG_ENUM: NULL-terminated names */
	const char *help;
};

struct fq_cfg_schema {
	const char *ns;                      /* this component's namespace: "agent" */
	const struct fq_cfg_option *options; /* terminated by an entry with name == NULL */
};

/* Every option to its default. Returns 0, or -EINVAL with err filled when a
 * default itself is invalid (a bug in the table). */
int fq_cfg_defaults(const struct fq_cfg_schema *s, void *cfg, char *err, size_t errlen);

/* Parse a file over the current values. Returns 0; -ENOENT (and others from
 * fopen) if it cannot be read; -EINVAL on the first bad line. err gets
 * "PATH:LINE: message" or "PATH: strerror". */
int fq_cfg_load(const struct fq_cfg_schema *s, void *cfg, const char *path, char *err, size_t errlen);

/* Parse file contents from memory, `name` standing in for the path in errors. */
int fq_cfg_load_string(const struct fq_cfg_schema *s, void *cfg, const char *name, const char *text,
		       char *err, size_t errlen);

/* One setting (for command-line overrides): key with or without the
 * namespace. Returns 0 or -EINVAL with err filled. */
int fq_cfg_set(const struct fq_cfg_schema *s, void *cfg, const char *key, const char *value, char *err,
	       size_t errlen);

/* What a daemon's command line asks: defaults, then the file at path (a
 * missing FQ_CONFIG_PATH is fine: defaults only; any other missing file is
 * an error), then each "KEY=VALUE" of sets (edited in place). Returns 0, or
 * -EINVAL with err saying which step failed and why. */
int fq_cfg_load_all(const struct fq_cfg_schema *s, void *cfg, const char *path, char **sets, int nsets,
		    char *err, size_t errlen);

/* --help text: one block per option, with type, default and range. */
void fq_cfg_print_help(const struct fq_cfg_schema *s, FILE *out);

/* The running values, as a valid config file. */
void fq_cfg_dump(const struct fq_cfg_schema *s, const void *cfg, FILE *out);

/* Free the strings the config owns. */
void fq_cfg_free(const struct fq_cfg_schema *s, void *cfg);

#endif /* FQ_COMMON_CONFIG_H */
