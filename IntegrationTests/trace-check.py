#!/usr/bin/env python3
"""The server's OpenTelemetry traces as a collector receives them (docs/observability.md, "Traces"):

1. an OTLP/HTTP receiver on loopback (POST /v1/traces, protobuf) and a fake of Apple's App Store Server API that
   records the W3C `traceparent` each request carries;
2. `serve` on a SQLite file, with a policy (an offer without rules, a capped offer, a win-back offer the App Store
   is asked about, a retention offer and message), an API key, a trusted test App Store chain, and
   OTEL_EXPORTER_OTLP_ENDPOINT pointing at the receiver (OTEL_BSP_SCHEDULE_DELAY short, so spans come at once);
3. a legacy sign that carries a caller's `traceparent`, a capped sign (the customer's transaction on the store), a
   sign the App Store Server API is asked about, a notification and a real-time retention request;
4. the spans, decoded with OpenTelemetry's own protobuf definitions (PyPI `opentelemetry-proto`): each request is
   one trace whose root is the server span `METHOD route` (the caller's trace continued, its span the parent), the
   pipeline's spans are where they belong (names and parent links), every child starts and ends within its
   parent, sequential children's durations add up to no more than their parent's, the App Store call sent a
   `traceparent` naming its own span, and no attribute, event or span name holds the API key, the signing key,
   the token sent to Apple, or a customer's identifier (username, appAccountToken, transaction identifiers).

Usage: IntegrationTests/trace-check.py PATH/TO/offer-signer      (exit status 0 when every check passes)

Needs the virtualenv of scripts/test.sh (opentelemetry-proto, cryptography, PyJWT: IntegrationTests/requirements-*.txt).
Its folder under the temporary directory is removed when it passes, kept and named when it fails.
"""
import base64
import gzip
import http.client
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (server start-up and an App Store test chain)
import scratch  # noqa: E402  (the run's folder, removed when it passes)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: E402
from opentelemetry.proto.trace.v1 import trace_pb2  # noqa: E402

binary = os.path.abspath(sys.argv[1])
work = scratch.folder("offer-signer-traces-")
failures = []
signal.signal(signal.SIGALRM, lambda signum, frame: (_ for _ in ()).throw(SystemExit("the check took longer than 180 s")))
signal.alarm(180)

API_KEY = "trace-check-client-key-0123456789abcdef"
ISSUER = "11111111-2222-3333-4444-555555555555"
APP_APPLE_ID = 1234567890
# Customers' identifiers: none of them may appear in a span.
LEGACY_CUSTOMER = "trace-legacy-customer-4b1d"
CAPPED_CUSTOMER = "trace-capped-customer-93fe"
LOOKUP_CUSTOMER = "trace-lookup-customer-77c2"
LOOKUP_TRANSACTION = "2000000555000004"
ORIGINAL = "2000000987654321"
ACCOUNT_TOKEN = str(uuid.uuid4())


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)
    return condition


# --- The OTLP/HTTP receiver and the fake Apple -----------------------------------------------------------------

received = []            # (resource attributes, span) of every span exported
receiver_errors = []
apple_traceparents = []  # the traceparent header of each request the fake Apple received
apple_tokens = []        # the bearer tokens sent to Apple (secrets: never in a span)
lock = threading.Lock()


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        status = 200
        if self.path != "/v1/traces" or "protobuf" not in (self.headers.get("Content-Type") or ""):
            receiver_errors.append(f"{self.path} {self.headers.get('Content-Type')}")
            status = 404
        else:
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            with lock:
                for resource_spans in request.resource_spans:
                    resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            received.append((resource, span))
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


