/*
 * setup: listen, connect and accept (setup.c), none of which blocks. The
 * net API's fqn_listen and fqn_connect (abi/net.c) hand their context to
 * these; fqn_accept and fqn_close_listen (net.h) are setup.c's, a
 * listener keeping the context it was made under.
 */
#ifndef FQN_SETUP_H
#define FQN_SETUP_H

struct fqn_ctx;
struct fqn_listen;
struct fqn_send;

/* fqn_listen and fqn_connect (net.h) under ctx. */
int fqn_setup_listen(struct fqn_ctx *ctx, int dev, void *handle, struct fqn_listen **out);
int fqn_setup_connect(struct fqn_ctx *ctx, int dev, void *handle, struct fqn_send **out);

#endif /* FQN_SETUP_H */
