/* Helpers shared by the plugin's C tests (header only). */
#ifndef FQN_TESTS_NCCL_TEST_H
#define FQN_TESTS_NCCL_TEST_H

#include <arpa/inet.h>
#include <regex.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common/path_page.h"

/* CLOCK_MONOTONIC in seconds (in the header, not from libfqbase: test-abi
 * links only the plugin's exported symbols). */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 1 if s matches the extended regular expression re. */
static inline int matches(const char *s, const char *re)
{
	regex_t rx;
	int m;

	if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0)
		return 0;
	m = regexec(&rx, s, 0, NULL, 0) == 0;
	regfree(&rx);
	return m;
}

/* Publish, as an agent would at `at` (its raw clock), the loopback path
 * the tests' lanes take in `state`, and the peer node's other path
 * (another rail, none of the lanes') in `other`: a DOWN is believed only
 * while another path to the node is UP. */
/* ... with the paths' last transition at changed (raw clock), published at `at`. */
static inline void loopback_paths_publish_changed(struct fq_path_page_writer *w, uint32_t state,
						  uint32_t other, int64_t changed, int64_t at)
{
	struct fq_path_entry e[2];

	memset(e, 0, sizeof(e));
	strcpy(e[0].local_nic, "lo");
	strcpy(e[0].remote_node, "self");
	strcpy(e[0].remote_nic, "lo");
	e[0].remote_ipv4 = htonl(INADDR_LOOPBACK);
	e[0].state = state;
	e[0].changed_ns = changed;
	e[1] = e[0];
	strcpy(e[1].local_nic, "rail9");
	strcpy(e[1].remote_nic, "rail9");
	e[1].remote_ipv4 = htonl(0xc6130909); /* 198.19.9.9 */
	e[1].state = other;
	fq_path_page_publish(w, e, 2, NULL, 0, at);
}

static inline void loopback_paths_publish(struct fq_path_page_writer *w, uint32_t state, uint32_t other,
					  int64_t at)
{
	loopback_paths_publish_changed(w, state, other, at, at);
}

#endif /* FQN_TESTS_NCCL_TEST_H */
