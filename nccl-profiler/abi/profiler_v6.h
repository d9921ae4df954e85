/*
 * profiler_v6: ncclProfiler_v6. NCCL 2.29 and 2.30 look for it first
 * (then v5 .. v1). Layout from NCCL's profiler_v6.h; declared here, not
 * copied. v5's descriptor plus the copy-engine collectives (ceColl,
 * ceCollSync, ceCollBatch), which get no recordEventState.
 */
#ifndef FQP_PROFILER_V6_H
#define FQP_PROFILER_V6_H

#include "nccl-profiler/abi/profiler_v5.h"

typedef struct {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			bool graphCaptured;
			int groupDepth;
		} groupApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graphCaptured;
		} collApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			void *stream;
			bool graphCaptured;
		} p2pApi;
		struct {
			void *stream;
		} kernelLaunch;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
			void *parentGroup; /* the group; parentObj is the collApi event */
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
			void *parentGroup; /* the group; parentObj is the p2pApi event */
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
			uint64_t pTimer;
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			const char *syncStrategy;
			bool intraBatchSync;
			uint32_t batchSize;
			uint32_t numBatches;
			uint32_t ceSeqNum;
			void *stream;
		} ceColl;
		struct {
			bool isComplete;
			int nRanks;
		} ceCollSync;
		struct {
			int numOps;
			size_t totalBytes;
			bool useIntraSync;
		} ceCollBatch;
	};
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
			     int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v6_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v6_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v6_t;

#endif /* FQP_PROFILER_V6_H */
