/*
 * rand: a small fast pseudo-random sequence for timing and identifiers
 * that need no secrecy (a probe tick's jitter, a trace's sequence number).
 * Seed the state from getrandom(2); never 0.
 */
#ifndef FQ_COMMON_RAND_H
#define FQ_COMMON_RAND_H

#include <stdint.h>

/* Marsaglia's xorshift64: the next value of *state (a full period of
 * 2^64 - 1 over the non-zero states). */
static inline uint64_t fq_xorshift64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

#endif /* FQ_COMMON_RAND_H */
