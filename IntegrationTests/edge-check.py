#!/usr/bin/env python3
"""The public edge against a real `offer-signer serve` with two ports (README "Securing it"):

- a stranger is refused (401), a backend with an API key is served for any customer, an app with a login JWT
  (HS256, made here with PyJWT) is served for its own customer only (403 for another);
- a flood from one customer is throttled (429 with Retry-After) while another customer is served;
- the public port has no /admin and no /metrics; the operations port has them, and its request and refusal
  counters move under a small load;
- nothing of the credentials appears in the log.

Usage: IntegrationTests/edge-check.py PATH/TO/offer-signer      (run with the .venv's python: it needs PyJWT)
"""
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import jwt  # PyJWT

import scratch  # IntegrationTests/scratch.py: the run's folder, removed when it passes

BINARY = os.path.abspath(sys.argv[1])
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, headers=headers,
                                     data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


work = scratch.folder("offer-signer-edge-")
key = subprocess.run([BINARY, "keys", "generate"], capture_output=True, text=True, check=True).stdout
api_key, jwt_secret, admin_token = secrets.token_hex(24), secrets.token_hex(32), secrets.token_hex(24)
public, operations = free_port(), free_port()
env = dict(os.environ, OFFER_SIGNER_PORT=str(public), OFFER_SIGNER_ADMIN_PORT=str(operations),
           OFFER_SIGNER_BUNDLE_ID="com.example.app", OFFER_SIGNER_KEY_EDGETEST01=key,
           OFFER_SIGNER_DATABASE_URL=f"sqlite:{work}/store.sqlite", OFFER_SIGNER_API_KEYS=f"backend:{api_key}",
           OFFER_SIGNER_CLIENT_JWT_SECRET=jwt_secret, OFFER_SIGNER_CLIENT_JWT_ISSUER="https://login.example.com",
           OFFER_SIGNER_ADMIN_TOKENS=f"ops:{admin_token}", OFFER_SIGNER_RATE_LIMIT_CUSTOMER="5/min",
           LOG_LEVEL="trace", LOG_FORMAT="json")
