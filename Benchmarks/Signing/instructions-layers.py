#!/usr/bin/env python3
"""Instructions per signing request by layer, from a callgrind dump of `offer-signer serve` answering N requests
(Benchmarks/Signing/instructions-per-request.sh makes the dump and calls this):

    Benchmarks/Signing/instructions-layers.py CALLGRIND_OUT INCLUSIVE_TXT SELF_TXT N

INCLUSIVE_TXT and SELF_TXT are `callgrind_annotate --inclusive=yes|no --threshold=100` of the dump. A layer is
the inclusive cost of the functions that enter it less the layers nested in it (the formulas below), so the rows
add up to the total; what no marker claims is "other". Names are Swift's mangled symbols (valgrind does not
demangle Swift); a marker that matches nothing counts 0 and is listed as missing, so a renamed function shows.
Allocations and metrics cut across the layers and are reported apart, inside them.
"""
import re
import sys

dump, inclusive_txt, self_txt, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
LINE = re.compile(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(?:[^:\s]*:)?(.*?)(?: \[(.*)\])?$")


def costs(path):
    table = {}
    for line in open(path):
        match = LINE.match(line)
        if match and "PROGRAM TOTALS" not in line:
            name = match.group(2)
            table[name] = table.get(name, 0) + int(match.group(1).replace(",", ""))
    return table


inclusive = costs(inclusive_txt)
exclusive = costs(self_txt)
total = next(int(l.split()[1]) for l in open(dump) if l.startswith(("summary:", "totals:")))
missing = []


def I(pattern, optional=False):
    """The inclusive cost of the function the pattern names: the largest match (a thunk and its implementation
    both match; the thunk includes the implementation), recursion copies ('2) left out. `optional`: a function
    that need not run (StrictJSON when the plain reader reads the body, the text log handler)."""
    found = [cost for name, cost in inclusive.items() if "'" not in name and re.search(pattern, name)]
    if not found:
        if not optional:
            missing.append(pattern)
        return 0
    return max(found)


def S(pattern):
    """The sum of the self costs of every function the pattern names."""
    return sum(cost for name, cost in exclusive.items() if re.search(pattern, name))


sign = I(r"P256O7SigningO10PrivateKeyV9signature3for")
verify = I(r"P256O7SigningO9PublicKeyV16isValidSignature_3for")
legacy_flow = I(r"ServiceC10legacyFlow_3app13transactionId.*cfU_")
immediate = I(r"ServiceC12immediateRun_3now.*cfU_")
plain_json = I(r"SignA7RequestV0A12SignerServerE9plainJSON")
strict_json = I(r"decodeJSON", optional=True)
handler_read = I(r"EventLoopSigningHandlerC11channelRead7context4data")
commit = I(r"ServiceC6commit_14startWhenReady10completion.*GYbctF$")
writer = I(r"GroupCommitQueueC11startWriter")
sqlite = I(r"SQLiteLogWriterC12writeOnQueue")
read = I(r"BaseStreamSocketChannelC08readFromD0AA0bdE0C10ReadResult")
answer = I(r"EventLoopSigningHandlerC6answer33_.*SignedLegacy")
http_write = I(r"EventLoopSigningHandlerC5write33_")
api_json = I(r"apiJSON7NIOCore10ByteBufferVvg")
log_handler = I(r"JSONLogHandlerV3log5eventy7Logging8LogEventV_tF") + I(r"StreamLogHandlerV3log5event", optional=True)
loop = I(r"SelectableEventLoopC3runyyKF$")

layers = [
    ("ECDSA sign (BoringSSL through swift-crypto)", sign),
    ("ECDSA self-verify with the public key", verify),
    ("rest of signing: validation, payload, SHA-256, nonce, DER, base64, the record", legacy_flow - sign - verify),
    ("signing pipeline: flow, decision, key lookup, signing timer", immediate - legacy_flow),
    ("JSON parse of the request (plain reader; StrictJSON when it declines)", plain_json + strict_json),
    ("request handling: head checks, credential, customer, rate limits, state machine", handler_read - immediate - plain_json - strict_json - commit),
    ("HTTP receive and parse: socket read, llhttp, NIO decoder, pipelining/conformance/idle handlers", read - handler_read),
    ("JSON encode of the answer (apiJSON)", api_json),
    ("HTTP write: response head, encoder, outbound handlers, socket write", http_write),
    ("access-log line: swift-log handler (JSON line, write to stderr)", log_handler),
    ("access-line fields, request metrics, answer bookkeeping", answer - http_write - api_json - log_handler),
    ("group commit: submit, batching, completions, hops back to the event loop", commit + writer - sqlite),
    ("SQLite log writer: BEGIN, INSERT per record, COMMIT (user space)", sqlite),
]
accounted = sum(cost for _, cost in layers)
layers.append(("other: event-loop ticks, timers, dispatch, scheduling", total - accounted))

per = lambda cost: cost / count
print("%d requests; %s instructions in all: %.0f instructions a request (user space; the kernel's share is not counted)" % (
    count, format(total, ","), per(total)))
print()
print("| layer | instructions / request | share |")
print("|---|---:|---:|")
for name, cost in layers:
    print("| %s | %s | %.1f %% |" % (name, format(round(per(cost)), ","), 100 * cost / total))
print("| **total** | **%s** | 100 %% |" % format(round(per(total)), ","))


def calls(function):
    """Calls a request to a function, from the dump's call records (calls=N lines under cfn=the function)."""
    names, total_calls, current = {}, 0, None
    for line in open(dump):
        if line.startswith("cfn="):
            match = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.strip())
            if match.group(2):
                names[match.group(1)] = match.group(2)
            current = names.get(match.group(1))
        elif line.startswith("calls=") and current == function:
            total_calls += int(line.split("=")[1].split()[0])
    return total_calls


print()
print("Inside the layers above:")
alloc = sum(I(r"^%s$" % name, optional=True) for name in ("malloc", "free", "realloc", "calloc", "posix_memalign"))
print("- allocation: malloc %.1f and free %.1f calls a request; malloc, free and friends %s instructions a request" % (
    calls("malloc") / count, calls("free") / count, format(round(per(alloc)), ",")))
refcount = S(r"^swift_(retain|release|bridgeObjectRetain|bridgeObjectRelease)") + S(r"RefCounts")
print("- reference counting (swift_retain/release, self): %s instructions a request" % format(round(per(refcount)), ","))
exclusivity = S(r"^swift_beginAccess|^swift_endAccess|AccessSet")
print("- dynamic exclusivity checks (swift_beginAccess, self): %s instructions a request" % format(round(per(exclusivity)), ","))
metrics = (I(r"CoreMetrics5TimerC0B0E6record8duration") * 0  # counted through its callers below
           + sum(cost for name, cost in inclusive.items() if "'" not in name and re.search(
               r"^\$s(10Prometheus|11CoreMetrics)", name) and re.search(r"(record|increment|decrement|set)", name)
               and not re.search(r"TW$|Tm$", name) and not re.search(r"cfU_|XEfU_", name)))
print("- metrics (Prometheus and swift-metrics record/increment, inclusive; an estimate): %s instructions a request" % format(round(per(metrics)), ","))
print("- threads: the event loops %s, the log writer's queue (GroupCommitQueue's writer) %s instructions a request" % (
    format(round(per(loop)), ","), format(round(per(writer)), ",")))
if missing:
    print("markers that matched nothing (renamed or inlined functions?): " + ", ".join(missing), file=sys.stderr)
