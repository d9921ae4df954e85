/*
 * names: NCCL's operation, algorithm, protocol and datatype names as small
 * ids. v1 gives NCCL's enum values (ncclFunc_t, NCCL_ALGO_*, NCCL_PROTO_*,
 * ncclDataType_t, as of NCCL 2.23); v2+ gives NCCL's strings
 * (ncclFuncToString ...). Both map here; anything else is *_OTHER (never
 * an error: a newer NCCL may add names). NULL strings are *_NONE.
 */
#ifndef FQP_NAMES_H
#define FQP_NAMES_H

#include <stdint.h>

enum {
	FQP_FUNC_NONE = 0,
	FQP_FUNC_BROADCAST,
	FQP_FUNC_REDUCE,
	FQP_FUNC_ALLGATHER,
	FQP_FUNC_REDUCESCATTER,
	FQP_FUNC_ALLREDUCE,
	FQP_FUNC_SENDRECV,
	FQP_FUNC_SEND,
	FQP_FUNC_RECV,
	FQP_FUNC_ALLTOALL,
	FQP_FUNC_GATHER,
	FQP_FUNC_SCATTER,
	FQP_FUNC_OTHER,
	FQP_FUNC_N
};
enum {
	FQP_ALGO_NONE = 0,
	FQP_ALGO_TREE,
	FQP_ALGO_RING,
	FQP_ALGO_COLLNET_DIRECT,
	FQP_ALGO_COLLNET_CHAIN,
	FQP_ALGO_NVLS,
	FQP_ALGO_NVLS_TREE,
	FQP_ALGO_PAT,
	FQP_ALGO_OTHER,
	FQP_ALGO_N
};
enum {
	FQP_PROTO_NONE = 0,
	FQP_PROTO_LL,
	FQP_PROTO_LL128,
	FQP_PROTO_SIMPLE,
	FQP_PROTO_OTHER,
	FQP_PROTO_N
};

int fqp_func_from_str(const char *s);
int fqp_algo_from_str(const char *s);
int fqp_proto_from_str(const char *s);
/* Bytes per element of a datatype name ("ncclFloat32": 4); 0 if unknown. */
unsigned fqp_type_size_from_str(const char *s);

/* v1: NCCL 2.23's enum values. */
int fqp_func_from_v1(uint8_t f);
int fqp_algo_from_v1(uint8_t a);
int fqp_proto_from_v1(uint8_t p);
unsigned fqp_type_size_from_v1(uint8_t t);

/* The names back ("AllReduce", "RING", "SIMPLE"); never NULL. */
const char *fqp_func_name(int id);
const char *fqp_algo_name(int id);
const char *fqp_proto_name(int id);

#endif /* FQP_NAMES_H */
