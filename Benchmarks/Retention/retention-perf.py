"""Apple's Retention Messaging performance test, played locally: N signed real-time requests at a given
concurrency against a running `offer-signer serve`, reporting p50/p90/p95/p99 and the success rate, as
Apple's `Get Performance Test Results` does (docs/retention.md). Apple requires answers within 700 ms.

    Benchmarks/Retention/retention-perf.sh [REQUESTS] [CONCURRENCY] [DATABASE_URL] [MODE]

The service gets a policy with retention entries, trusts a test App Store chain made here, and knows 200
customers from signed notifications (half with auto-renew off). MODE `apple` (the default) plays Apple's test:
every request is for one original transaction (a customer with auto-renew off, so every answer is a signed
promotional offer, stored under its requestIdentifier); MODE `mix` spreads the requests over the 200
customers and a tenth of strangers. A fallback answered because the deadline passed is not a success (read
from /metrics), nor is a 429: the service runs with its default rate limits.
"""
import asyncio
import http.client
import json
import os
import random
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "IntegrationTests"))
import scratch  # noqa: E402  (IntegrationTests/scratch.py: the run's folder, removed when it passes)
import harness  # noqa: E402

binary = os.path.abspath(sys.argv[1])
requests_total = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
concurrency = int(sys.argv[3]) if len(sys.argv) > 3 else 32
database_url = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
mode = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else "apple"
bundle, app_apple_id, product = "com.example.app", 1234567890, "com.example.monthly"

work = scratch.folder("offer-signer-retention-perf-")
chain = harness.AppStoreTestChain()
open(f"{work}/root.pem", "w").write(chain.root_pem())
open(f"{work}/policy.yaml", "w").write(f"""
apps:
  - bundleIdentifier: {bundle}
    issuerIdentifier: 57246542-96fe-1a63-e053-0824d011072a
    appAppleId: {app_apple_id}
    products:
      - productIdentifier: {product}
        subscriptionGroupIdentifier: "21000001"
        offers:
          - offerIdentifier: retention_30
            rules: [auto-renew-off]
        retention:
          - promotionalOffer: retention_30
            messageIdentifier: 9f2b8d1e-3c4a-4b5d-8e6f-7a8b9c0d1e2f
          - alternateProduct: com.example.annual
            messageIdentifier: 1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d
            rules: [active-subscriber]
          - messageIdentifier: 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
      - productIdentifier: com.example.annual
        subscriptionGroupIdentifier: "21000001"
""")
key = harness.subprocess.run([binary, "keys", "generate"], capture_output=True, text=True, check=True).stdout
port = harness.free_port()
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1", OFFER_SIGNER_KEY_PERFKEY001=key,
           OFFER_SIGNER_POLICY=f"{work}/policy.yaml", OFFER_SIGNER_DATABASE_URL=database_url or f"sqlite:{work}/store.sqlite",
           OFFER_SIGNER_ENVIRONMENTS="Sandbox", OFFER_SIGNER_TRUSTED_ROOTS=f"{work}/root.pem", OFFER_SIGNER_API_KEYS="perf:perf-client-key-0123456789abcdef",
           LOG_LEVEL="warning")
for variable in ("OFFER_SIGNER_CLIENT_AUTH", "OFFER_SIGNER_BUNDLE_ID"):
    env.pop(variable, None)
log = open(f"{work}/server.log", "w")
server = harness.start_server(binary, env, log=log)


def post(connection, body, path="/v1/retention/appstore"):
    connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read()


