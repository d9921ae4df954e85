/*
 * dbconnect: PostgreSQL connections opened off the event loop (dbconnect.h).
 * The thread and the loop share the state under a lock; whichever of them
 * lets go last frees it.
 */
#include "controller/dbconnect.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"

struct fq_dbconnect {
	pthread_mutex_t lock;
	struct fq_db_options o;
	char *conninfo;
	fq_dbconnect_setup_fn setup;
	struct fq_db *db; /* the result: set by the thread when done */
	char err[512];
	bool done, abandoned;
};

static void dbconnect_free(struct fq_dbconnect *c)
{
	fq_db_destroy(c->db);
	pthread_mutex_destroy(&c->lock);
	free(c->conninfo);
	free(c);
}

static void *dbconnect_main(void *arg)
{
	struct fq_dbconnect *c = arg;
	struct fq_db *db = NULL;
	char err[sizeof(c->err)] = "";
	bool abandoned;

	if (fq_db_connect(&c->o, &db, err, sizeof(err)) == 0 && c->setup &&
	    c->setup(db, err, sizeof(err)) < 0) {
		fq_db_destroy(db);
		db = NULL;
	}
	pthread_mutex_lock(&c->lock);
	c->db = db;
	memcpy(c->err, err, sizeof(err));
	c->done = true;
	abandoned = c->abandoned;
	pthread_mutex_unlock(&c->lock);
	if (abandoned)
		dbconnect_free(c);
	return NULL;
}

int fq_dbconnect_start(struct fq_dbconnect **out, const struct fq_db_options *o, fq_dbconnect_setup_fn setup)
{
	struct fq_dbconnect *c = calloc(1, sizeof(*c));
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	*out = NULL;
	if (!c || !(c->conninfo = strdup(o->conninfo ? o->conninfo : ""))) {
		free(c);
		return -ENOMEM;
	}
	c->o = *o;
	c->o.conninfo = c->conninfo;
	c->setup = setup;
	if ((rc = pthread_mutex_init(&c->lock, NULL))) {
		free(c->conninfo);
		free(c);
		return -rc;
	}
	if ((rc = pthread_attr_init(&attr)) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&th, &attr, dbconnect_main, c);
		pthread_attr_destroy(&attr);
	}
	if (rc) {
		dbconnect_free(c);
		return -rc;
	}
	*out = c;
	return 0;
}

int fq_dbconnect_poll(struct fq_dbconnect *c, struct fq_db **db, char *err, size_t errlen)
{
	pthread_mutex_lock(&c->lock);
	if (!c->done) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	*db = c->db;
	c->db = NULL;
	if (err)
		snprintf(err, errlen, "%s", c->err);
	pthread_mutex_unlock(&c->lock);
	dbconnect_free(c); /* the thread is past its last touch of c */
	return 1;
}

void fq_dbconnect_abandon(struct fq_dbconnect *c)
{
	bool done;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->abandoned = true;
	done = c->done;
	pthread_mutex_unlock(&c->lock);
	if (done)
		dbconnect_free(c);
}