class FakeAppStore(http.server.BaseHTTPRequestHandler):
    """Apple's App Store Server API as far as this check needs: every lookup answers 200 with no subscription."""
    def do_GET(self):
        with lock:
            apple_traceparents.append(self.headers.get("traceparent"))
            apple_tokens.append((self.headers.get("Authorization") or "").removeprefix("Bearer "))
        path = self.path.split("?")[0]
        if "/subscriptions/" in path:
            body = {"environment": "Sandbox", "bundleId": "com.example.app", "appAppleId": APP_APPLE_ID, "data": []}
        else:
            body = {"revision": "r1", "bundleId": "com.example.app", "appAppleId": APP_APPLE_ID, "environment": "Sandbox",
                    "hasMore": False, "signedTransactions": []}
        payload = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def value(any_value):
    """An OTLP AnyValue as Python."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind) if kind else None


def attributes(span):
    return {a.key: value(a.value) for a in span.attributes}


def request(port, method, path, body, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=json.dumps(body),
                           headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}", **(headers or {})})
        response = connection.getresponse()
        payload = response.read()
        try:
            return response.status, json.loads(payload)
        except ValueError:
            return response.status, payload.decode(errors="replace")
    finally:
        connection.close()


# --- The server ---------------------------------------------------------------------------------------------------

server = None
try:
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    apple = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeAppStore)
    threading.Thread(target=apple.serve_forever, daemon=True).start()

    chain = harness.AppStoreTestChain()
    with open(os.path.join(work, "root.pem"), "w") as f:
        f.write(chain.root_pem())
    key_pem = subprocess.run([binary, "keys", "generate"], capture_output=True, text=True, check=True, timeout=60).stdout
    with open(os.path.join(work, "policy.yaml"), "w") as f:
        f.write(f"""apps:
  - bundleIdentifier: com.example.app
    issuerIdentifier: {ISSUER}
    appAppleId: {APP_APPLE_ID}
    products:
      - productIdentifier: com.example.monthly
        subscriptionGroupIdentifier: "21000001"
        offers:
          - offerIdentifier: anyone_10
          - offerIdentifier: capped_20
            rules: [{{ cap: {{ count: 1, days: 30 }} }}]
          - offerIdentifier: winback_50
            rules: [{{ lapsed: {{ minDays: 1, maxDays: 365 }} }}]
          - offerIdentifier: retention_30
            rules: [auto-renew-off]
        retention:
          - promotionalOffer: retention_30
            messageIdentifier: 9f2b8d1e-3c4a-4b5d-8e6f-7a8b9c0d1e2f
          - messageIdentifier: 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
