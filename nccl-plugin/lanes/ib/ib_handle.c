/* ib_handle: the IB lane's connection handle (see ib_handle.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nccl-plugin/chunk.h"
#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_handle.h"

void fqib_handle_encode(const struct fqib_handle *h, uint8_t out[FQIB_HANDLE_SIZE])
{
	memset(out, 0, FQIB_HANDLE_SIZE);
	fqn_put_le(out, FQIB_HANDLE_MAGIC, 4);
	fqn_put_le(out + 4, FQIB_HANDLE_VERSION, 2);
	out[6] = h->link;
	out[7] = h->gid_type;
	out[8] = h->mtu;
	out[9] = h->port;
	fqn_put_le(out + 10, h->lid, 2);
	fqn_put_le(out + 12, h->qpn, 4);
	fqn_put_le(out + 16, h->psn, 4);
	memcpy(out + 20, h->gid, 16);
	fqn_put_le(out + 36, h->rkey, 4);
	fqn_put_le(out + 40, h->addr, 8);
	fqn_put_le(out + 48, h->size, 4);
	fqn_put_le(out + 52, h->slots, 4);
	fqn_put_le(out + 56, h->slot_size, 4);
}

int fqib_mtu_bytes(int mtu)
{
	return mtu >= 1 && mtu <= 5 ? 128 << mtu : 0;
}

int fqib_handle_decode(const uint8_t in[FQIB_HANDLE_SIZE], struct fqib_handle *h, const char **why)
{
	memset(h, 0, sizeof(*h));
	if (fqn_get_le(in, 4) != FQIB_HANDLE_MAGIC) {
		*why = "bad magic (not an IB lane handle)";
		return -EPROTO;
	}
	if (fqn_get_le(in + 4, 2) != FQIB_HANDLE_VERSION) {
		*why = "unsupported handle version";
		return -EPROTO;
	}
	h->link = in[6];
	h->gid_type = in[7];
	h->mtu = in[8];
	h->port = in[9];
	h->lid = (uint16_t)fqn_get_le(in + 10, 2);
	h->qpn = (uint32_t)fqn_get_le(in + 12, 4);
	h->psn = (uint32_t)fqn_get_le(in + 16, 4);
	memcpy(h->gid, in + 20, 16);
	h->rkey = (uint32_t)fqn_get_le(in + 36, 4);
	h->addr = fqn_get_le(in + 40, 8);
	h->size = (uint32_t)fqn_get_le(in + 48, 4);
	h->slots = (uint32_t)fqn_get_le(in + 52, 4);
	h->slot_size = (uint32_t)fqn_get_le(in + 56, 4);
	*why = NULL;
	if (h->link != FQIB_LINK_IB && h->link != FQIB_LINK_ETH)
		*why = "unknown link layer";
	else if (h->gid_type != FQIB_GID_IB_ROCE_V1 && h->gid_type != FQIB_GID_ROCE_V2)
		*why = "unknown GID type";
	else if (!fqib_mtu_bytes(h->mtu))
		*why = "MTU not one of 256..4096";
	else if (h->port == 0)
		*why = "port 0";
	else if (h->qpn == 0 || h->qpn > 0xffffff)
		*why = "QPN zero or wider than 24 bits";
	else if (h->psn > 0xffffff)
		*why = "PSN wider than 24 bits";
	else if (h->slots < 1 || h->slots > FQIB_MAX_SLOTS)
		*why = "receive slots out of 1..1024";
	else if (h->slot_size < FQN_CHUNK_HDR_SIZE || (uint64_t)h->slots * h->slot_size > h->size)
		*why = "receive ring smaller than its slots";
	else if (fqn_get_le(in + 60, 4) != 0)
		*why = "reserved bytes not zero";
	return *why ? -EPROTO : 0;
}

int fqib_handle_check(const struct fqib_handle *local, const struct fqib_handle *remote, size_t chunk_size,
		      int *mtu, char *why, size_t whylen)
{
	if (local->link != remote->link) {
		snprintf(why, whylen,
			 "link layer mismatch: local port is %s, remote port is %s (an RC QP cannot join "
			 "InfiniBand and RoCE)",
			 fqib_link_name(local->link), fqib_link_name(remote->link));
		return -EPROTO;
	}
	if (local->link == FQIB_LINK_ETH && local->gid_type != remote->gid_type) {
		snprintf(why, whylen,
			 "RoCE version mismatch: local GID is %s, remote GID is %s (check "
			 "FABRICIQ_IB_GID_INDEX and the GID tables on both hosts)",
			 fqib_gid_type_name(local->gid_type), fqib_gid_type_name(remote->gid_type));
		return -EPROTO;
	}
	if (chunk_size && (size_t)remote->slot_size < FQN_CHUNK_HDR_SIZE + chunk_size) {
		snprintf(why, whylen,
			 "remote receive slots of %u bytes cannot hold a %zu-byte chunk and its header "
			 "(FABRICIQ_CHUNK_SIZE differs between the two ends?)",
			 remote->slot_size, chunk_size);
		return -EPROTO;
	}
	*mtu = local->mtu < remote->mtu ? local->mtu : remote->mtu;
	return 0;
}
