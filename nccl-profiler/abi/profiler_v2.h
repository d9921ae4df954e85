/*
 * profiler_v2: ncclProfiler_v2. NCCL 2.24 and 2.25 look for it first
 * (then v1); 2.26 .. 2.30 fall back to it. Layout from NCCL's
 * profiler_v2.h; declared here, not copied. Since v2 func, datatype, algo
 * and proto are NCCL's strings ("AllReduce", "ncclFloat32", "RING",
 * "SIMPLE"); v1's op, isCollnet and isNvls are gone.
 */
#ifndef FQP_PROFILER_V2_H
#define FQP_PROFILER_V2_H

#include "nccl-profiler/abi/profiler_v1.h" /* the state args */

typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			size_t trafficBytes;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
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
} ncclProfilerEventDescr_v2_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v2_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask);
	ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v2_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v2_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v2_t;

#endif /* FQP_PROFILER_V2_H */
