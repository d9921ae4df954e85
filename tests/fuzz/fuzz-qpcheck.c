/*
 * fuzz-qpcheck: the agent's reading of the kernel's RDMA netlink answers
 * (slurmd-agent/qpcheck.h): a device dump, a QP dump over several
 * datagrams, a single QP's answer. Checks: a feed returns 1, 0 or a
 * negative errno; a scan never reads past its caps; a QP found is the
 * claim's and "connected" only with found; an answer of 0 (held) comes
 * only from a found, connected QP; the device scan's index is set only
 * when found.
 *
 * Input: byte 0: bit 0 a single QP's answer (else a dump), bit 1 the
 * device dump instead; bytes 1-4 the claim's QPN, 5-8 its remote QPN,
 * 9 its port, 10-13 the device index asked for; then datagrams, each a
 * 2-byte little-endian length and its bytes. The claim's device is
 * "mlx5_1" (answers use seq 7).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slurmd-agent/qpcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int uid_of(pid_t pid, uid_t *uid)
{
	*uid = (uid_t)pid;
	return pid ? 0 : -ESRCH;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fq_qp_claim c = {.dev = "mlx5_1"};
	struct fq_qp_scan s = {.claim = &c, .seq = 7};
	struct fq_rdma_dev_scan d = {.name = "mlx5_1", .seq = 7};
	size_t at = 14;
	uid_t uid;
	int rc = 0;

	if (size < at)
		return 0;
	c.lqpn = le32(data + 1);
	c.rqpn = le32(data + 5);
	c.port = data[9];
	s.dev_index = le32(data + 10);
	s.single = data[0] & 1;
	while (rc == 0 && at + 2 <= size) {
		size_t n = (size_t)data[at] | (size_t)data[at + 1] << 8;
		uint8_t *buf;

		at += 2;
		if (n > size - at)
			n = size - at;
		buf = malloc(n ? n : 1); /* its own allocation: ASan sees any read past it */
		memcpy(buf, data + at, n);
		rc = data[0] & 2 ? fq_rdma_dev_feed(&d, buf, n) : fq_qp_scan_feed(&s, buf, n);
		free(buf);
		at += n;
		if (rc > 1 || rc < -4095)
			abort();
	}
	if (data[0] & 2) {
		if (!d.found && d.index)
			abort();
		return 0;
	}
	if (s.entries > FQ_QPCHECK_MAX_ENTRIES + 1 || (s.connected && !s.found))
		abort();
	if (fq_qp_scan_answer(&s, rc, uid_of, &uid) == 0 && !(s.found && s.connected))
		abort();
	return 0;
}
