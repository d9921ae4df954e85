/* test-signkey: node and controller keys (common/signkey.h). A key file is
 * made 0600 and never over another file; one that is a symlink, another
 * uid's, readable by others or not a key is refused; a signature holds for
 * its own key, domain and parts only (a part moved across the boundary of
 * two parts, a flipped bit, another nonce or name: refused). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/signkey.h"
#include "tests/unit/tap.h"

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(path, mode);
}

int main(void)
{
	char base[] = "/tmp/fq-signkey-XXXXXX", path[PATH_MAX], other[PATH_MAX], link[PATH_MAX];
	char err[512], text[FQ_SIGN_PUBLIC_TEXT], text2[FQ_SIGN_PUBLIC_TEXT];
	struct fq_signkey k, k2, loaded;
	uint8_t pub[FQ_SIGN_PUBLIC_SIZE], sig[FQ_SIGN_SIZE], bad[FQ_SIGN_SIZE];
	uint8_t nonce1[16], nonce2[16];
	struct stat st;
	const char *node = "n3";

	plan(33);
	if (!mkdtemp(base))
		return 1;
	memset(nonce1, 1, sizeof(nonce1));
	memset(nonce2, 2, sizeof(nonce2));

	snprintf(path, sizeof(path), "%s/node.key", base);
	is_int(fq_signkey_create(path, &k, err, sizeof(err)), 0, "a new key");
	if (stat(path, &st) < 0)
		st.st_mode = 0;
	ok((st.st_mode & 0777) == 0600, "its file is 0600 (%o)", st.st_mode & 0777);
	is_int(fq_signkey_create(path, &k2, err, sizeof(err)), -EEXIST,
	       "never written over an existing file");
	is_int(fq_signkey_load(path, &loaded, err, sizeof(err)), 0, "read back");
	ok(!memcmp(loaded.public, k.public, sizeof(k.public)) &&
	       !memcmp(loaded.secret, k.secret, sizeof(k.secret)),
	   "the same key");
	snprintf(other, sizeof(other), "%s/other.key", base);
	is_int(fq_signkey_create(other, &k2, err, sizeof(err)), 0, "a second key");
	ok(memcmp(k.public, k2.public, sizeof(k.public)), "... another one");

	fq_signkey_public_text(k.public, text, sizeof(text));
	like(text, "ed25519:", "a public key's text: %s", text);
	is_int((int)strlen(text), 52, "52 characters (44 of base64)");
	ok(fq_signkey_is_public_text(text) && !fq_signkey_is_public_text("198.18.0.12"),
	   "a key's text is told from an address");
	is_int(fq_signkey_public_parse(text, pub), 0, "parsed back");
	ok(!memcmp(pub, k.public, sizeof(pub)), "the same public key");
	is_int(fq_signkey_public_parse("ed25519:AAAA", pub), -EINVAL, "a short key: refused");
	is_int(fq_signkey_public_parse("ed25519:!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", pub), -EINVAL,
	       "not base64: refused");
	snprintf(text2, sizeof(text2), "%sX", text);
	is_int(fq_signkey_public_parse(text2, pub), -EINVAL, "trailing bytes: refused");

	/* files that are not a secret key of ours */
	chmod(path, 0640);
	is_int(fq_signkey_load(path, &loaded, err, sizeof(err)), -EPERM, "readable by the group: refused");
	like(err, "group or others", "... saying why: %s", err);
	chmod(path, 0400);
	is_int(fq_signkey_load(path, &loaded, err, sizeof(err)), 0, "0400: fine");
	if (geteuid() == 0 && chown(path, 65534, (gid_t)-1) == 0) {
		is_int(fq_signkey_load(path, &loaded, err, sizeof(err)), -EPERM,
		       "another uid's file: refused");
		if (chown(path, 0, (gid_t)-1) < 0)
			return 1;
	} else {
		skip(1, "not root: cannot give the file to another uid");
	}
	snprintf(link, sizeof(link), "%s/link.key", base);
	if (symlink(path, link) < 0)
		return 1;
	is_int(fq_signkey_load(link, &loaded, err, sizeof(err)), -ELOOP, "a symlink to a good key: refused");
	like(err, "symbolic link", "... saying why: %s", err);
	snprintf(link, sizeof(link), "%s/garbage.key", base);
	write_file(link, "ed25519-secret:not-a-key\n", 0600);
	is_int(fq_signkey_load(link, &loaded, err, sizeof(err)), -EINVAL, "garbage: refused");
	write_file(link, text, 0600);
	is_int(fq_signkey_load(link, &loaded, err, sizeof(err)), -EINVAL,
	       "a public key in its place: refused");
	snprintf(link, sizeof(link), "%s/none.key", base);
	is_int(fq_signkey_load(link, &loaded, err, sizeof(err)), -ENOENT, "missing: -ENOENT");

	/* signatures */
	{
		struct fq_sign_part parts[] = {{nonce1, 16}, {nonce2, 16}, {node, strlen(node)}};
		struct fq_sign_part swapped[] = {{nonce2, 16}, {nonce1, 16}, {node, strlen(node)}};
		uint8_t tail[3] = {2, 'n', '3'}; /* nonce2's last byte and the name */
		struct fq_sign_part moved[] = {{nonce1, 16}, {nonce2, 15}, {tail, sizeof(tail)}};
		struct fq_sign_part other_node[] = {{nonce1, 16}, {nonce2, 16}, {"n4", 2}};
		char long_part[5000] = {0};
		struct fq_sign_part too_long[] = {{long_part, sizeof(long_part)}};

		is_int(fq_sign(&k, FQ_SIGN_NODE_HELLO, parts, 3, sig), 0, "signed");
		ok(fq_sign_verify(k.public, FQ_SIGN_NODE_HELLO, parts, 3, sig, sizeof(sig)), "verified");
		ok(!fq_sign_verify(k2.public, FQ_SIGN_NODE_HELLO, parts, 3, sig, sizeof(sig)),
		   "another key: no");
		ok(!fq_sign_verify(k.public, FQ_SIGN_CONTROLLER_AUTH, parts, 3, sig, sizeof(sig)),
		   "another purpose: no");
		ok(!fq_sign_verify(k.public, FQ_SIGN_NODE_HELLO, swapped, 3, sig, sizeof(sig)),
		   "the nonces swapped (another connection): no");
		ok(!fq_sign_verify(k.public, FQ_SIGN_NODE_HELLO, moved, 3, sig, sizeof(sig)),
		   "the same bytes, cut between the parts elsewhere: no");
		ok(!fq_sign_verify(k.public, FQ_SIGN_NODE_HELLO, other_node, 3, sig, sizeof(sig)),
		   "another node name: no");
		memcpy(bad, sig, sizeof(bad));
		bad[17] ^= 0x10;
		ok(!fq_sign_verify(k.public, FQ_SIGN_NODE_HELLO, parts, 3, bad, sizeof(bad)) &&
		       !fq_sign_verify(k.public, FQ_SIGN_NODE_HELLO, parts, 3, sig, sizeof(sig) - 1) &&
		       !fq_sign_verify(k.public, FQ_SIGN_NODE_HELLO, parts, 3, NULL, 0),
		   "a flipped bit, a short or missing signature: no");
		is_int(fq_sign(&k, FQ_SIGN_NODE_HELLO, too_long, 1, sig), -EMSGSIZE,
		       "a message over 4 KiB: refused");
	}
	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	if (system(path) != 0)
		diag("cannot remove %s", base);
	return done_testing();
}
