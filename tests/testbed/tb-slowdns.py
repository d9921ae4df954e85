#!/usr/bin/env python3
"""tb-slowdns: a DNS server that answers late. Usage: tb-slowdns.py ADDR
DELAY_S NAME=IPV4... Listens on ADDR:53 (UDP); an A query for a NAME is
answered with its IPv4 after DELAY_S seconds, anything else with NXDOMAIN
(as late). Each query is printed (name, type) as it comes."""
import socket
import sys
import threading


def answer(query, table):
    # header (12 bytes), then one question: labels, type, class
    i, labels = 12, []
    while query[i]:
        labels.append(query[i + 1:i + 1 + query[i]].decode("ascii", "replace"))
        i += 1 + query[i]
    qtype = int.from_bytes(query[i + 1:i + 3], "big")
    question = query[12:i + 5]
    name = ".".join(labels).lower()
    ip = table.get(name) if qtype == 1 else None
    flags = b"\x81\x80" if ip else b"\x81\x83"
    head = query[:2] + flags + b"\x00\x01" + (b"\x00\x01" if ip else b"\x00\x00") + b"\x00\x00\x00\x00"
    body = question
    if ip:
        body += b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x00\x00\x04" + socket.inet_aton(ip)
    return name, qtype, head + body


def main():
    addr, delay = sys.argv[1], float(sys.argv[2])
    table = dict(a.lower().split("=", 1) for a in sys.argv[3:])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    while True:
        query, peer = s.recvfrom(512)
        try:
            name, qtype, reply = answer(query, table)
        except (IndexError, ValueError):
            continue
        print("query %s type %d from %s" % (name, qtype, peer[0]), flush=True)
        threading.Timer(delay, s.sendto, (reply, peer)).start()


if __name__ == "__main__":
    main()
