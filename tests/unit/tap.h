/*
 * tap.h: a tiny TAP producer for C unit tests (read by automake's TAP
 * driver). Header-only; one test program per module.
 *
 * Either announce the count first with plan(n), or print it at the end
 * with done_testing(); done_testing() also checks a plan was met. Every
 * check prints "ok N - what" or "not ok N - what" plus where it failed.
 */
#ifndef FQ_TESTS_TAP_H
#define FQ_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed, tap_planned = -1;

static inline void plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

static inline int ok_at(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int ok_at(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) ok_at(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                                               \
	do {                                                                                                 \
		long long g_ = (long long)(got), w_ = (long long)(want);                                     \
		if (!ok(g_ == w_, __VA_ARGS__))                                                              \
			diag("got %lld, want %lld", g_, w_);                                                 \
	} while (0)

#define is_str(got, want, ...)                                                                               \
	do {                                                                                                 \
		const char *g_ = (got), *w_ = (want);                                                        \
		if (!ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__))                                       \
			diag("got '%s', want '%s'", g_ ? g_ : "(null)", w_ ? w_ : "(null)");                 \
	} while (0)

/* The string contains the substring. */
#define like(got, sub, ...)                                                                                  \
	do {                                                                                                 \
		const char *g_ = (got), *s_ = (sub);                                                         \
		if (!ok(g_ && strstr(g_, s_), __VA_ARGS__))                                                  \
			diag("'%s' does not contain '%s'", g_ ? g_ : "(null)", s_);                          \
	} while (0)

/* The next n checks cannot run here: count them as skipped, with why. */
static inline void skip(int n, const char *reason)
{
	for (int i = 0; i < n; i++)
		printf("ok %d # SKIP %s\n", ++tap_n, reason);
	fflush(stdout);
}

/* Nothing in this program can run here (before any check). */
static inline void skip_all(const char *reason)
{
	printf("1..0 # SKIP %s\n", reason);
	exit(0);
}

/* Exit status for main(): 0 if every check passed and a plan, if any, was met. */
static inline int done_testing(void)
{
	if (tap_planned < 0) {
		printf("1..%d\n", tap_n);
	} else if (tap_planned != tap_n) {
		diag("planned %d tests but ran %d", tap_planned, tap_n);
		return 1;
	}
	return tap_failed ? 1 : 0;
}

#endif /* FQ_TESTS_TAP_H */
