#!/usr/bin/env python3
"""One case of tests/gpu/run.sh: 2 ranks on one GPU, each its own "host"
(distinct NCCL_HOSTID, so NCCL takes the network path), an all_reduce of
SIZE bytes ITERS times through PyTorch's NCCL backend. Rank r fills its
tensor with r + 1; every result must be 3 (1 + 2) everywhere. Prints one
line from rank 0:  result=verified|WRONG iters=N bytes=B busbw_gbs=X
(bus bandwidth as nccl-tests defines it for all_reduce: 2 (n-1)/n of the
bytes per second, here n = 2)."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, port, size, iters, env):
    os.environ.update(env)
    os.environ["NCCL_HOSTID"] = "fabriciq-gpu-host-%d" % rank
    os.environ["FABRICIQ_RANK"] = str(rank)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=2)
    torch.cuda.set_device(0)
    n = size // 4
    x = torch.empty(n, dtype=torch.float32, device="cuda")
    ok = True
    for _ in range(3):  # warm up: connections, buffers
        x.fill_(rank + 1)
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        x.fill_(rank + 1)
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t = time.perf_counter() - t0
    ok = bool(torch.all(x == 3.0).item())
    verdict = torch.tensor([1 if ok else 0], device="cuda")
    dist.all_reduce(verdict, op=dist.ReduceOp.MIN)
    if rank == 0:
        busbw = 2 * (2 - 1) / 2 * size * iters / t / 1e9
        print("result=%s iters=%d bytes=%d busbw_gbs=%.3f" %
              ("verified" if verdict.item() == 1 else "WRONG", iters, size, busbw), flush=True)
    dist.destroy_process_group()


def main():
    port, size, iters = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    env = {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "FABRICIQ_"))}
    mp.spawn(rank_main, args=(port, size, iters, env), nprocs=2, join=True)


if __name__ == "__main__":
    main()