""")
    port = harness.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFER_SIGNER_", "OTEL_"))}
    env.update(
        OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1", OFFER_SIGNER_KEY_TRACE001=key_pem,
        OFFER_SIGNER_POLICY=os.path.join(work, "policy.yaml"), OFFER_SIGNER_DATABASE_URL=f"sqlite:{work}/store.sqlite",
        OFFER_SIGNER_ENVIRONMENTS="Sandbox", OFFER_SIGNER_TRUSTED_ROOTS=os.path.join(work, "root.pem"),
        OFFER_SIGNER_API_KEYS=f"trace-check:{API_KEY}", OFFER_SIGNER_ISSUER_ID=ISSUER,
        OFFER_SIGNER_APP_STORE_API_KEY_ID="TRACE001", OFFER_SIGNER_APP_STORE_API_URL=f"http://127.0.0.1:{apple.server_address[1]}",
        OFFER_SIGNER_RETENTION_DEADLINE="5000", LOG_FORMAT="json",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{receiver.server_address[1]}", OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_SERVICE_NAME="offer-signer-trace-check")
    log = open(os.path.join(work, "server.log"), "wb")
    server = harness.start_server(binary, env, log=log, timeout=90)
    check(True, f"serve with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{receiver.server_address[1]} is ready")

    # --- The requests -------------------------------------------------------------------------------------------
    caller_trace, caller_span = os.urandom(16).hex(), os.urandom(8).hex()
    status, _ = request(port, "POST", "/v1/offers/sign", {
        "productIdentifier": "com.example.monthly", "offerIdentifier": "anyone_10", "applicationUsername": LEGACY_CUSTOMER,
    }, {"traceparent": f"00-{caller_trace}-{caller_span}-01"})
    check(status == 200, f"a legacy sign with a caller's traceparent answers 200 ({status})")
    capped = {"productIdentifier": "com.example.monthly", "offerIdentifier": "capped_20", "applicationUsername": CAPPED_CUSTOMER}
    first, second = request(port, "POST", "/v1/offers/sign", capped)[0], request(port, "POST", "/v1/offers/sign", capped)[0]
    check((first, second) == (200, 403), f"a capped sign answers 200, the second 403 ({first}, {second})")
    status, _ = request(port, "POST", "/v1/offers/sign", {
        "productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50", "applicationUsername": LOOKUP_CUSTOMER,
        "transactionId": LOOKUP_TRANSACTION})
    check(status == 403 and apple_traceparents, f"a sign the App Store is asked about answers 403 not lapsed ({status}), "
                                                f"after {len(apple_traceparents)} request(s) to the fake Apple")
    now = int(time.time() * 1000)
    transaction = {"originalTransactionId": ORIGINAL, "transactionId": ORIGINAL, "bundleId": "com.example.app",
                   "productId": "com.example.monthly", "subscriptionGroupIdentifier": "21000001", "purchaseDate": now - 86_400_000,
                   "expiresDate": now + 29 * 86_400_000, "type": "Auto-Renewable Subscription", "environment": "Sandbox",
                   "appAccountToken": ACCOUNT_TOKEN, "signedDate": now}
    renewal = {"originalTransactionId": ORIGINAL, "productId": "com.example.monthly", "autoRenewProductId": "com.example.monthly",
               "autoRenewStatus": 0, "environment": "Sandbox", "signedDate": now}
    notification = harness.notification(chain, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", "com.example.app", transaction, renewal)
    status, _ = request(port, "POST", "/v1/notifications/appstore", notification)
    check(status == 200, f"a notification (auto-renew off) answers 200 ({status})")
    retention = harness.realtime_request(chain, ORIGINAL, "com.example.monthly", APP_APPLE_ID, str(uuid.uuid4()))
    status, answer = request(port, "POST", "/v1/retention/appstore", retention)
    check(status == 200 and "promotionalOffer" in (answer if isinstance(answer, dict) else {}),
          f"a retention request answers the promotional offer ({status})")

    # --- The spans ----------------------------------------------------------------------------------------------
    routes = ["POST /v1/offers/sign", "POST /v1/notifications/appstore", "POST /v1/retention/appstore"]

    def server_spans():
        with lock:
            return [s for _, s in received if s.kind == trace_pb2.Span.SPAN_KIND_SERVER and s.name in routes]
    deadline = time.time() + 60
    while time.time() < deadline and len(server_spans()) < 6:
        time.sleep(0.2)
    time.sleep(0.5)  # a child exported in the batch after its parent's
    with lock:
        spans = [s for _, s in received]
        resources = [r for r, _ in received]
    check(not receiver_errors, f"every export is a protobuf POST to /v1/traces ({receiver_errors or 'yes'})")
    check(len(server_spans()) == 6, f"six server spans arrived, one per request ({len(server_spans())} of {len(spans)} spans)")
    check(all(r.get("service.name") == "offer-signer-trace-check" for r in resources),
          "the resource's service.name is OTEL_SERVICE_NAME's")
    by_id = {s.span_id: s for s in spans}
    children = {}
    for s in spans:
        children.setdefault(s.parent_span_id, []).append(s)

    def subtree(root):
        found, stack = [], [root]
        while stack:
            node = stack.pop()
            found.append(node)
            stack.extend(children.get(node.span_id, []))
        return found

    def names(root):
        return sorted(s.name for s in subtree(root) if s is not root)

    def child(parent, name):
        return next((s for s in children.get(parent.span_id, []) if s.name == name), None)

    def describe(root):
        return ", ".join(f"{s.name}<{by_id[s.parent_span_id].name if s.parent_span_id in by_id else '-'}" for s in subtree(root)[1:])

    def trace_of(route, predicate=lambda span: True):
        return [s for s in server_spans() if s.name == route and predicate(s)]

    # Each request one trace: every span of a server span's trace is in its subtree.
    for root in server_spans():
        same_trace = [s for s in spans if s.trace_id == root.trace_id]
        check(len(same_trace) == len(subtree(root)) and all(s.trace_id == root.trace_id for s in subtree(root)),
              f"{root.name} ({attributes(root).get('http.response.status_code')}): one trace, {len(same_trace)} spans, "
              f"all under the server span [{describe(root)}]")

    legacy = trace_of("POST /v1/offers/sign", lambda s: s.trace_id.hex() == caller_trace)
    if check(len(legacy) == 1, "the legacy sign continues the caller's trace (its trace ID)"):
        root = legacy[0]
        check(root.parent_span_id.hex() == caller_span, "its server span's parent is the caller's span")
        wanted = ["offer.decide", "offer.sign", "offer.signature_log.batch_wait"]
        check(all(child(root, n) for n in wanted), f"legacy sign: {', '.join(wanted)} under the server span [{describe(root)}]")
        signed = child(root, "offer.sign")
        if signed:
            a = attributes(signed)
            check(a.get("offer_signer.key_id") == "TRACE001" and a.get("offer_signer.format") == "legacy",
                  f"offer.sign names the key's identifier and the format ({a})")
        decided = child(root, "offer.decide")
        if decided:
            a = attributes(decided)
            check(a.get("offer_signer.offer") == "anyone_10" and a.get("offer_signer.eligible") is True,
                  f"offer.decide names the offer and the answer ({a})")

    capped_roots = trace_of("POST /v1/offers/sign", lambda s: any(
        attributes(d).get("offer_signer.offer") == "capped_20" for d in subtree(s) if d.name == "offer.decide"))
    check(len(capped_roots) == 2, f"two capped signs, each its own trace ({len(capped_roots)})")
    for root in capped_roots:
        status = attributes(root).get("http.response.status_code")
        # The customer's write transaction, or (a SQLite file this server holds) its in-process lock.
        transaction_span = child(root, "offer.customer_transaction") or child(root, "offer.customer_lock")
        if check(transaction_span is not None, f"capped sign ({status}): offer.customer_transaction or offer.customer_lock "
                                               f"under the server span [{describe(root)}]"):
            decided = child(transaction_span, "offer.decide")
            check(decided is not None and (status != 200 or child(transaction_span, "offer.sign") is not None),
                  f"capped sign ({status}): the decision{' and the signature' if status == 200 else ''} inside {transaction_span.name}")
            if status == 403 and decided is not None:
                a = attributes(decided)
                check(a.get("offer_signer.eligible") is False and any("cap" in r for r in a.get("offer_signer.reasons", [])),
                      f"the refused capped sign's decision says no, by the cap ({a})")
                check(transaction_span.status.code == trace_pb2.Status.STATUS_CODE_ERROR
                      and attributes(transaction_span).get("offer_signer.error") == "not_eligible",
                      "the refusal marks the transaction span failed with its code, not_eligible")

    lookups = [s for s in spans if s.name == "app_store_api.request"]
    if check(lookups, f"app_store_api.request spans ({len(lookups)})"):
        parent = by_id.get(lookups[0].parent_span_id)
        check(parent is not None and parent.name == "offer.app_store_facts"
              and by_id.get(parent.parent_span_id) is not None and by_id[parent.parent_span_id].name == "POST /v1/offers/sign",
              "app_store_api.request is under offer.app_store_facts, under the sign's server span")
        check(all(s.kind == trace_pb2.Span.SPAN_KIND_CLIENT for s in lookups), "app_store_api.request is a client span")
        sent = {(p.split("-")[1], p.split("-")[2]) for p in apple_traceparents if p and len(p.split("-")) == 4}
        check(sent == {(s.trace_id.hex(), s.span_id.hex()) for s in lookups},
              f"each request to Apple carried a traceparent naming its own span ({len(sent)} of {len(apple_traceparents)})")
        a = attributes(lookups[0])
        check(a.get("http.response.status_code") == 200 and "app_store_api.endpoint" in a, f"its attributes ({a})")

    notifications = trace_of("POST /v1/notifications/appstore")
    if check(len(notifications) == 1, "one notification trace"):
        root = notifications[0]
        check(child(root, "app_store.verify") is not None and child(root, "notification.apply") is not None,
              f"notification: app_store.verify and notification.apply under the server span [{describe(root)}]")

    retentions = trace_of("POST /v1/retention/appstore")
    if check(len(retentions) == 1, "one retention trace"):
        root = retentions[0]
        deadline_span = child(root, "retention.deadline")
        check(child(root, "app_store.verify") is not None and deadline_span is not None,
              f"retention: app_store.verify and retention.deadline under the server span [{describe(root)}]")
        if deadline_span is not None:
            a = attributes(deadline_span)
            check(a.get("offer_signer.retention.deadline_ms") == 5000 and a.get("offer_signer.retention.in_time") is True,
                  f"retention.deadline says the deadline and that the answer was in time ({a})")
            inner = [s.name for s in subtree(deadline_span)]
            check({"offer.customer_transaction", "offer.decide", "offer.sign"} <= set(inner),
                  f"the decision and the signature happen within the deadline's span ({inner})")

    # Durations: every child within its parent; sequential children no longer than their parent together.
    outside, over = [], []
    for s in spans:
        parent = by_id.get(s.parent_span_id)
        if parent is None:
            continue
        if s.start_time_unix_nano < parent.start_time_unix_nano or s.end_time_unix_nano > parent.end_time_unix_nano:
            outside.append(f"{s.name} in {parent.name}")
    for parent in spans:
        kids = children.get(parent.span_id, [])
        if parent.name == "offer.app_store_facts" or not kids:
            continue  # its lookups (statuses, history) may run side by side
        total = sum(k.end_time_unix_nano - k.start_time_unix_nano for k in kids)
        if total > parent.end_time_unix_nano - parent.start_time_unix_nano:
            over.append(f"{parent.name}: children {total / 1e6:.2f} ms > {(parent.end_time_unix_nano - parent.start_time_unix_nano) / 1e6:.2f} ms")
    check(not outside, f"every child span starts and ends within its parent ({outside or len(spans)} spans)")
    check(not over, f"sequential children's durations add up to no more than their parent's ({over or 'yes'})")
    check(all(s.end_time_unix_nano >= s.start_time_unix_nano > 0 for s in spans), "every span has a start and an end after it")

    # No secret or customer identifier anywhere in a span.
    key_body = "".join(line for line in key_pem.splitlines() if line and not line.startswith("-----"))
    secrets = {"the API key": API_KEY, "the signing key": key_body[20:60], "an App Store bearer token": None,
               "a customer's username": None, "the appAccountToken": ACCOUNT_TOKEN, "an original transaction": ORIGINAL,
               "a looked-up transaction": LOOKUP_TRANSACTION}
    needles = [(what, s) for what, s in secrets.items() if s]
    needles += [("an App Store bearer token", t) for t in set(apple_tokens) if t]
    needles += [("a customer's username", u) for u in (LEGACY_CUSTOMER, CAPPED_CUSTOMER, LOOKUP_CUSTOMER)]
    leaks = []
    for resource, s in received:
        texts = [s.name, json.dumps(attributes(s)), json.dumps(resource)]
        texts += [e.name + json.dumps({a.key: value(a.value) for a in e.attributes}) for e in s.events]
        for what, needle in needles:
            if any(needle in text for text in texts):
                leaks.append(f"{what} in {s.name}")
    check(not leaks, f"no key, token or customer identifier in any span name, attribute or event ({leaks or len(received)} spans)")
except Exception as error:  # a check that cannot go on
    failures.append(f"{type(error).__name__}: {error}")
    print(f"FAIL {type(error).__name__}: {error}")
finally:
    if server is not None:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()

print(f"{'FAILED' if failures else 'passed'}: IntegrationTests/trace-check.py ({len(failures)} failure(s))")
scratch.finish(work, failed=bool(failures))
sys.exit(1 if failures else 0)
