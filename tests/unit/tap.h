/*
 * tap.h: a tiny TAP producer for C unit tests (read by automake's TAP
 * driver). Header-only; one test program per module.
 */
#ifndef FQ_TESTS_TAP_H
#define FQ_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

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

static inline void skip_all(const char *reason)
{
	printf("1..0 # SKIP %s\n", reason);
	exit(0);
}

static inline int done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif /* FQ_TESTS_TAP_H */
