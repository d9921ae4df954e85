/* common/config: the table drives defaults, parsing, validation and help. */
#include "common/config.h"

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

#include "tests/unit/tap.h"

struct cfg {
	int64_t retries;
	uint64_t peers;
	double ratio;
	bool verbose;
	char *name;
	uint64_t interval;
	uint64_t spool;
	int mode;
};

static const char *const modes[] = {"monitor", "control", NULL};

static const struct fq_cfg_option opts[] = {
    {"retries", FQ_CFG_INT, offsetof(struct cfg, retries), "3", -1, 100, NULL, "retries"},
    {"peers", FQ_CFG_UINT, offsetof(struct cfg, peers), "10", 1, 64, NULL, "peers per NIC"},
    {"ratio", FQ_CFG_DOUBLE, offsetof(struct cfg, ratio), "0.5", 0, 0, NULL, "a ratio"},
    {"verbose", FQ_CFG_BOOL, offsetof(struct cfg, verbose), "no", 0, 0, NULL, "chatty"},
    {"name", FQ_CFG_STRING, offsetof(struct cfg, name), "node", 0, 0, NULL, "a name"},
    {"interval", FQ_CFG_DURATION, offsetof(struct cfg, interval), "250ms", 1e6, 60e9, NULL, "interval"},
    {"spool", FQ_CFG_SIZE, offsetof(struct cfg, spool), "256MiB", 0, 0, NULL, "spool bound"},
    {"mode", FQ_CFG_ENUM, offsetof(struct cfg, mode), "monitor", 0, 0, modes, "mode"},
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL},
};

static const struct fq_cfg_schema schema = {"agent", opts};

static int load(struct cfg *c, const char *text, char *err, size_t len)
{
	return fq_cfg_load_string(&schema, c, "t.conf", text, err, len);
}

