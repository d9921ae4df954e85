/*
 * fuzz-ibhandle: the IB lane's connection handle as it arrives from the
 * peer (64 bytes over the side channel). A decoded handle must encode to
 * the same bytes, and the compatibility check of any two decoded handles
 * must not crash and must give a path MTU both ends support.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/lanes/ib/ib_handle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t in[FQIB_HANDLE_SIZE] = {0}, out[FQIB_HANDLE_SIZE];
	struct fqib_handle h, h2;
	const char *why;
	char reason[256];
	int mtu;

	memcpy(in, data, size < sizeof(in) ? size : sizeof(in));
	if (fqib_handle_decode(in, &h, &why) != 0)
		return 0;
	fqib_handle_encode(&h, out);
	if (memcmp(in, out, sizeof(in)) != 0)
		abort();
	if (size >= 2 * FQIB_HANDLE_SIZE && fqib_handle_decode(data + FQIB_HANDLE_SIZE, &h2, &why) == 0 &&
	    fqib_handle_check(&h, &h2, 1u << 16, &mtu, reason, sizeof(reason)) == 0 &&
	    (mtu > h.mtu || mtu > h2.mtu))
		abort();
	return 0;
}
