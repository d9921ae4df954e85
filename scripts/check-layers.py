#!/usr/bin/env python3
"""Check the #include edges of every C file against scripts/layers.txt.

Usage: check-layers.py [SRCDIR]. Fails (exit 1), naming each, on an upward
or sideways include (layers.txt says which way is down), on a file-level
include cycle and on a directory-level one. Quoted includes only: a path
with a directory is from the top of the tree, a bare name from the
including file's directory. Build trees inside SRCDIR (a config.status)
are skipped.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def read_layers(path):
    level = {}
    with open(path) as f:
        lines = [l.split('#')[0].split() for l in f]
    for n, line in enumerate(l for l in lines if l):
        for layer in line:
            level[layer] = n
    return level


def sources(top):
    for d, dirs, files in os.walk(top):
        if 'config.status' in files and d != top:
            dirs[:] = []
            continue
        dirs[:] = sorted(x for x in dirs if not x.startswith('.') and x != 'autom4te.cache')
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                yield os.path.relpath(os.path.join(d, f), top)


def edges(top, files):
    known = set(files)
    for f in files:
        with open(os.path.join(top, f), errors='replace') as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            to = inc if '/' in inc else os.path.normpath(os.path.join(os.path.dirname(f), inc))
            if '/' in inc or to in known:
                yield f, to


def layer_of(path, level):
    best = None
    for layer in level:
        if (path + '/').startswith(layer + '/') and (best is None or len(layer) > len(best)):
            best = layer
    return best


def cycles(graph):
    """The strongly connected components of more than one node, or with a self-loop (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1 or node in graph.get(node, ()):
                        out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    level = read_layers(os.path.join(top, 'scripts', 'layers.txt'))
    files = list(sources(top))
    bad = []
    fgraph, dgraph = {}, {}
    n = 0
    for f, to in edges(top, files):
        n += 1
        fgraph.setdefault(f, set()).add(to)
        if os.path.dirname(f) != os.path.dirname(to):
            dgraph.setdefault(os.path.dirname(f), set()).add(os.path.dirname(to))
        a, b = layer_of(f, level), layer_of(to, level)
        if a is None or b is None:
            bad.append('%s -> %s: %s is in no layer of layers.txt' % (f, to, f if a is None else to))
        elif a != b and level[a] <= level[b]:
            bad.append('%s -> %s: %s include (%s, level %d -> %s, level %d)' %
                       (f, to, 'sideways' if level[a] == level[b] else 'upward', a, level[a], b, level[b]))
    for c in cycles(fgraph):
        bad.append('file include cycle: ' + ' -> '.join(c))
    for c in cycles(dgraph):
        bad.append('directory include cycle: ' + ' <-> '.join(c))
    for b in bad:
        print('check-layers: ' + b)
    print('check-layers: %d files, %d include edges, %d problem(s)' % (len(files), n, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
