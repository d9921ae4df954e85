/*
 * parse: the value parsers every part shares (the daemons' config file,
 * the NCCL plugin's environment, the SPANK plugin's plugstack.conf words).
 * Pure: no I/O, no allocation. Each returns 0 and stores the value, or
 * -EINVAL and leaves *out alone.
 *
 * Sizes: a non-negative number (decimals allowed), optional blanks, then a
 * unit: none or B (bytes), K/KiB, M/MiB, G/GiB (each also with a lower-case
 * k, m, g), T/TiB: powers of 1024; "1MB" is refused. Durations: a non-negative number and a unit
 * (none or s, ms, us, ns, m, h). Both must start with a digit or '.', so a
 * sign or a leading blank is refused, and stay under 1.8e19.
 */
#ifndef FQ_COMMON_PARSE_H
#define FQ_COMMON_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int fq_parse_duration(const char *text, uint64_t *ns);
int fq_parse_size(const char *text, uint64_t *bytes);
/* yes/no, true/false, on/off, 1/0, any case. */
int fq_parse_bool(const char *text, bool *out);
/* strtoll/strtoull with base 0 (0x.. hex, 0.. octal); uint refuses '-'. */
int fq_parse_int(const char *text, int64_t *out);
int fq_parse_uint(const char *text, uint64_t *out);
/* Decimal digits only (no sign, blank, prefix or suffix), below 2^64. */
int fq_parse_decimal(const char *text, uint64_t *out);
/* A finite number (strtod). */
int fq_parse_double(const char *text, double *out);
/* The index of text in the NULL-terminated choices (exact, case matters). */
int fq_parse_enum(const char *text, const char *const *choices, int *out);
/* The choices as "a, b or c" into out (for an error message). */
void fq_enum_list(const char *const *choices, const char *last_sep, char *out, size_t outlen);

#endif /* FQ_COMMON_PARSE_H */
