#!/usr/bin/env python3
"""ecmp-place: where the lanes of a trial cross the spines (bench-ecmp.sh).

Reads the lanes the plugin opened, one per line on stdin:
    SRC_IP SPORT DST_IP DPORT
(the dialing side's TCP connections, data flows from SRC to DST), and
prints, for each lane that crosses the spines, one line
    LEAF SRC_IP SPORT DST_IP DPORT SPINE
for the harness to pin with a policy rule on the source leaf.

A connection is (rail, source host, destination host): every rail carries
one job, and a job has one send connection per ordered pair of ranks. Its
lanes are numbered in the order of their source ports, which the kernel
drew at random, so lane k is any one of them.

  --mode seed --seed N   each lane's spine drawn uniformly from (seed,
                         rail, source, destination, k), as a hash of its
                         ports would draw it, but the same in every variant
                         of a trial: a one-lane variant meets the same
                         spine on its lane 0 as a four-lane one does
  --mode optimum         the best placement of the same lanes: each
                         connection's lanes on distinct spines, chosen one
                         connection at a time to keep the most loaded
                         leaf-spine link (up at the source leaf, down at
                         the destination's) as low as it can go; a
                         connection with as many lanes as there are spines
                         puts a lane on each, so every link carries the
                         same share of every connection: the ceiling

The load that counts is the lanes that carry data: every connection of an
alltoall job, only rank r -> r+1 of a ring allreduce (--job RAIL:COLL).
--summary FILE also writes there the busiest link's active lanes against
the mean (1.0: perfectly even), the busiest's and the mean.

Addresses are the testbed's: rail r of host i is 198.19.r.(2i+1), host i
hangs off leaf (i-1)*LEAVES/HOSTS+1.
"""
import argparse
import random
import sys


def host_of(ip):
    parts = ip.split(".")
    if len(parts) != 4 or parts[0:2] != ["198", "19"]:
        raise ValueError(f"{ip} is not a testbed rail address")
    return int(parts[2]), (int(parts[3]) - 1) // 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["seed", "optimum"], required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--leaves", type=int, required=True)
    ap.add_argument("--spines", type=int, required=True)
    ap.add_argument("--job", action="append", default=[], help="RAIL:alltoall|allreduce")
    ap.add_argument("--summary", metavar="FILE")
    a = ap.parse_args()

    colls = {}
    for j in a.job:
        rail, coll = j.split(":")
        colls[int(rail)] = coll
    leaf = lambda h: (h - 1) * a.leaves // a.hosts + 1

    conns = {}
    for line in sys.stdin:
        f = line.split()
        if len(f) != 4:
            continue
        (rail, src), (rail2, dst) = host_of(f[0]), host_of(f[2])
        if rail != rail2 or src == dst:
            continue
        conns.setdefault((rail, src, dst), []).append((int(f[1]), f[0], f[2], int(f[3])))

    def active(key):
        rail, src, dst = key
        coll = colls.get(rail, "alltoall")
        return coll == "alltoall" or dst == src % a.hosts + 1

    load = {}  # (leaf, spine, "up"|"down") -> active lanes
    placed = []
    keys = sorted(conns)
    if a.mode == "optimum":  # the heavy ones first, so the light ones fill in
        keys.sort(key=lambda k: (not active(k), k))
    for key in keys:
        rail, src, dst = key
        lanes = sorted(conns[key])
        ls, ld = leaf(src), leaf(dst)
        if ls == ld:
            continue  # under one leaf: no spine
        w = 1 if active(key) else 0
        used = []
        for k, (sport, sip, dip, dport) in enumerate(lanes):
            if a.mode == "seed":
                s = random.Random(f"{a.seed}/{rail}/{src}/{dst}/{k}").randrange(a.spines) + 1
            else:
                free = [s for s in range(1, a.spines + 1) if s not in used] or list(range(1, a.spines + 1))
                s = min(free, key=lambda s: (max(load.get((ls, s, "up"), 0), load.get((ld, s, "down"), 0)),
                                             load.get((ls, s, "up"), 0) + load.get((ld, s, "down"), 0), s))
            used.append(s)
            load[(ls, s, "up")] = load.get((ls, s, "up"), 0) + w
            load[(ld, s, "down")] = load.get((ld, s, "down"), 0) + w
            placed.append((ls, sip, sport, dip, dport, s))

    if a.summary:
        links = [load.get((l, s, d), 0) for l in range(1, a.leaves + 1) for s in range(1, a.spines + 1)
                 for d in ("up", "down")]
        mean = sum(links) / len(links) if links else 0
        with open(a.summary, "w") as f:
            print(f"{max(links) / mean if mean else 0:.2f} {max(links)} {mean:.2f}", file=f)
    for p in placed:
        print(*p)


if __name__ == "__main__":
    main()
