#!/usr/bin/env python3
"""ctl-raw.py: raw TCP clients against the controller's agent port, for
test-ctl-flood.sh (what no well-behaved agent sends).

  flood PORT N HOLD [SOURCES]
                        open N connections at once, say nothing; print
                        "challenged=C closed=X" (C got their Challenge frame,
                        X were closed with none), then keep them HOLD s and
                        print "dropped=D" (challenged ones the controller
                        closed meanwhile). From 127.0.0.1, or round-robin
                        from SOURCES addresses 127.0.0.2, 127.0.0.3, ...
  bigframe PORT LEN     read the Challenge, then announce a LEN-byte frame and
                        send 1 MiB of it; print "closed after=S s sent=B"
                        (or "open" if the controller still reads after 3 s).
  challenge PORT        print the seconds until the Challenge arrived
                        ("none" after 3 s).
"""
import select
import socket
import struct
import sys
import time


def read_frame(s, deadline):
    buf = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        d = s.recv(65536)
        if not d:
            return None
        buf += d
        if len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
            return buf
    return None


def flood(port, n, hold, sources):
    def source(i):
        return ("127.0.0.%d" % (2 + i % sources), 0) if sources else None

    socks = [socket.create_connection(("127.0.0.1", port), source_address=source(i)) for i in range(n)]
    deadline = time.monotonic() + 2
    live = [s for s in socks if read_frame(s, deadline) is not None]
    print(f"challenged={len(live)} closed={n - len(live)}", flush=True)
    time.sleep(hold)
    dropped = 0
    for s in live:
        r, _, _ = select.select([s], [], [], 0)
        dropped += bool(r) and s.recv(1) == b""
    print(f"dropped={dropped}")


def bigframe(port, length):
    s = socket.create_connection(("127.0.0.1", port))
    if read_frame(s, time.monotonic() + 3) is None:
        print("no challenge")
        return
    t0 = time.monotonic()
    sent = 0
    s.settimeout(3)
    try:
        s.sendall(struct.pack(">I", length))
        chunk = b"\0" * 65536
        while sent < (1 << 20):
            sent += s.send(chunk)
        r, _, _ = select.select([s], [], [], 3)
        if r and s.recv(1) == b"":
            print(f"closed after={time.monotonic() - t0:.2f} s sent={sent}")
            return
        print("open")
    except (ConnectionResetError, BrokenPipeError):
        print(f"closed after={time.monotonic() - t0:.2f} s sent={sent}")
    except socket.timeout:
        print("open")


def challenge(port):
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port))
    f = read_frame(s, t0 + 3)
    print(f"{time.monotonic() - t0:.2f}" if f else "none")


if __name__ == "__main__":
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "flood":
        flood(port, int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    elif cmd == "bigframe":
        bigframe(port, int(sys.argv[3]))
    else:
        challenge(port)
