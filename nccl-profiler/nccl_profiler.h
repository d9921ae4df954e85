/*
 * nccl_profiler: what every version of NCCL's profiler plugin ABI shares,
 * as NCCL reads it (src/include/plugin/nccl_profiler.h, NCCL 2.23..2.30):
 * the event type bits, the state values and the network plugin ids.
 *
 * Declared here from the published values; names follow NCCL's so that a
 * reader can compare. The per-version descriptors and tables are in
 * abi/profiler_v1.h .. abi/profiler_v6.h.
 */
#ifndef FQP_NCCL_PROFILER_H
#define FQP_NCCL_PROFILER_H

#include <stdint.h>
#include <sys/types.h>

#include "nccl-plugin/nccl_net.h" /* ncclResult_t, ncclDebugLogger_t */

/* Event types: the descriptor's `type` (a uint8_t in v1..v4, a uint64_t in
 * v5 and v6) and the bits of the activation mask the plugin returns from
 * init. Bits 8..11 exist since v5 (NCCL 2.28), 12..14 since v6 (2.29). */
enum {
	ncclProfileGroup = 1 << 0,
	ncclProfileColl = 1 << 1,
	ncclProfileP2p = 1 << 2,
	ncclProfileProxyOp = 1 << 3,
	ncclProfileProxyStep = 1 << 4,
	ncclProfileProxyCtrl = 1 << 5,
	ncclProfileKernelCh = 1 << 6,      /* v3+ */
	ncclProfileNetPlugin = 1 << 7,     /* v3+ */
	ncclProfileGroupApi = 1 << 8,      /* v5+ */
	ncclProfileCollApi = 1 << 9,       /* v5+ */
	ncclProfileP2pApi = 1 << 10,       /* v5+ */
	ncclProfileKernelLaunch = 1 << 11, /* v5+ */
	ncclProfileCeColl = 1 << 12,       /* v6 */
	ncclProfileCeSync = 1 << 13,       /* v6 */
	ncclProfileCeBatch = 1 << 14,      /* v6 */
};

/* recordEventState's states: one numbering for every version (values
 * never reused); each version uses a subset. */
typedef enum {
	ncclProfilerProxyOpSendPosted = 0, /* 0..7: proxyOp states, v1..v3 */
	ncclProfilerProxyOpSendRemFifoWait = 1,
	ncclProfilerProxyOpSendTransmitted = 2,
	ncclProfilerProxyOpSendDone = 3,
	ncclProfilerProxyOpRecvPosted = 4,
	ncclProfilerProxyOpRecvReceived = 5,
	ncclProfilerProxyOpRecvTransmitted = 6,
	ncclProfilerProxyOpRecvDone = 7,
	ncclProfilerProxyStepSendGPUWait = 8,
	ncclProfilerProxyStepSendWait = 9,
	ncclProfilerProxyStepRecvWait = 10,
	ncclProfilerProxyStepRecvFlushWait = 11,
	ncclProfilerProxyStepRecvGPUWait = 12,
	ncclProfilerProxyCtrlIdle = 13,
	ncclProfilerProxyCtrlActive = 14,
	ncclProfilerProxyCtrlSleep = 15,
	ncclProfilerProxyCtrlWakeup = 16,
	ncclProfilerProxyCtrlAppend = 17,
	ncclProfilerProxyCtrlAppendEnd = 18,
	ncclProfilerProxyOpInProgress_v4 = 19,     /* v4+ */
	ncclProfilerProxyStepSendPeerWait_v4 = 20, /* v4+ */
	ncclProfilerNetPluginUpdate = 21,          /* v4+ */
	ncclProfilerKernelChStop = 22,             /* v4+ */
	ncclProfilerGroupStartApiStop = 23,        /* v5+ */
	ncclProfilerGroupEndApiStart = 24,         /* v5+ */
	ncclProfilerCeCollStart = 25,              /* v6: 25..30 */
	ncclProfilerCeCollComplete = 26,
	ncclProfilerCeSyncStart = 27,
	ncclProfilerCeSyncComplete = 28,
	ncclProfilerCeBatchStart = 29,
	ncclProfilerCeBatchComplete = 30,
} ncclProfilerEventState_t;

/* A netPlugin event's `id`: the emitting transport in the high 16 bits,
 * the version of the struct behind `data` in the low 16. NCCL's IB
 * transport emits NET_TYPE_IB | 1 per work request posted on a QP (since
 * 2.26, built with NCCL_ENABLE_NET_PROFILING), its socket transport
 * NET_TYPE_SOCK | 1 per socket task, from its helper threads. */
#define NCCL_PROFILER_NET_VER_BITS  16
#define NCCL_PROFILER_NET_VER_MASK  0xffffu
#define NCCL_PROFILER_NET_TYPE_MASK 0xffff0000u
#define NCCL_PROFILER_NET_TYPE_IB   (1u << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_SOCK (2u << NCCL_PROFILER_NET_VER_BITS)

/* The IB transport's event (net_ib_v1.h): one per work request. */
#define ncclProfileQp 1
typedef struct {
	uint8_t type; /* ncclProfileQp */
	union {
		struct {
			int device;     /* NCCL's IB device index */
			uint64_t wr_id; /* work request id */
			int opcode; /* ibv_wr_opcode: 0 RDMA_WRITE, 1 WRITE_WITH_IMM, 2 SEND, 4 RDMA_READ */
			int qpNum;
			size_t length;
		} qp;
	};
} ncclProfilerNetIbDescr_v1_t;

/* The socket transport's event (net_socket_v1.h): one per socket task. */
#define ncclProfileSocket 1
typedef struct {
	uint8_t type; /* ncclProfileSocket */
	union {
		struct {
			int fd;
			int op; /* NCCL_SOCKET_SEND 0, NCCL_SOCKET_RECV 1 */
			size_t length;
		} sock;
	};
} ncclProfilerNetSockDescr_v1_t;

#endif /* FQP_NCCL_PROFILER_H */
