/*
 * profiler_v4: ncclProfiler_v4. NCCL 2.27 looks for it first (then v3 ..
 * v1); 2.28 .. 2.30 fall back to it. Layout from NCCL's profiler_v4.h;
 * declared here, not copied. New: init takes the communicator (name,
 * hash, nodes, ranks, rank) and NCCL's logger; the per-event name and
 * commHash are gone (the context carries them); the proxyStep states carry
 * transSize (the proxyOp states 0..7 are no longer sent); kernelCh has
 * the GPU timer; NetPluginUpdate states.
 */
#ifndef FQP_PROFILER_V4_H
#define FQP_PROFILER_V4_H

#include "nccl-profiler/nccl_profiler.h"

typedef struct {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
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
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
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
			uint64_t pTimer; /* GPU globaltimer at the kernel's start */
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
	};
} ncclProfilerEventDescr_v4_t;

typedef union {
	struct {
		size_t transSize;
	} proxyStep;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
	struct {
		void *data;
	} netPlugin;
	struct {
		uint64_t pTimer;
	} kernelCh;
} ncclProfilerEventStateArgs_v4_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash,
			     int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
					 ncclProfilerEventStateArgs_v4_t *eStateArgs);
	ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

#endif /* FQP_PROFILER_V4_H */