try:
    # 200 customers known from notifications: even ones with auto-renew off, odd ones active.
    now = int(time.time() * 1000)
    customers = []
    seed = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for index in range(200):
        original = str(3_000_000_000_000_000 + random.randrange(10**15))
        transaction = {"originalTransactionId": original, "transactionId": original, "bundleId": bundle, "productId": product,
                       "subscriptionGroupIdentifier": "21000001", "purchaseDate": now - 40 * 86_400_000, "expiresDate": now + 20 * 86_400_000,
                       "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "environment": "Sandbox", "signedDate": now,
                       "appAccountToken": str(uuid.uuid4())}
        renewal = {"originalTransactionId": original, "autoRenewProductId": product, "productId": product, "environment": "Sandbox",
                   "autoRenewStatus": 0 if index % 2 == 0 else 1, "signedDate": now}
        kind = ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED") if index % 2 == 0 else ("SUBSCRIBED", "INITIAL_BUY")
        body = harness.notification(chain, kind[0], kind[1], bundle, transaction, renewal)
        status, text = post(seed, body, "/v1/notifications/appstore")
        while status == 429:  # the notification endpoint's default limit (100/s per address): wait it out
            time.sleep(1)
            status, text = post(seed, body, "/v1/notifications/appstore")
        if status != 200:
            raise SystemExit(f"seeding a customer failed: {status} {text[:300]!r}")
        customers.append(original)
    seed.close()

    bodies = []
    for _ in range(requests_total):
        if mode == "apple":
            original = customers[0]  # auto-renew off: every answer is signed
        else:
            original = random.choice(customers) if random.random() >= 0.1 else str(4_000_000_000_000_000 + random.randrange(10**15))
        bodies.append(harness.realtime_request(chain, original, product, app_apple_id, str(uuid.uuid4())))

    # The requests, serialized before the clock starts. The client is one thread running 32 connections
    # (asyncio): its own cost per request stays small beside the server's on a shared machine, and a response is
    # timed when it is read, not when one of 32 threads next gets Python's lock.
    wire = [(f"POST /v1/retention/appstore HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
             f"Content-Length: {len(encoded)}\r\n\r\n").encode() + encoded
            for encoded in (json.dumps(body).encode() for body in bodies)]
    latencies, outcomes = [], {}
    queue = iter(range(requests_total))

    async def exchange(reader, writer, request):
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
        return status, await reader.readexactly(length)

    async def worker():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for index in queue:
            started = time.perf_counter()
            try:
                status, text = await asyncio.wait_for(exchange(reader, writer, wire[index]), timeout=5)
                answer = json.loads(text) if status == 200 else {}
                outcome = next(iter(answer)) if status == 200 and len(answer) == 1 else f"HTTP {status}"
            except Exception as error:  # a timeout or a dropped connection is a failure, as for Apple
                outcome = type(error).__name__
                writer.close()
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            latencies.append((time.perf_counter() - started) * 1000)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        writer.close()

    async def run_all():
        await asyncio.gather(*(worker() for _ in range(concurrency)))

    def server_cpu_seconds():  # user + system time of the server process, from /proc (Linux)
        fields = open(f"/proc/{server.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    server_cpu_before, client_cpu_before = server_cpu_seconds(), time.process_time()
    started = time.perf_counter()
    asyncio.run(run_all())
    duration = time.perf_counter() - started
    server_cpu, client_cpu = server_cpu_seconds() - server_cpu_before, time.process_time() - client_cpu_before
    metrics = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    metrics.request("GET", "/metrics")
    late = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.getresponse().read().decode().splitlines()
               if line.startswith("offer_signer_retention_answers_total") and 'answer="fallback_after_deadline"' in line)
finally:
    server.terminate()
    server.wait(timeout=10)

latencies.sort()


def percentile(p):
    return latencies[min(len(latencies) - 1, int(round(p / 100 * len(latencies) + 0.5)) - 1)]


succeeded = sum(count for outcome, count in outcomes.items() if outcome in ("message", "alternateProduct", "promotionalOffer")) - int(late)
within = sum(1 for latency in latencies if latency <= 700)
print(f"{requests_total} requests ({mode}), concurrency {concurrency}, {duration:.1f} s ({requests_total / duration:.0f}/s), store {'PostgreSQL' if database_url else 'SQLite'}")
print(f"CPU per request: server {server_cpu / requests_total * 1e6:.0f} µs, this client {client_cpu / requests_total * 1e6:.0f} µs "
      f"(server busy {100 * server_cpu / duration:.0f} % of one core, client {100 * client_cpu / duration:.0f} %)")
print(f"p50 {percentile(50):.1f} ms  p90 {percentile(90):.1f} ms  p95 {percentile(95):.1f} ms  p99 {percentile(99):.1f} ms  max {latencies[-1]:.1f} ms")
print(f"success rate {100 * succeeded / requests_total:.2f} % (200 with exactly one answer, not a fallback after the deadline: {int(late)}), within 700 ms {100 * within / requests_total:.2f} %")
print("answers: " + ", ".join(f"{outcome} {count}" for outcome, count in sorted(outcomes.items())))
scratch.finish(work, failed=not (succeeded == requests_total and within == requests_total))
sys.exit(0 if succeeded == requests_total and within == requests_total else 1)
