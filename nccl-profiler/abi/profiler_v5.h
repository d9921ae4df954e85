/*
 * profiler_v5: ncclProfiler_v5. NCCL 2.28 looks for it first (then v4 ..
 * v1); 2.29 and 2.30 fall back to it. Layout from NCCL's profiler_v5.h;
 * declared here, not copied. New: type is a uint64_t; the API events
 * (groupApi, collApi, p2pApi, kernelLaunch); a coll's or p2p's parentObj
 * is its API event, the group moves to parentGroup; init takes the
 * communicator id before the mask.
 */
#ifndef FQP_PROFILER_V5_H
#define FQP_PROFILER_V5_H

#include <stdbool.h>

#include "nccl-profiler/abi/profiler_v4.h"

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
	};
} ncclProfilerEventDescr_v5_t;

typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v5_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
			     int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v5_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

#endif /* FQP_PROFILER_V5_H */
