/*
 * nodebind: which host each node name belongs to: a key an operator
 * provisioned, else the address it first came from (trusted on first use).
 *
 * munge proves that an agent's credential is root's on some host of the
 * cluster, not which host: any root may name any node in its AgentHello.
 * The first session that names a node binds the name to the address it
 * connected from; a later session that names it from another address is
 * refused. Root on one host can then report as another node only if that
 * node never connected, not while its agent is away.
 *
 * A stronger binding is a key: a line "NODE ed25519:BASE64" (the node's
 * public key, which `fabriciq-agent --new-key` prints) binds the name to
 * whoever holds the secret key, from any address; the controller then
 * takes a hello for the node only if it is signed with that key
 * (common/signkey.h; controller.node_keys_required refuses every node
 * bound otherwise). Key lines are the operator's: never learned, kept as
 * they are when the file is rewritten.
 *
 * The bindings are a text file, one "NODE ADDRESS" line each ('#' starts a
 * comment; in NODE, a byte other than [A-Za-z0-9._-] is %XX), rewritten whole (a temporary file, fsync, rename, fsync of the
 * directory) when a binding is added, and read again by
 * fq_nodebind_reload: an operator moves a node to a new address by
 * deleting its line and reloading the controller (SIGHUP).
 *
 * Not thread-safe: the controller's event loop owns it.
 */
#ifndef FQ_CONTROLLER_NODEBIND_H
#define FQ_CONTROLLER_NODEBIND_H

#include <stddef.h>

struct fq_nodebind;

/* Load the bindings at path (a missing file: none yet; its directory is
 * created). 0, or a negative errno with a message in err (an unreadable
 * file, a line that is not "NODE ADDRESS"). */
int fq_nodebind_open(const char *path, struct fq_nodebind **out, char *err, size_t errlen);

/* Read the file again, replacing what is held (on failure, what is held
 * stays). 0 or a negative errno with a message in err. */
int fq_nodebind_reload(struct fq_nodebind *b, char *err, size_t errlen);

/* May node speak from addr? 0: bound to addr already; 1: it was unbound
 * and is now bound to addr (saved; a failure to save is logged and the
 * binding held in memory); -EPERM: bound to another address, which
 * *bound (may be NULL) points to until the next call; -ENOMEM. */
int fq_nodebind_check(struct fq_nodebind *b, const char *node, const char *addr, const char **bound);

/* What node is bound to (an address, or a public key "ed25519:..."), or
 * NULL; valid until the next call that changes the bindings. */
const char *fq_nodebind_get(const struct fq_nodebind *b, const char *node);

/* The bindings held. */
size_t fq_nodebind_count(const struct fq_nodebind *b);

void fq_nodebind_close(struct fq_nodebind *b);

#endif /* FQ_CONTROLLER_NODEBIND_H */
