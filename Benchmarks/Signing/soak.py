#!/usr/bin/env python3
"""Soak run: signs at a steady rate for a while against a real `offer-signer serve` on an SQLite file, and
reports every minute the server's resident memory, the WAL file's size and that minute's latency
percentiles — memory and WAL must stay bounded and p99 must not drift.

Usage: Benchmarks/Signing/soak.py PATH/TO/offer-signer [MINUTES=10] [RATE_PER_SECOND=500] [CONNECTIONS=16]

The server is started here (a generated key, a policy-less app, the store in a temporary folder), on a free
loopback port. Requests are paced by wall clock (open loop): a slow answer does not slow the senders down,
so queueing shows up in the percentiles. Exit status 1 if any request failed or the process died.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "IntegrationTests"))
import scratch  # noqa: E402  (IntegrationTests/scratch.py: the run's folder, removed when it passes)

binary = os.path.abspath(sys.argv[1])
minutes = float(sys.argv[2]) if len(sys.argv) > 2 else 10
rate = float(sys.argv[3]) if len(sys.argv) > 3 else 500
connections = int(sys.argv[4]) if len(sys.argv) > 4 else 16

work = scratch.folder("offer-signer-soak-")
database = os.path.join(work, "store.sqlite")
key = subprocess.run([binary, "keys", "generate"], capture_output=True, text=True, check=True).stdout
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_BUNDLE_ID="com.example.app",
           OFFER_SIGNER_KEY_SOAKTEST01=key, OFFER_SIGNER_DATABASE_URL=f"sqlite:{database}", OFFER_SIGNER_CLIENT_AUTH="none",
           LOG_LEVEL="warning")
server = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(200):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        c.request("GET", "/readyz")
        if c.getresponse().status == 200:
            break
    except OSError:
        time.sleep(0.05)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def file_mib(path):
    try:
        return os.path.getsize(path) / (1 << 20)
    except OSError:
        return 0.0


lock = threading.Lock()
latencies, failures, total = [], [0], [0]
stop = threading.Event()
start = time.monotonic()
interval = connections / rate  # each sender's period


def sender(index):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    next_at = start + index * (1 / rate)
    n = 0
    while not stop.is_set():
        now = time.monotonic()
        if now < next_at:
            time.sleep(next_at - now)
        body = json.dumps({"productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50",
                           "applicationUsername": f"soak-{index}-{n % 1000}"})
        sent = time.monotonic()
        try:
            connection.request("POST", "/v1/offers/sign", body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            ok = response.status == 200
        except OSError:
            ok = False
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        elapsed = time.monotonic() - next_at  # from the scheduled time: queueing included
        with lock:
            total[0] += 1
            if ok:
                latencies.append(elapsed)
            else:
                failures[0] += 1
        n += 1
        next_at += interval


threads = [threading.Thread(target=sender, args=(i,), daemon=True) for i in range(connections)]
for thread in threads:
    thread.start()

print(f"soak: {minutes:g} min at {rate:g} req/s over {connections} connections; store {database}")
print("minute  requests  failures  p50_ms  p90_ms  p99_ms  rss_mib  wal_mib  db_mib")
exit_status = 0
try:
    for minute in range(1, int(minutes) + 1):
        deadline = start + 60 * minute
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if server.poll() is not None:
                print("the server died")
                exit_status = 1
                break
        if exit_status:
            break
        with lock:
            sample, failed, count = sorted(latencies), failures[0], total[0]
            latencies.clear()
            failures[0] = 0
            total[0] = 0

        def pct(p):
            return sample[min(len(sample) - 1, int(len(sample) * p))] * 1000 if sample else float("nan")
        print(f"{minute:6d}  {count:8d}  {failed:8d}  {pct(0.5):6.2f}  {pct(0.9):6.2f}  {pct(0.99):6.2f}  "
              f"{rss_mib(server.pid):7.1f}  {file_mib(database + '-wal'):7.1f}  {file_mib(database):6.1f}", flush=True)
        if failed:
            exit_status = 1
finally:
    stop.set()
    for thread in threads:
        thread.join(timeout=15)
    server.terminate()
    server.wait(timeout=15)
scratch.finish(work, failed=exit_status != 0)
sys.exit(exit_status)
