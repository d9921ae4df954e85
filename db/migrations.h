/*
 * migrations: sql/NNN_name.sql compiled into the library at build time
 * (db/gen-migrations.sh generates migrations.c), so an installed tool needs
 * no sql directory. Versions are 1..fq_db_nmigrations, in order.
 */
#ifndef FQ_DB_MIGRATIONS_H
#define FQ_DB_MIGRATIONS_H

#include <stddef.h>

struct fq_db_migration {
	int version;
	const char *name; /* file name without .sql: "001_init" */
	const char *sql;
};

extern const struct fq_db_migration fq_db_migrations[];
extern const size_t fq_db_nmigrations;

#endif /* FQ_DB_MIGRATIONS_H */
