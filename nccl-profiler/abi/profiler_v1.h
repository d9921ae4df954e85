/*
 * profiler_v1: ncclProfiler_v1, the first profiler ABI.
 * NCCL 2.23 looks for it alone; 2.24 .. 2.30 fall back to it last.
 * Layout from NCCL's profiler_v1.h; declared here, not copied.
 * v1 gives func, datatype, algo and proto as NCCL's enum values (uint8_t).
 */
#ifndef FQP_PROFILER_V1_H
#define FQP_PROFILER_V1_H

#include "nccl-profiler/nccl_profiler.h"

typedef struct {
	uint8_t type;
	void *parentObj; /* the group, for a coll or p2p */
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			uint8_t func; /* ncclFunc_t */
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			uint8_t datatype; /* ncclDataType_t */
			uint32_t op;
			size_t trafficBytes;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			uint8_t algo;  /* NCCL_ALGO_* */
			uint8_t proto; /* NCCL_PROTO_* */
			int isCollnet;
			int isNvls;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			uint8_t func;
			void *buff;
			uint8_t datatype;
			size_t count;
			int peer;
		} p2p;
		struct {
			pid_t pid; /* process that posted the op (a parent in another process: not ours) */
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
	};
} ncclProfilerEventDescr_v1_t;

/* v1..v3: the proxyOp states carry the bytes moved so far. */
typedef union {
	struct {
		size_t transSize;
		int steps;
	} proxyOp;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask);
	ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v1_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v1_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v1_t;

#endif /* FQP_PROFILER_V1_H */
