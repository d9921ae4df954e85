/*
 * dbconnect: PostgreSQL connections opened off the event loop. Opening one
 * resolves the server's name and waits for the server (and, for ingest,
 * migrates the schema): seconds a slow DNS server or a hung PostgreSQL
 * would hold the loop that serves every agent. Each open runs on a thread
 * of its own, which the loop polls; one the loop gives up (shutdown) ends
 * on its own and closes what it opened.
 */
#ifndef FQ_CONTROLLER_DBCONNECT_H
#define FQ_CONTROLLER_DBCONNECT_H

#include <stddef.h>

struct fq_db;
struct fq_db_options;
struct fq_dbconnect;

/* Run on the thread once connected (the schema migration): 0, or a
 * negative errno with err set; the connection is then closed. */
typedef int (*fq_dbconnect_setup_fn)(struct fq_db *db, char *err, size_t errlen);

/* Starts opening a connection with options o (copied); setup may be NULL.
 * 0, or a negative errno (no thread). */
int fq_dbconnect_start(struct fq_dbconnect **out, const struct fq_db_options *o, fq_dbconnect_setup_fn setup);

/* 0: still opening. 1: finished, and c is freed: *db is the connection, or
 * NULL with the reason in err. */
int fq_dbconnect_poll(struct fq_dbconnect *c, struct fq_db **db, char *err, size_t errlen);

/* Gives an open up (NULL is fine): it ends on its thread, and a connection
 * it makes is closed. */
void fq_dbconnect_abandon(struct fq_dbconnect *c);

#endif /* FQ_CONTROLLER_DBCONNECT_H */
