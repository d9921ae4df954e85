/*
 * ib_handle: what one end of an IB lane tells the other to connect its RC
 * QP, exchanged over the lane's TCP side channel at setup. Pure, no verbs.
 *
 * Wire format, FQIB_HANDLE_SIZE bytes, little-endian:
 *   0 u32 magic "FQIB"   4 u16 version (1)   6 u8 link layer (1 IB, 2 Eth)
 *   7 u8 gid type (1 IB/RoCE v1, 2 RoCE v2)  8 u8 mtu (ibv_mtu: 1..5 = 256..4096)
 *   9 u8 port           10 u16 lid          12 u32 qpn (24 bits, != 0)
 *  16 u32 psn (24 bits) 20 u8 gid[16]       36 u32 rkey
 *  40 u64 addr          48 u32 size          (of the receive ring)
 *  52 u32 slots (receive buffers pre-posted) 56 u32 slot_size
 *  60 u32 reserved (0)
 * Decoding rejects a wrong magic or version, a zero or >24-bit QPN or PSN,
 * an MTU outside 1..5, an unknown link layer or gid type, a ring that does
 * not fit its slots, and slots outside 1..FQIB_MAX_SLOTS.
 */
#ifndef FQIB_HANDLE_H
#define FQIB_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#define FQIB_HANDLE_SIZE    64
#define FQIB_HANDLE_MAGIC   0x42495146u /* "FQIB" */
#define FQIB_HANDLE_VERSION 1
#define FQIB_MAX_SLOTS      1024

struct fqib_handle {
	uint8_t link;     /* enum fqib_link */
	uint8_t gid_type; /* enum fqib_gid_type */
	uint8_t mtu;      /* enum ibv_mtu value */
	uint8_t port;
	uint16_t lid;
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint32_t rkey;
	uint64_t addr;
	uint32_t size;
	uint32_t slots;
	uint32_t slot_size;
};

void fqib_handle_encode(const struct fqib_handle *h, uint8_t out[FQIB_HANDLE_SIZE]);

/* 0, or -EPROTO with *why (static) naming the bad field. */
int fqib_handle_decode(const uint8_t in[FQIB_HANDLE_SIZE], struct fqib_handle *h, const char **why);

/* MTU in bytes of an ibv_mtu value (256..4096), 0 if invalid. */
int fqib_mtu_bytes(int mtu);

/* Can these two ends form an RC connection? 0 if so (*mtu gets the path
 * MTU both support: the smaller); -EPROTO with a reason in why (naming both
 * ends' settings) when the link layers differ (IB vs Ethernet), RoCE GID
 * types differ (the classic RoCE v1 misconfiguration: one end on a v1 GID
 * index, the other on v2, and no packet ever arrives), or the receive ring
 * is too small for chunk_size (the sender's chunk plus header; the sending
 * end passes its chunk size, the receiving end 0: no ring check). */
int fqib_handle_check(const struct fqib_handle *local, const struct fqib_handle *remote, size_t chunk_size,
		      int *mtu, char *why, size_t whylen);

#endif /* FQIB_HANDLE_H */
