#!/usr/bin/env python3
"""Redemption ingestion in a notification burst (docs/PERFORMANCE.md "The outcome report"): COUNT App Store Server
Notifications (SUBSCRIBED / RESUBSCRIBE, each a new subscription redeeming a promotional offer at 4.99 USD), signed by
a test chain the server trusts, POSTed to /v1/notifications/appstore by CONCURRENCY keep-alive connections as fast
as it answers; prints notifications (= redemptions) per second and checks the report counts every one. Not a test.

    python3 Benchmarks/Store/outcomes-ingest.py BINARY DATABASE_URL [COUNT [CONCURRENCY]]
    python3 Benchmarks/Store/outcomes-ingest.py .build/release/offer-signer sqlite:/tmp/o.sqlite 100000 16

The notifications are signed before the clock starts (in memory: about 12 KB each); the server is started by the
script on a free port. Needs `cryptography` and PyJWT (IntegrationTests/requirements-interop.txt).
"""
import http.client
import json
import os
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "IntegrationTests"))
import harness  # noqa: E402  (IntegrationTests/harness.py)
import scratch  # noqa: E402  (IntegrationTests/scratch.py: the run's folder, removed when it passes)

binary, database_url = sys.argv[1], sys.argv[2]
count = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 16
bundle = "com.example.bench"

work = scratch.folder("offer-signer-ingest-")
chain = harness.AppStoreTestChain()
with open(f"{work}/root.pem", "w") as file:
    file.write(chain.root_pem())

now = int(time.time() * 1000)
run = int(time.time()) % 1_000_000
started = time.time()
bodies = []
for n in range(count):
    original = str(4_000_000_000_000_000 + run * 10_000_000 + n)
    transaction = {"originalTransactionId": original, "transactionId": original, "bundleId": bundle, "productId": "com.example.monthly",
                   "subscriptionGroupIdentifier": "21000001", "purchaseDate": now - 60_000, "expiresDate": now + 30 * 86_400_000,
                   "type": "Auto-Renewable Subscription", "environment": "Sandbox", "appAccountToken": str(uuid.uuid4()), "signedDate": now,
                   "offerType": 2, "offerIdentifier": f"offer_{n % 5}", "offerDiscountType": "PAY_UP_FRONT", "offerPeriod": "P1M",
                   "price": 4990, "currency": "USD", "storefront": "USA", "transactionReason": "PURCHASE"}
    renewal = {"originalTransactionId": original, "productId": "com.example.monthly", "autoRenewProductId": "com.example.monthly",
               "autoRenewStatus": 1, "environment": "Sandbox", "signedDate": now}
    bodies.append(json.dumps(harness.notification(chain, "SUBSCRIBED", "RESUBSCRIBE", bundle, transaction, renewal)).encode())
print(f"signed {count:,} notifications in {time.time() - started:.0f} s ({sum(map(len, bodies)) / count / 1024:.1f} KiB each)", flush=True)

port = harness.free_port()
token = uuid.uuid4().hex
key = harness.subprocess.run([binary, "keys", "generate"], capture_output=True, text=True, check=True).stdout
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1", OFFER_SIGNER_KEY_BENCHKEY01=key, OFFER_SIGNER_BUNDLE_ID=bundle,
           OFFER_SIGNER_CLIENT_AUTH="none", OFFER_SIGNER_DATABASE_URL=database_url, OFFER_SIGNER_ENVIRONMENTS="Sandbox",
           OFFER_SIGNER_TRUSTED_ROOTS=f"{work}/root.pem", OFFER_SIGNER_ADMIN_TOKENS=f"bench:{token}", OFFER_SIGNER_RATE_LIMIT_APP_STORE="none", LOG_LEVEL="warning")
server = harness.start_server(binary, env, log=open(f"{work}/server.log", "w"), timeout=600)
try:
    next_body = iter(range(count))
    lock = threading.Lock()
    statuses = {}

    def sender():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                n = next(next_body, None)
            if n is None:
                return
            connection.request("POST", "/v1/notifications/appstore", body=bodies[n], headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            with lock:
                statuses[response.status] = statuses.get(response.status, 0) + 1

    def cpu_seconds():  # the server's utime + stime, from /proc (after the ")" that ends the command name)
        fields = open(f"/proc/{server.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    cpu_before = cpu_seconds()
    client_before = sum(os.times()[:2])
    started = time.time()
    threads = [threading.Thread(target=sender) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.time() - started
    cpu = cpu_seconds() - cpu_before
    client = sum(os.times()[:2]) - client_before
    load = open("/proc/loadavg").read().split()[0]
    print(f"ingested {count:,} notifications in {seconds:.1f} s: {count / seconds:,.0f} redemptions/s with {concurrency} connections "
          f"(load {load}); statuses {statuses}; server CPU {cpu / count * 1e6:,.0f} µs a notification "
          f"(the database server's, on PostgreSQL, not included); this client's CPU {client / count * 1e6:,.0f} µs a notification", flush=True)

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.request("GET", f"/admin/outcomes?from={now - 86_400_000}&to={now + 86_400_000}&environment=Sandbox",
                       headers={"Authorization": f"Bearer {token}"})
    report = json.loads(connection.getresponse().read())
    redeemed = sum(row["redeemed"] for row in report["offers"])
    print(f"the report counts {redeemed:,} redemptions in Sandbox today ({'every one' if redeemed == count else 'NOT the number sent'})")
    if redeemed != count:
        sys.exit(1)
finally:
    server.terminate()
    server.wait()
    scratch.finish(work, failed=sys.exc_info()[0] is not None)
