/* names: NCCL's names and enum values to ids (see names.h). */
#include <string.h>

#include "nccl-profiler/names.h"

static const char *const funcs[FQP_FUNC_N] = {
    "none", "Broadcast", "Reduce",   "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
    "Send", "Recv",      "AlltoAll", "Gather",    "Scatter",       "other"};
static const char *const algos[FQP_ALGO_N] = {"none", "TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
					      "NVLS", "NVLS_TREE", "PAT",  "other"};
static const char *const protos[FQP_PROTO_N] = {"none", "LL", "LL128", "SIMPLE", "other"};

/* A bounded compare: a name longer than NCCL's longest is no name of ours,
 * and a string without its NUL is never read past 32 bytes. */
static int lookup(const char *s, const char *const *tab, int n, int none, int other)
{
	if (!s)
		return none;
	for (int i = 1; i < n; i++)
		if (i != other && strncmp(s, tab[i], 32) == 0)
			return i;
	return other;
}

int fqp_func_from_str(const char *s)
{
	return lookup(s, funcs, FQP_FUNC_N, FQP_FUNC_NONE, FQP_FUNC_OTHER);
}

int fqp_algo_from_str(const char *s)
{
	return lookup(s, algos, FQP_ALGO_N, FQP_ALGO_NONE, FQP_ALGO_OTHER);
}

int fqp_proto_from_str(const char *s)
{
	return lookup(s, protos, FQP_PROTO_N, FQP_PROTO_NONE, FQP_PROTO_OTHER);
}

unsigned fqp_type_size_from_str(const char *s)
{
	static const struct {
		const char *name;
		unsigned size;
	} t[] = {{"ncclInt8", 1},    {"ncclUint8", 1},    {"ncclInt32", 4},      {"ncclUint32", 4},
		 {"ncclInt64", 8},   {"ncclUint64", 8},   {"ncclFloat16", 2},    {"ncclFloat32", 4},
		 {"ncclFloat64", 8}, {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}};

	if (!s)
		return 0;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strncmp(s, t[i].name, 32) == 0)
			return t[i].size;
	return 0;
}

int fqp_func_from_v1(uint8_t f)
{
	/* ncclFunc_t in 2.23: Broadcast 0, Reduce 1, AllGather 2,
	 * ReduceScatter 3, AllReduce 4, SendRecv 5, Send 6, Recv 7. */
	return f <= 7 ? FQP_FUNC_BROADCAST + f : FQP_FUNC_OTHER;
}

int fqp_algo_from_v1(uint8_t a)
{
	/* TREE 0, RING 1, COLLNET_DIRECT 2, COLLNET_CHAIN 3, NVLS 4, NVLS_TREE 5, PAT 6 */
	return a <= 6 ? FQP_ALGO_TREE + a : FQP_ALGO_OTHER;
}

int fqp_proto_from_v1(uint8_t p)
{
	return p <= 2 ? FQP_PROTO_LL + p : FQP_PROTO_OTHER; /* LL 0, LL128 1, SIMPLE 2 */
}

unsigned fqp_type_size_from_v1(uint8_t t)
{
	/* Int8 0, Uint8 1, Int32 2, Uint32 3, Int64 4, Uint64 5, Float16 6,
	 * Float32 7, Float64 8, Bfloat16 9 */
	static const unsigned sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

	return t < sizeof(sz) / sizeof(sz[0]) ? sz[t] : 0;
}

const char *fqp_func_name(int id)
{
	return id >= 0 && id < FQP_FUNC_N ? funcs[id] : "other";
}

const char *fqp_algo_name(int id)
{
	return id >= 0 && id < FQP_ALGO_N ? algos[id] : "other";
}

const char *fqp_proto_name(int id)
{
	return id >= 0 && id < FQP_PROTO_N ? protos[id] : "other";
}
