#!/usr/bin/env python3
"""fo-check LOG DBROWS: the ranks' failover/failback lines per (conn, lane,
end) against fabriciq.failover_events rows (conn_id|from_lane|is_send|failback|cause)."""
import re, sys, collections
log, rows = sys.argv[1], sys.argv[2]
L = collections.Counter()
lines = collections.defaultdict(list)
for line in open(log, errors='replace'):
    m = re.search(r'connection ([0-9a-f]+) lane (\d+)(?:/\d+)? \(\S+ (?:\S+ )?(->|<-) ', line)
    if not m: continue
    conn, lane, d = int(m.group(1), 16), int(m.group(2)), m.group(3)
    end = 'send' if d == '->' else 'recv'
    lines[(conn, lane)].append(line.rstrip())
    if 'bytes to resend' in line or 'waiting for the sender' in line or '): connect-failed: ' in line:
        L[(conn, lane, end, 'down')] += 1
    elif 'failback' in line:
        L[(conn, lane, end, 'back')] += 1
D = collections.Counter()
for r in open(rows):
    r = r.strip()
    if not r: continue
    conn, lane, is_send, fb, cause = r.split('|')
    if cause == 'steer': continue
    conn = int(conn) & (2**64 - 1)
    D[(conn, int(lane), 'send' if is_send == 't' else 'recv', 'back' if fb == 't' else 'down')] += 1
bad = 0
for k in sorted(set(L) | set(D)):
    if L[k] != D[k]:
        bad += 1
        print('MISMATCH %016x lane %d %s %s: logged %d, stored %d' % (k[0], k[1], k[2], k[3], L[k], D[k]))
        for l in lines[(k[0], k[1])]:
            print('  ' + l)
tl = sum(L.values()); td = sum(D.values())
print('logged %d events (%d down, %d back), stored %d; %d mismatching keys' % (
    tl, sum(v for k, v in L.items() if k[3] == 'down'), sum(v for k, v in L.items() if k[3] == 'back'), td, bad))
sys.exit(1 if bad else 0)
