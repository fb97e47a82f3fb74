#!/usr/bin/env python3
"""The CPU a console request costs the server, for hostile multipart bodies of 16 KiB (docs/PERFORMANCE.md,
"The console's forms"): each shape is POSTed N times to /console/login of a `serve --demo`, unauthenticated as an
attacker would, and the server's CPU (utime + stime from /proc) is read before and after.

Usage: .venv/bin/python Benchmarks/Console/console-parse-cost.py PATH/TO/offer-signer [N]      (N: requests per shape, default 200)

The shapes: one normal field; a header line of `content-disposition:` repeated; `;` repeated in a header; tiny
parts; near-misses of the boundary; no boundary at all. The sign-in limiter answers 429 once an address has failed
too often; every answer (400, 413, 429) still reads the body, which is what is measured. Prints one line a shape:
milliseconds of server CPU per request. Exit status 0; 1 if the server could not be started.
"""
import http.client
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "IntegrationTests"))
import harness  # noqa: E402  (IntegrationTests/harness.py)

BINARY = os.path.abspath(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
SIZE = 16 * 1024
BOUNDARY = "XyZ0123456789boundary"


def body(shape):
    head = f"--{BOUNDARY}\r\n".encode()
    if shape == "one normal field":
        part = head + b'Content-Disposition: form-data; name="token"\r\n\r\n' + b"a" * 64 + b"\r\n"
        return part + b"x" * (SIZE - len(part) - len(BOUNDARY) - 8) + f"\r\n--{BOUNDARY}--\r\n".encode()
    if shape == "a repeated header name":
        return head + b"content-disposition:" * (SIZE // 20) + b"\r\n\r\nv\r\n" + f"--{BOUNDARY}--\r\n".encode()
    if shape == "';' repeated in a header":
        return head + b"Content-Disposition: form-data" + b";" * (SIZE - 60) + b"\r\n\r\nv\r\n" + f"--{BOUNDARY}--\r\n".encode()
    if shape == "tiny parts":
        part = head + b'Content-Disposition: form-data; name="a"\r\n\r\nv\r\n'
        return part * (SIZE // len(part)) + f"--{BOUNDARY}--\r\n".encode()
    if shape == "near-misses of the boundary":
        near = f"\r\n--{BOUNDARY[:-1]}".encode()
        return head + b'Content-Disposition: form-data; name="token"\r\n\r\n' + near * (SIZE // len(near)) + f"\r\n--{BOUNDARY}--\r\n".encode()
    if shape == "no boundary":
        return b"z" * SIZE
    raise ValueError(shape)


SHAPES = ["one normal field", "a repeated header name", "';' repeated in a header", "tiny parts", "near-misses of the boundary", "no boundary"]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    port = harness.free_port()
    env = dict(os.environ, OFFER_SIGNER_PORT=str(port))
    try:
        server = harness.start_server(BINARY, env, args=("serve", "--demo"), timeout=120)
    except RuntimeError as error:
        print(f"console-parse-cost: {error}")
        return 1
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for shape in SHAPES:
            payload = body(shape)
            statuses = {}
            before = cpu_seconds(server.pid)
            for _ in range(N):
                connection.request("POST", "/console/login", body=payload,
                                   headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
                response = connection.getresponse()
                response.read()
                statuses[response.status] = statuses.get(response.status, 0) + 1
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            spent = cpu_seconds(server.pid) - before
            answers = ", ".join(f"{count}× {status}" for status, count in sorted(statuses.items()))
            print(f"{shape:32} {len(payload):6} bytes  {spent / N * 1000:7.3f} ms of server CPU a request  ({answers})")
        connection.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except Exception:
            server.kill()
    return 0


if __name__ == "__main__":
    start = time.monotonic()
    status = main()
    print(f"({time.monotonic() - start:.1f} s)")
    sys.exit(status)
