/*
 * profiler_v3: ncclProfiler_v3. NCCL 2.26 looks for it first (then v2,
 * v1); 2.27 .. 2.30 fall back to it. Layout from NCCL's profiler_v3.h;
 * declared here, not copied. New: kernelCh and netPlugin events (the
 * network transports' own events, IB QPs and sockets), trafficBytes gone.
 */
#ifndef FQP_PROFILER_V3_H
#define FQP_PROFILER_V3_H

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
		struct {
			uint8_t channelId;
		} kernelCh;
		struct {
			int64_t id; /* NCCL_PROFILER_NET_TYPE_* | version */
			void *data; /* ncclProfilerNetIbDescr_v1_t or ...Sock... */
		} netPlugin;
	};
} ncclProfilerEventDescr_v3_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v3_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask);
	ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v3_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v3_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v3_t;

#endif /* FQP_PROFILER_V3_H */
