#!/usr/bin/env python3
"""Sends exactly N requests of Benchmarks/Signing/compare.sh (POST /v1/offers/sign, its body and API key) over C keep-alive
connections at once, each connection sending its next request when the previous answer has arrived (as wrk does),
and prints how many answers had each status. A fixed count, unlike wrk's fixed duration: what
Benchmarks/Signing/instructions-per-request.sh divides an instruction count by.

    Benchmarks/Signing/fixed-requests.py PORT [requests, 2000] [connections, 16]

Exit status 1 if an answer was not 200 or a connection failed.
"""
import asyncio
import collections
import sys

BODY = b'{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-0001"}'
REQUEST = (b"POST /v1/offers/sign HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Authorization: Bearer bench-client-key-0123456789abcdef\r\n"
           b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)


async def connection(port, count, statuses):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for _ in range(count):
            writer.write(REQUEST)
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            status = int(lines[0].split()[1])
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            statuses[status] += 1
    finally:
        writer.close()


async def main(port, requests, connections):
    statuses = collections.Counter()
    share, extra = divmod(requests, connections)
    counts = [share + (1 if index < extra else 0) for index in range(connections)]
    await asyncio.gather(*(connection(port, count, statuses) for count in counts if count))
    return statuses


if __name__ == "__main__":
    port = int(sys.argv[1])
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    statuses = asyncio.run(main(port, requests, connections))
    print(" ".join("%d: %d" % item for item in sorted(statuses.items())))
    sys.exit(0 if statuses == {200: requests} else 1)
