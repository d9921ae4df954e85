/*
 * signkey: Ed25519 keys (libsodium) that bind a name to a host, where
 * munge cannot: every host's root can mint a root munge credential, so
 * munge says "root somewhere in the cluster", never "node n3" or "the
 * controller".
 *
 * A node's key proves its name to the controller (AgentHello's
 * node_signature, checked against the public key the node name is bound to:
 * controller/nodebind.h); the controller's key proves the controller to
 * its agents (the controller's Auth signature, checked against
 * agent.controller_key). Each signature covers a domain string and the
 * connection's two nonces, so it is good for one connection and one
 * purpose only.
 *
 * Files: a secret key is one line "ed25519-secret:BASE64" (the 32-byte
 * seed), in a regular file of its own, owned by the process's uid and not
 * readable by group or others; it is created with O_EXCL and read without
 * following a symlink. A public key is written "ed25519:BASE64" (32 bytes).
 */
#ifndef FQ_COMMON_SIGNKEY_H
#define FQ_COMMON_SIGNKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FQ_SIGN_PUBLIC_SIZE   32
#define FQ_SIGN_SIZE          64
#define FQ_SIGN_PUBLIC_TEXT   56 /* "ed25519:" + 44 base64 + NUL, rounded */
#define FQ_SIGN_PUBLIC_PREFIX "ed25519:"

struct fq_signkey {
	uint8_t secret[64]; /* libsodium's: seed and public key */
	uint8_t public[FQ_SIGN_PUBLIC_SIZE];
};

/* One part of a signed message (each is length-prefixed in the message). */
struct fq_sign_part {
	const void *data;
	size_t len;
};

/* A new key written to path (mode 0600, which must not exist). 0 and *k,
 * or a negative errno with a message in err. */
int fq_signkey_create(const char *path, struct fq_signkey *k, char *err, size_t errlen);

/* --new-key of either daemon: a new key in path (as fq_signkey_create)
 * and its public key's text in text (FQ_SIGN_PUBLIC_TEXT bytes). */
int fq_signkey_new(const char *path, char *text, size_t len, char *err, size_t errlen);

/* The key in path: 0 and *k; -ENOENT no such file; another negative errno
 * (a symlink, not a regular file, another owner, readable or writable by
 * group or others, not a key) with a message in err. */
int fq_signkey_load(const char *path, struct fq_signkey *k, char *err, size_t errlen);

/* "ed25519:BASE64" of a public key into out (FQ_SIGN_PUBLIC_TEXT bytes). */
void fq_signkey_public_text(const uint8_t public[FQ_SIGN_PUBLIC_SIZE], char *out, size_t len);

/* Is text a public key's text ("ed25519:" prefix)? */
bool fq_signkey_is_public_text(const char *text);

/* Parse "ed25519:BASE64": 0 and public, or -EINVAL. */
int fq_signkey_public_parse(const char *text, uint8_t public[FQ_SIGN_PUBLIC_SIZE]);

/* Sign domain (a NUL-terminated purpose, signed with its NUL) followed by
 * the parts, each prefixed by its length (4 bytes, big-endian). 0, or
 * -EMSGSIZE for a message over 4 KiB. */
int fq_sign(const struct fq_signkey *k, const char *domain, const struct fq_sign_part *parts, size_t nparts,
	    uint8_t sig[FQ_SIGN_SIZE]);

/* Does sig (siglen bytes) sign that message with the key public? */
bool fq_sign_verify(const uint8_t public[FQ_SIGN_PUBLIC_SIZE], const char *domain,
		    const struct fq_sign_part *parts, size_t nparts, const uint8_t *sig, size_t siglen);

/* The two purposes. */
#define FQ_SIGN_NODE_HELLO      "fabriciq node hello v1"
#define FQ_SIGN_CONTROLLER_AUTH "fabriciq controller auth v1"

#endif /* FQ_COMMON_SIGNKEY_H */
