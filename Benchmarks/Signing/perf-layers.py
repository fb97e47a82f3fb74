#!/usr/bin/env python3
"""Shares of a server's CPU by layer, from a `perf script -F comm,ip,sym` dump of a call-graph profile of
`offer-signer serve` under the signing load (docs/PERFORMANCE.md, "Where the time goes"):

    perf record --call-graph dwarf,16384 -F 1999 -p <server pid> -o perf.data -- sleep 5
    perf script -i perf.data -F comm,ip,sym > stacks.txt
    Benchmarks/Signing/perf-layers.py stacks.txt

Each sample goes to the first layer whose marker appears in its stack (the order below); the SQLite log writer's
queue by its frames, sqlite-nio's thread pool and Swift's cooperative pool by thread name.
"""
import collections, sys
samples=open(sys.argv[1]).read().split('\n\n')
cats=collections.Counter(); tot=0
rules=[("sign + self-verify (P-256 sign and verify, payload, DER, base64, UUID nonce)","signLegacy"),
("JSON decode of the request (the plain reader, or the duplicate-key scan and JSONDecoder)","plainJSON"),
("JSON decode of the request (the plain reader, or the duplicate-key scan and JSONDecoder)","decodeJSON"),
("JSON encode of the answer","JSONEncoder"),
("JSON encode of the answer","apiJSON"),
("access-log line","RequestLoggingMiddlewareV3log"),
("writing the response (headers, socket write)","EventLoopSigningHandlerC5write"),
("auth, validation, rate limits, pipeline bookkeeping","EventLoopSigningV7outcome"),
("HTTP/1 receive and parse (socket read, llhttp, pipeline handlers)","readFromD0"),
]
for smp in samples:
    lines=[l for l in smp.strip().split('\n') if l.strip()]
    if not lines: continue
    tot+=1
    comm=lines[0].split()[0]
    stack=" ".join(lines[1:])
    if "SQLiteLogWriter" in stack: cats["log: SQLiteLogWriter (INSERTs, WAL, fsync) on its queue"]+=1; continue
    if comm.startswith("SGLTN-TP"): cats["log: SQLite through sqlite-nio's thread pool"]+=1; continue
    if "default-qos" in comm: cats["log: group-commit writer task (batching, the write gate, continuations)"]+=1; continue
    if "qos.overcommit" in comm: cats["log: the group commit on the log writer's queue (batching, the write gate, completions)"]+=1; continue
    for name,key in rules:
        if key in stack: cats[name]+=1; break
    else: cats["other event-loop work (epoll, scheduling, commit callbacks)" if comm.startswith("NIO") else "other: "+comm]+=1
for k,v in cats.most_common(): print("| %s | %.1f%% |"%(k,100*v/tot))
