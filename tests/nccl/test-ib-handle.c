/* test-ib-handle: IB lane handle round trip, hostile input, end mismatch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/chunk.h"
#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_handle.h"
#include "tests/unit/tap.h"

static struct fqib_handle sample(void)
{
	struct fqib_handle h = {.link = FQIB_LINK_ETH,
				.gid_type = FQIB_GID_ROCE_V2,
				.mtu = 5,
				.port = 1,
				.lid = 0,
				.qpn = 0x00abcd,
				.psn = 0x123456,
				.rkey = 0xdeadbeef,
				.addr = 0x00007f0012345000ULL,
				.size = 8 * (48 + 524288),
				.slots = 8,
				.slot_size = 48 + 524288};

	for (int i = 0; i < 16; i++)
		h.gid[i] = (uint8_t)(0xf0 + i);
	return h;
}

/* Encode, patch bytes [off, off+n) with v (little-endian), decode. */
static int patched(size_t off, int n, uint64_t v, const char **why)
{
	struct fqib_handle h = sample(), d;
	uint8_t buf[FQIB_HANDLE_SIZE];

	fqib_handle_encode(&h, buf);
	for (int i = 0; i < n; i++)
		buf[off + (size_t)i] = (uint8_t)(v >> (8 * i));
	return fqib_handle_decode(buf, &d, why);
}

int main(void)
{
	struct fqib_handle h = sample(), d, a, b;
	uint8_t buf[FQIB_HANDLE_SIZE];
	const char *why = "?";
	char reason[256];
	int mtu = 0;

	fqib_handle_encode(&h, buf);
	ok(buf[0] == 'F' && buf[1] == 'Q' && buf[2] == 'I' && buf[3] == 'B', "magic FQIB first");
	ok(buf[12] == 0xcd && buf[13] == 0xab && buf[14] == 0, "QPN little-endian at 12");
	ok(fqib_handle_decode(buf, &d, &why) == 0, "round trip decodes");
	ok(memcmp(&h, &d, sizeof(h)) == 0, "round trip is exact");

	ok(patched(0, 1, 'X', &why) == -EPROTO && strstr(why, "magic"), "bad magic: %s", why);
	ok(patched(4, 2, 2, &why) == -EPROTO && strstr(why, "version"), "version 2: %s", why);
	ok(patched(6, 1, 3, &why) == -EPROTO && strstr(why, "link"), "link layer 3: %s", why);
	ok(patched(7, 1, 0, &why) == -EPROTO && strstr(why, "GID type"), "gid type 0: %s", why);
	ok(patched(8, 1, 0, &why) == -EPROTO && strstr(why, "MTU"), "MTU enum 0: %s", why);
	ok(patched(8, 1, 6, &why) == -EPROTO && strstr(why, "MTU"), "MTU enum 6: %s", why);
	ok(patched(9, 1, 0, &why) == -EPROTO && strstr(why, "port"), "port 0: %s", why);
	ok(patched(12, 4, 0, &why) == -EPROTO && strstr(why, "QPN"), "QPN 0: %s", why);
	ok(patched(12, 4, 0x1000000, &why) == -EPROTO && strstr(why, "QPN"), "QPN of 25 bits: %s", why);
	ok(patched(16, 4, 0x1000000, &why) == -EPROTO && strstr(why, "PSN"), "PSN of 25 bits: %s", why);
	ok(patched(52, 4, 0, &why) == -EPROTO && strstr(why, "slots"), "0 slots: %s", why);
	ok(patched(52, 4, 1025, &why) == -EPROTO && strstr(why, "slots"), "1025 slots: %s", why);
	ok(patched(48, 4, 100, &why) == -EPROTO && strstr(why, "ring"), "ring smaller than slots: %s", why);
	ok(patched(56, 4, 0xffffffff, &why) == -EPROTO, "slot size overflowing the ring: %s", why);
	ok(patched(56, 4, 8, &why) == -EPROTO, "slot smaller than a chunk header: %s", why);
	ok(patched(60, 4, 1, &why) == -EPROTO && strstr(why, "reserved"), "reserved not zero: %s", why);

	/* Random garbage never decodes into something accepted with a zero QPN
	 * or an MTU out of range, and never crashes. */
	{
		int bad = 0;

		srand(8);
		for (int k = 0; k < 100000; k++) {
			for (int i = 0; i < FQIB_HANDLE_SIZE; i++)
				buf[i] = (uint8_t)rand();
			if (k & 1) { /* a valid header, random body */
				buf[0] = 'F', buf[1] = 'Q', buf[2] = 'I', buf[3] = 'B', buf[4] = 1,
				buf[5] = 0;
			}
			if (fqib_handle_decode(buf, &d, &why) == 0 &&
			    (d.qpn == 0 || !fqib_mtu_bytes(d.mtu) || d.slots == 0 ||
			     (uint64_t)d.slots * d.slot_size > d.size))
				bad++;
		}
		is_int(bad, 0, "100000 random handles: nothing invalid accepted");
	}

	a = sample();
	b = sample();
	b.mtu = 3;
	ok(fqib_handle_check(&a, &b, 524288, &mtu, reason, sizeof(reason)) == 0 && mtu == 3,
	   "same link and GID type: ok, path MTU is the smaller (1024)");
	b.gid_type = FQIB_GID_IB_ROCE_V1;
	ok(fqib_handle_check(&a, &b, 524288, &mtu, reason, sizeof(reason)) == -EPROTO &&
	       strstr(reason, "RoCE version mismatch") && strstr(reason, "local GID is RoCE v2") &&
	       strstr(reason, "remote GID is IB/RoCE v1"),
	   "RoCE v1 vs v2 detected: %s", reason);
	b = sample();
	b.link = FQIB_LINK_IB;
	b.gid_type = FQIB_GID_IB_ROCE_V1;
	ok(fqib_handle_check(&a, &b, 524288, &mtu, reason, sizeof(reason)) == -EPROTO &&
	       strstr(reason, "local port is Ethernet") && strstr(reason, "remote port is InfiniBand"),
	   "IB vs Ethernet detected: %s", reason);
	a.link = FQIB_LINK_IB;
	a.gid_type = FQIB_GID_IB_ROCE_V1;
	b.gid_type = FQIB_GID_IB_ROCE_V1;
	ok(fqib_handle_check(&a, &b, 524288, &mtu, reason, sizeof(reason)) == 0, "IB to IB: ok");
	b.slot_size = 4096 + 48;
	ok(fqib_handle_check(&a, &b, 524288, &mtu, reason, sizeof(reason)) == -EPROTO &&
	       strstr(reason, "chunk"),
	   "remote slots too small for our chunks: %s", reason);
	ok(fqib_handle_check(&a, &b, 0, &mtu, reason, sizeof(reason)) == 0,
	   "receiving end skips the ring check");
	return done_testing();
}
