#!/usr/bin/env python3
"""Connection patterns that once exhausted the service, against a real `offer-signer serve --demo` process.

Each check opens raw sockets on loopback, so it sees exactly what a client sees:
- an idle connection and a slowloris head (one byte every 0.5 s) are closed after OFFER_SIGNER_IDLE_TIMEOUT;
- a declared Content-Length with no body is dropped after OFFER_SIGNER_REQUEST_TIMEOUT;
- a malformed chunk size is answered 400, never 500;
- an HTTP/1.0 request without keep-alive gets its answer and the connection is closed;
- more connections than OFFER_SIGNER_MAX_CONNECTIONS (held open, idle) do not kill the process, and
  /healthz answers again once the idle ones time out;
- SIGTERM stops the process within 3 seconds;
- a port in use exits 78, an unreachable database 69 within the start-up timeout (15 s).

Usage: IntegrationTests/connection-check.py PATH/TO/offer-signer     (exit status 0 when every check passes)
"""
import os
import signal
import socket
import subprocess
import sys
import time

BINARY = os.path.abspath(sys.argv[1])
IDLE, REQUEST, MAXIMUM = 2, 2, 64
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def connect(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


def closed_within(s, seconds):
    """Seconds until the server closed `s` (reading and discarding any answer), or None if still open."""
    start = time.monotonic()
    s.settimeout(0.2)
    while time.monotonic() - start < seconds:
        try:
            data = s.recv(4096)
            if not data:
                return time.monotonic() - start
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - start
    return None


def answer(s, seconds=5):
    s.settimeout(seconds)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    return data


with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_IDLE_TIMEOUT=str(IDLE),
           OFFER_SIGNER_REQUEST_TIMEOUT=str(REQUEST), OFFER_SIGNER_MAX_CONNECTIONS=str(MAXIMUM))
server = subprocess.Popen([BINARY, "serve", "--demo"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def healthy(timeout=2):
    try:
        s = connect(port, timeout)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        ok = answer(s, timeout).startswith(b"HTTP/1.1 200")
        s.close()
        return ok
    except OSError:
        return False


try:
    for _ in range(200):
        if healthy(1):
            break
        time.sleep(0.05)
    check(healthy(), "the demo service answers /healthz")

    s = connect(port)
    elapsed = closed_within(s, IDLE + 3)
    check(elapsed is not None and elapsed >= IDLE - 0.5, f"an idle connection is closed after the idle timeout ({elapsed})")
    s.close()

    s = connect(port)
    s.sendall(b"POST /v1/offers/sign HTTP/1.1\r\nHost: x\r\n")
    start, closed = time.monotonic(), False
    while time.monotonic() - start < IDLE + 3:
        try:
            s.sendall(b"X")
        except OSError:
            closed = True
            break
        if closed_within(s, 0.5) is not None:
            closed = True
            break
    check(closed, f"a slowloris head (one byte every 0.5 s) is closed within the idle timeout ({time.monotonic() - start:.1f} s)")
    s.close()

    s = connect(port)
    s.sendall(b"POST /v1/offers/sign HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10485760\r\n\r\n{")
    elapsed = closed_within(s, REQUEST + IDLE + 3)
    check(elapsed is not None, f"a declared 10 MiB body that never comes is dropped ({elapsed})")
    s.close()

    s = connect(port)
    s.sendall(b"POST /v1/offers/sign HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
    head = answer(s)
    check(head.startswith(b"HTTP/1.1 400"), f"a malformed chunk size is answered 400 ({head[:40]!r})")
    s.close()

    s = connect(port)
    s.sendall(b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n")
    head = answer(s)
    elapsed = closed_within(s, IDLE + 1)
    check(head.startswith(b"HTTP/1.") and b" 200" in head[:16] and elapsed is not None and elapsed < 1, f"an HTTP/1.0 request gets its answer and the connection is closed ({head[:20]!r}, {elapsed})")
    s.close()

    held = []
    for _ in range(MAXIMUM * 4):
        try:
            held.append(connect(port, 2))
        except OSError:
            break
    check(server.poll() is None, f"{len(held)} idle connections (limit {MAXIMUM}) leave the process running")
    start, recovered = time.monotonic(), False
    while time.monotonic() - start < IDLE * 4 + 5:
        if healthy(2):
            recovered = True
            break
    check(recovered, f"/healthz answers again within {time.monotonic() - start:.1f} s while they are held")
    for s in held:
        s.close()
    check(server.poll() is None and healthy(), "the process is alive and serving after the flood")

    start = time.monotonic()
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    elapsed = time.monotonic() - start
    check(server.poll() is not None and elapsed < 3, f"SIGTERM stops the service promptly ({elapsed:.1f} s)")
finally:
    if server.poll() is None:
        server.kill()
        server.wait()

# Start-up fails fast and clearly: a port in use is a configuration error (78); a database that does not
# answer is an unavailable dependency (69) within the start-up timeout, and its password is never printed.
with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = subprocess.run([BINARY, "serve", "--demo"], env=dict(os.environ, OFFER_SIGNER_PORT=str(taken.getsockname()[1]), LOG_FORMAT="text"),
                          capture_output=True, text=True, timeout=60)
check(busy.returncode == 78 and "OFFER_SIGNER_PORT" in busy.stderr, f"a port in use stops start-up with 78 and names OFFER_SIGNER_PORT ({busy.returncode})")
key = subprocess.run([BINARY, "keys", "generate"], capture_output=True, text=True, check=True).stdout
start = time.monotonic()
unreachable = subprocess.run([BINARY, "serve"], env=dict(os.environ, OFFER_SIGNER_BUNDLE_ID="com.example.app", OFFER_SIGNER_KEY_K1=key,
                             OFFER_SIGNER_CLIENT_AUTH="none", OFFER_SIGNER_DATABASE_URL="postgres://u:hunter2secret@127.0.0.1:1/db", LOG_FORMAT="text"),
                             capture_output=True, text=True, timeout=90)
elapsed = time.monotonic() - start
check(unreachable.returncode == 69 and elapsed < 30 and "OFFER_SIGNER_DATABASE_URL" in unreachable.stderr and "hunter2secret" not in unreachable.stderr,
      f"an unreachable database stops start-up with 69 in {elapsed:.0f} s, naming the variable, not the password ({unreachable.returncode})")

print(f"\n{len(failures)} failure(s)" if failures else "\nall connection checks passed")
sys.exit(1 if failures else 0)
