/*
 * test-nodebind: controller/nodebind.h. A node name is bound to the
 * address it first came from, on disk, across a restart; another address
 * is refused; an operator's edit takes effect on reload, and a broken file
 * neither loads nor replaces what is held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/nodebind.h"
#include "tests/unit/tap.h"

static char path[256];

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

static int file_has(const char *line)
{
	char buf[4096] = "";
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return strstr(buf, line) != NULL;
}

int main(void)
{
	char dir[] = "/tmp/fq-nodebind-XXXXXX", err[512] = "";
	struct fq_nodebind *b, *b2;
	const char *bound = NULL;

	if (!mkdtemp(dir))
		skip_all("no temporary directory");
	snprintf(path, sizeof(path), "%s/sub/dir/node-addresses", dir);

	is_int(fq_nodebind_open(path, &b, err, sizeof(err)), 0,
	       "a missing file opens empty, its directories made");
	is_int((int)fq_nodebind_count(b), 0, "... no bindings");
	is_int(fq_nodebind_check(b, "n1", "198.18.0.3", &bound), 1, "n1's first session binds it");
	ok(bound && !strcmp(bound, "198.18.0.3"), "... to its address");
	ok(file_has("n1 198.18.0.3\n"), "... on disk at once");
	is_int(fq_nodebind_check(b, "n1", "198.18.0.3", NULL), 0, "n1 again from its address: allowed");
	is_int(fq_nodebind_check(b, "n1", "198.18.0.9", &bound), -EPERM,
	       "n1 claimed from another address: refused");
	ok(bound && !strcmp(bound, "198.18.0.3"), "... naming the address n1 belongs to");
	is_int(fq_nodebind_check(b, "n2", "198.18.0.9", NULL), 1, "n2 binds to its own");
	fq_nodebind_close(b);

	is_int(fq_nodebind_open(path, &b, err, sizeof(err)), 0, "after a restart");
	is_int((int)fq_nodebind_count(b), 2, "... both bindings are back");
	is_int(fq_nodebind_check(b, "n1", "198.18.0.9", NULL), -EPERM,
	       "... and n1 still refused from n2's address");

	/* The operator moves n1: deletes its line, reloads. */
	write_file("# moved n1\nn2 198.18.0.9\n");
	is_int(fq_nodebind_reload(b, err, sizeof(err)), 0, "reload after an edit");
	is_int(fq_nodebind_check(b, "n1", "198.18.0.11", NULL), 1, "n1 binds to its new address");
	is_int(fq_nodebind_check(b, "n1", "198.18.0.3", NULL), -EPERM, "... and its old one is refused");

	/* A broken file: reload fails with its line, what is held stays. */
	write_file("n1 198.18.0.11\nn2\n");
	is_int(fq_nodebind_reload(b, err, sizeof(err)), -EINVAL, "a line without an address: reload refused");
	like(err, "node-addresses:2: not a \"NODE ADDRESS\" line", "... naming the file and line (%s)", err);
	is_int(fq_nodebind_check(b, "n2", "198.18.0.9", NULL), 0, "... and the bindings held before stay");
	is_int(fq_nodebind_open(path, &b2, err, sizeof(err)), -EINVAL, "a controller does not start on it");
	write_file("n1 198.18.0.11 extra\n");
	is_int(fq_nodebind_open(path, &b2, err, sizeof(err)), -EINVAL, "nor on a line with a third word");

	/* A name is whatever an agent sent: it survives the file whole. */
	write_file("");
	is_int(fq_nodebind_reload(b, err, sizeof(err)), 0, "an empty file");
	is_int(fq_nodebind_check(b, "n 1\t#x\n%41", "198.18.0.5", NULL), 1,
	       "a name with a space, tab, '#', newline, '%%'");
	ok(file_has("n%201%09%23x%0A%2541 198.18.0.5\n"), "... written escaped");
	is_int(fq_nodebind_open(path, &b2, err, sizeof(err)), 0, "... and read back (%s)", err);
	is_int(fq_nodebind_check(b2, "n 1\t#x\n%41", "198.18.0.6", NULL), -EPERM, "... as the same name");
	fq_nodebind_close(b2);

	/* A key binding is the operator's: read, never learned, and kept whole
	 * when a new address binding rewrites the file. */
	write_file("n2 ed25519:IhNlLs8gvxtc7zodeT7L/9h1mRMp+ekT5tm65mUCfxs=\n");
	is_int(fq_nodebind_reload(b, err, sizeof(err)), 0, "a node bound to a key");
	is_str(fq_nodebind_get(b, "n2"),
	       "ed25519:IhNlLs8gvxtc7zodeT7L/9h1mRMp+ekT5tm65mUCfxs=", "... its binding");
	is_int(fq_nodebind_check(b, "n5", "198.18.0.7", NULL), 1, "another node binds to its address");
	ok(file_has("n2 ed25519:IhNlLs8gvxtc7zodeT7L/9h1mRMp+ekT5tm65mUCfxs=\n"),
	   "... and the key's line is written back as it was");
	write_file("n%00 198.18.0.5\n");
	is_int(fq_nodebind_open(path, &b2, err, sizeof(err)), -EINVAL, "a NUL escape is refused");
	fq_nodebind_close(b);

	snprintf(err, sizeof(err), "rm -rf '%s'", dir);
	ok(system(err) == 0, "cleanup");
	return done_testing();
}