int main(void)
{
	struct cfg c = {0};
	char err[512];
	uint64_t u;
	bool b;

	is_int(fq_cfg_defaults(&schema, &c, err, sizeof(err)), 0, "defaults apply");
	is_int(c.retries, 3, "int default");
	is_int(c.interval, 250000000, "duration default 250ms");
	is_int(c.spool, 256ull << 20, "size default 256MiB");
	is_str(c.name, "node", "string default");
	is_int(c.mode, 0, "enum default");

	is_int(
	    load(
		&c,
		"# comment\n\n  agent.retries = -1\nagent.name = \"n 1\"\nagent.interval=1.5s\n"
		"agent.spool = 1G\ncontroller.listen = 1.2.3.4:7\nagent.mode = control\nagent.verbose = on\n",
		err, sizeof(err)),
	    0, "a good file loads");
	is_int(c.retries, -1, "negative int");
	is_str(c.name, "n 1", "quoted string keeps its space");
	is_int(c.interval, 1500000000, "1.5s");
	is_int(c.spool, 1ull << 30, "1G = 2^30");
	is_int(c.mode, 1, "enum value");
	ok(c.verbose, "bool 'on'");

	ok(load(&c, "agent.bogus = 1\n", err, sizeof(err)) == -EINVAL, "unknown key refused");
	is_str(err, "t.conf:1: unknown key 'agent.bogus'", "error names file:line and key");
	ok(load(&c, "\n\nfoo.x = 1\n", err, sizeof(err)) == -EINVAL, "unknown namespace refused");
	like(err, "t.conf:3: unknown namespace", "... at line 3");
	ok(load(&c, "retries = 1\n", err, sizeof(err)) == -EINVAL, "key without namespace refused");
	like(err, "write agent.retries", "... with the fix in the message");
	ok(load(&c, "agent.peers = 0\n", err, sizeof(err)) == -EINVAL, "below range refused");
	is_str(err, "t.conf:1: agent.peers: 0 is out of range [1, 64]", "full key and range in the message");
	ok(load(&c, "agent.peers = -3\n", err, sizeof(err)) == -EINVAL, "negative unsigned refused");
	ok(load(&c, "agent.interval = 100\n", err, sizeof(err)) == -EINVAL, "100 s > 60 s max refused");
	ok(load(&c, "agent.interval = 5parsecs\n", err, sizeof(err)) == -EINVAL, "bad duration unit");
	is_str(err, "t.conf:1: agent.interval: '5parsecs' is not a valid duration", "... named");
	ok(load(&c, "agent.mode = turbo\n", err, sizeof(err)) == -EINVAL, "bad enum");
	like(err, "one of: monitor, control", "choices listed");
	ok(load(&c, "agent.verbose = maybe\n", err, sizeof(err)) == -EINVAL, "bad bool");
	ok(load(&c, "agent.retries = 1\nagent.retries = 2\n", err, sizeof(err)) == -EINVAL, "duplicate key");
	like(err, "t.conf:2: 'agent.retries' is set twice", "duplicate at line 2");
	ok(load(&c, "agent.retries\n", err, sizeof(err)) == -EINVAL, "line without '='");
	ok(load(&c, "agent.name = \"open\n", err, sizeof(err)) == -EINVAL, "unbalanced quote");
	ok(load(&c, "agent.retries = 12abc\n", err, sizeof(err)) == -EINVAL, "trailing junk in int");
	ok(load(&c, "agent.name = \"a\" b\n", err, sizeof(err)) == -EINVAL, "text after the closing quote");
	like(err, "t.conf:1: agent.name: unbalanced quote", "... named");
	ok(load(&c, "agent.name = a\"b\n", err, sizeof(err)) == -EINVAL, "stray quote in a bare value");

	/* Comments after values; '#' inside quotes or words is part of the value. */
	is_int(load(&c, "agent.retries = 7 # seven\nagent.name = x#1\t# bare\n", err, sizeof(err)), 0,
	       "comments after values");
	ok(c.retries == 7 && !strcmp(c.name, "x#1"), "... stripped; '#' inside a word kept");
	is_int(load(&c, "agent.name = \" a # b \"  # c\n", err, sizeof(err)), 0, "quoted '#'");
	is_str(c.name, " a # b ", "... kept with its blanks");
	is_int(load(&c, "agent.name =\n", err, sizeof(err)), 0, "empty string value");
	is_str(c.name, "", "... is empty");
	ok(load(&c, "agent.peers = # none\n", err, sizeof(err)) == -EINVAL, "empty number refused");
	is_str(err, "t.conf:1: agent.peers: '' is not a valid unsigned", "... named");

	ok(fq_cfg_load(&schema, &c, "/nonexistent/fabriciq.conf", err, sizeof(err)) == -ENOENT,
	   "missing file -> -ENOENT");
	like(err, "/nonexistent/fabriciq.conf: No such file", "... with path and strerror");

	is_int(fq_cfg_set(&schema, &c, "peers", "12", err, sizeof(err)), 0, "override without namespace");
	is_int(c.peers, 12, "override applied");
	ok(fq_cfg_set(&schema, &c, "controller.listen", "x", err, sizeof(err)) == -EINVAL,
	   "override of another component's key refused");

	ok(fq_parse_duration("250ms", &u) == 0 && u == 250000000, "250ms");
	ok(fq_parse_duration("10us", &u) == 0 && u == 10000, "10us");
	ok(fq_parse_duration("5m", &u) == 0 && u == 300000000000ull, "5m");
	ok(fq_parse_duration("-1s", &u) == -EINVAL, "negative duration refused");
	ok(fq_parse_duration("nan", &u) == -EINVAL, "nan refused");
	ok(fq_parse_size("4096", &u) == 0 && u == 4096, "bare size");
	ok(fq_parse_size("1e30", &u) == -EINVAL, "size overflow refused");
	ok(fq_parse_bool("TRUE", &b) == 0 && b, "bool case-insensitive");

	{
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		struct cfg d = {0};

		fq_cfg_dump(&schema, &c, f);
		fclose(f);
		fq_cfg_defaults(&schema, &d, err, sizeof(err));
		is_int(load(&d, text, err, sizeof(err)), 0, "a dump loads back");
		ok(d.peers == c.peers && d.interval == c.interval && d.mode == c.mode &&
		       !strcmp(d.name, c.name),
		   "... to the same values");
		free(text);
		fq_cfg_free(&schema, &d);
	}
	{
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		fq_cfg_print_help(&schema, f);
		fclose(f);
		like(text, "agent.interval (duration, default 250ms", "help shows type and default");
		like(text, "one of: monitor control", "help lists choices");
		free(text);
	}
	fq_cfg_free(&schema, &c);
	ok(c.name == NULL, "free clears strings");
	return done_testing();
}