env.pop("OFFER_SIGNER_CLIENT_AUTH", None)
log_path = os.path.join(work, "serve.log")
log = open(log_path, "w")
server = subprocess.Popen([BINARY, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
try:
    for _ in range(300):
        try:
            if call(public, "GET", "/readyz")[0] == 200:
                break
        except OSError:
            time.sleep(0.05)
    offer = {"productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50"}

    status, headers, _ = call(public, "POST", "/v1/offers/sign", dict(offer, applicationUsername="user-1"))
    check(status == 401 and headers.get("WWW-Authenticate", "").startswith("Bearer"), f"a stranger is refused with 401 and WWW-Authenticate ({status})")
    status, _, _ = call(public, "POST", "/v1/offers/sign", dict(offer, applicationUsername="user-1"), token="not-a-key-" + secrets.token_hex(8))
    check(status == 401, f"a wrong key is refused ({status})")
    served = [call(public, "POST", "/v1/offers/sign", dict(offer, applicationUsername=name), token=api_key)[0] for name in ("user-1", "user-2")]
    check(served == [200, 200], f"a backend with an API key is served for any customer ({served})")

    def login(customer, **extra):
        return jwt.encode(dict({"sub": customer, "iss": "https://login.example.com", "exp": int(time.time()) + 600}, **extra), jwt_secret, algorithm="HS256")
    status, _, body = call(public, "POST", "/v1/offers/sign", offer, token=login("App-User"))
    check(status == 200 and json.loads(body).get("applicationUsername") == "app-user", f"an app with a login JWT is served for its own customer ({status})")
    status, _, body = call(public, "POST", "/v1/offers/sign", dict(offer, applicationUsername="user-1"), token=login("app-user"))
    check(status == 403 and "customer_mismatch" in body, f"the same app asking for another customer gets 403 customer_mismatch ({status})")
    status, _, _ = call(public, "POST", "/v1/offers/sign", offer, token=login("app-user", exp=int(time.time()) - 3600))
    check(status == 401, f"an expired login JWT is refused ({status})")

    flood = [call(public, "POST", "/v1/offers/sign", offer, token=login("flooder")) for _ in range(8)]
    statuses = [s for s, _, _ in flood]
    check(statuses[:4].count(200) >= 4 and 429 in statuses, f"a flood from one customer is throttled ({statuses})")
    limited = next((h for s, h, _ in flood if s == 429), {})
    check(limited.get("Retry-After", "").isdigit(), f"429 carries Retry-After ({limited.get('Retry-After')})")
    status, _, _ = call(public, "POST", "/v1/offers/sign", offer, token=login("calm"))
    check(status == 200, f"another customer is served meanwhile ({status})")

    check(call(public, "GET", "/metrics")[0] == 404, "the public port has no /metrics")
    cli_env = dict(os.environ, OFFER_SIGNER_ADMIN_TOKEN=admin_token)
    nobody = subprocess.run([BINARY, "keys", "list", "--url", f"http://127.0.0.1:{free_port()}"], env=cli_env, capture_output=True, text=True)
    check(nobody.returncode == 2 and "connection refused" in nobody.stderr and "errno" not in nobody.stderr and "error set" not in nobody.stderr,
          "the CLI against a port nothing listens on says 'connection refused' and where to point it, in plain words")
    wrong_port = subprocess.run([BINARY, "keys", "list", "--url", f"http://127.0.0.1:{public}"], env=cli_env, capture_output=True, text=True)
    check(wrong_port.returncode == 1 and "serves no admin API" in wrong_port.stderr and "OFFER_SIGNER_URL" in wrong_port.stderr,
          "the CLI against the public port says the admin API is on the operations port")
    right_port = subprocess.run([BINARY, "keys", "list", "--url", f"http://127.0.0.1:{operations}"], env=cli_env, capture_output=True, text=True)
    check(right_port.returncode == 0 and right_port.stdout.count("\n") > 3 and json.loads(right_port.stdout)["keys"],
          "keys list prints indented JSON people can read")
    check(call(public, "GET", "/admin/keys", token=admin_token)[0] == 404, "the public port has no /admin")
    check(call(operations, "GET", "/admin/keys", token=admin_token)[0] == 200, "the operations port serves /admin")
    check(call(operations, "POST", "/v1/offers/sign", offer, token=api_key)[0] == 404, "the operations port does not sign")

    def counter(text, needle):
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("hb_requests") and needle in line)
    before = call(operations, "GET", "/metrics")[2]
    for index in range(40):
        call(public, "POST", "/v1/offers/sign", dict(offer, applicationUsername=f"load-{index}"), token=api_key)
        call(public, "POST", "/v1/offers/sign", dict(offer, applicationUsername=f"load-{index}"))
    after = call(operations, "GET", "/metrics")[2]
    ok_moved = counter(after, '"200"') - counter(before, '"200"')
    refused_moved = counter(after, '"401"') - counter(before, '"401"')
    check(ok_moved >= 40 and refused_moved >= 40, f"/metrics on the operations port counts the load (200: +{ok_moved:.0f}, 401: +{refused_moved:.0f})")
    check('error_type="200"' not in after and 'error_type="2' not in after, "/metrics has no error series for a success status")

    def series(text, name, needle):
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name) and needle in line and "/v1/offers/sign" in line)
    for status in ['"200"', '"401"']:
        counted, timed = series(after, "hb_requests", status), series(after, "http_server_request_duration_count", status)
        check(counted > 0 and counted == timed, f"every {status} answer of the sign route is timed as well as counted ({counted:.0f} counted, {timed:.0f} timed)")
    errors = series(after, "hb_request_errors", 'error_type="401"')
    check(errors == series(after, "hb_requests", '"401"'), f"every 401 is an error in hb_request_errors ({errors:.0f})")
finally:
    server.terminate()
    server.wait(timeout=15)
    log.close()

text = open(log_path).read()
check('"offer-signer stopped' in text or "offer-signer stopped" in text, "a graceful stop (SIGTERM) is logged")
check(" starting" in text, "the start is logged with the version")
for secret, what in [(api_key, "the API key"), (jwt_secret, "the JWT secret"), (admin_token, "the admin token"), ("PRIVATE KEY", "key material")]:
    check(secret not in text, f"the log holds no trace of {what}")
check('"requestId"' in text, "log lines carry request IDs (JSON)")

print(f"\n{len(failures)} failure(s)" if failures else "\nall edge checks passed")
scratch.finish(work, failed=bool(failures))
sys.exit(1 if failures else 0)
