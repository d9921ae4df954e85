#!/usr/bin/env python3
"""A stand-in for the node agent's telemetry socket on a machine with no
agent:  capture.py PATH OUT PROTO
listens on PATH, reads the plugins' frames (4-byte big-endian length, then
a protobuf Envelope) and, on SIGTERM, writes to OUT one line:
frames=N lane=N failover=N other=N bytes=N
(a frame's kind by its Envelope payload's field number, read from PROTO,
proto/fabriciq.proto)."""
import os
import re
import selectors
import signal
import socket
import sys


def payload_fields(proto):
    """Field numbers of Envelope's lane and failover payloads."""
    text = open(proto).read()
    env = re.search(r"message Envelope \{(.*?)\n\}", text, re.S).group(1)
    nums = {}
    for name in ("lane", "failover"):
        m = re.search(r"\b\w+ %s = (\d+);" % name, env)
        nums[name] = int(m.group(1)) if m else -1
    return nums


def varint(b, i):
    n = s = 0
    while i < len(b):
        c = b[i]
        i += 1
        n |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return n, i
    return None, i


def kind_of(frame, nums):
    i = 0
    while i < len(frame):
        key, i = varint(frame, i)
        if key is None:
            return "other"
        field, wire = key >> 3, key & 7
        if wire == 2:
            if field == nums["lane"]:
                return "lane"
            if field == nums["failover"]:
                return "failover"
            ln, i = varint(frame, i)
            i += ln or 0
        elif wire == 0:
            _, i = varint(frame, i)
        else:
            return "other"
    return "other"


def main():
    path, out, proto = sys.argv[1], sys.argv[2], sys.argv[3]
    nums = payload_fields(proto)
    counts = {"frames": 0, "lane": 0, "failover": 0, "other": 0, "bytes": 0}
    if os.path.exists(path):
        os.unlink(path)
    lis = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lis.bind(path)
    os.chmod(path, 0o666)
    lis.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(lis, selectors.EVENT_READ)
    bufs = {}
    done = []
    signal.signal(signal.SIGTERM, lambda *_: done.append(1))
    while not done:
        for key, _ in sel.select(0.2):
            if key.fileobj is lis:
                c, _ = lis.accept()
                sel.register(c, selectors.EVENT_READ)
                bufs[c] = b""
                continue
            c = key.fileobj
            data = c.recv(1 << 16)
            if not data:
                sel.unregister(c)
                c.close()
                continue
            b = bufs[c] + data
            while len(b) >= 4 and len(b) >= 4 + int.from_bytes(b[:4], "big"):
                n = int.from_bytes(b[:4], "big")
                counts["frames"] += 1
                counts["bytes"] += n
                counts[kind_of(b[4:4 + n], nums)] += 1
                b = b[4 + n:]
            bufs[c] = b
    with open(out, "w") as f:
        f.write(" ".join("%s=%d" % kv for kv in counts.items()) + "\n")


if __name__ == "__main__":
    main()
