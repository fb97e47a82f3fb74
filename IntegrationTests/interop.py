#!/usr/bin/env python3
"""Interoperability checks: OfferSigner's signatures against implementations that are not ours.

- Apple's own Python library (app-store-server-library, PromotionalOfferSignatureCreator) builds the payload
  for the same fields, nonce and timestamp; `cryptography` verifies our signature over *Apple's* bytes.
- Apple's library signs; `offer-signer verify` must accept its bundle, and refuse it tampered.
- A SEC1 copy of the key (converted by `cryptography`) signs the same as the PKCS#8 one.
- StoreKit 2 JWS: PyJWT verifies ours (header, claims, ES256); `offer-signer verify` accepts the JWS that
  Apple's PromotionalOfferV2SignatureCreator and IntroductoryOfferEligibilitySignatureCreator make.
- A live `offer-signer serve --demo`: a bundle fetched over HTTP verifies with the `openssl` command line,
  using the public key the service publishes at GET /v1/keys; its introductory-offer eligibility JWS
  verifies under PyJWT.

Usage: IntegrationTests/interop.py PATH/TO/offer-signer   (exit status 0 when every check passes)
"""
import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator
from appstoreserverlibrary.jws_signature_creator import IntroductoryOfferEligibilitySignatureCreator, PromotionalOfferV2SignatureCreator
import jwt  # PyJWT, a dependency of Apple's library

import scratch  # IntegrationTests/scratch.py: the run's folder, removed when it passes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (server start-up and an App Store test chain, shared by the live checks)

BINARY = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else ".build/debug/offer-signer"
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def run(*args, stdin=None, env=None):
    return subprocess.run([BINARY, *args], input=stdin, capture_output=True, text=True, env=env)


class PayloadRecorder:
    """Stands in for the key inside Apple's PromotionalOfferSignatureCreator and records the bytes it signs."""

    def __init__(self, key):
        self.key, self.payload = key, None

    def sign(self, data, algorithm):
        self.payload = data
        return self.key.sign(data, algorithm)


def apple_payload(pem, key_id, bundle_id, product, offer, username, nonce, timestamp):
    creator = PromotionalOfferSignatureCreator(pem, key_id, bundle_id)
    recorder = PayloadRecorder(creator._signing_key)
    creator._signing_key = recorder
    creator.create_signature(product, offer, username, uuid.UUID(nonce), timestamp)
    return recorder.payload


def verifies(public_key, signature_b64, payload):
    try:
        public_key.verify(base64.b64decode(signature_b64), payload, ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


work = scratch.folder("offer-signer-interop-")
key_id = "INTEROP001"
key_path = os.path.join(work, f"SubscriptionKey_{key_id}.p8")
generated = run("keys", "generate", "--output", key_path)
check(generated.returncode == 0 and os.stat(key_path).st_mode & 0o077 == 0, "keys generate writes a PKCS#8 key readable by its owner only")
pem = open(key_path, "rb").read()
again = run("keys", "generate", "--output", key_path)
check(again.returncode != 0 and "already exists" in again.stderr and open(key_path, "rb").read() == pem,
      "keys generate refuses an existing path (non-zero exit, a message) and leaves the key as it was")
link_path = os.path.join(work, "link.p8")
os.symlink(os.path.join(work, "absent-target.p8"), link_path)
through_link = run("keys", "generate", "--output", link_path)
check(through_link.returncode != 0 and not os.path.exists(os.path.join(work, "absent-target.p8")),
      "keys generate refuses a path that is a link, even a dangling one")
private_key = serialization.load_pem_private_key(pem, password=None)
check(isinstance(private_key.curve, ec.SECP256R1), "cryptography reads the generated key as P-256")
public_key = private_key.public_key()

inspected = json.loads(run("keys", "inspect", key_path).stdout)
spki = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
digest = hashes.Hash(hashes.SHA256())
digest.update(spki)
check(inspected["fingerprint"] == digest.finalize().hex(), "keys inspect: fingerprint is SHA-256 of the SPKI DER")
check(inspected["keyIdentifier"] == key_id, "keys inspect: key identifier read from SubscriptionKey_<KEYID>.p8")

# 1. Our signatures over Apple's payload bytes.
for username in ["user-0001", "8C1D6A9E-0B2F-4C3D-9E8F-1A2B3C4D5E6F", "ÅSA@Example.COM"]:
    for product, offer in [("com.example.monthly", "winback_50"), ("com.example.yearly", "retention.30")]:
        result = run("sign", "--bundle-id", "com.example.app", "--product-id", product, "--offer-id", offer,
                     "--username", username, "--key-file", key_path)
        bundle = json.loads(result.stdout)
        payload = apple_payload(pem, key_id, "com.example.app", product, offer, username, bundle["nonce"], bundle["timestamp"])
        check(verifies(public_key, bundle["signature"], payload), f"cryptography verifies our signature over Apple's payload ({username}, {offer})")
        check(bundle["applicationUsername"] == username.lower(), f"the bundle carries the lower-cased username ({username})")
        verified = run("verify", "--key-file", key_path, stdin=result.stdout)
        shown = json.loads(verified.stdout)["payload"]
        check(shown.replace("\\u2063", "\u2063").encode() == payload, f"verify shows Apple's exact payload ({username}, {offer})")

# 2. Apple's signatures verified by us.
creator = PromotionalOfferSignatureCreator(pem, key_id, "com.example.app")
nonce, timestamp = uuid.uuid4(), int(time.time() * 1000)
apple_signature = creator.create_signature("com.example.monthly", "winback_50", "User-0001", nonce, timestamp)
apple_bundle = {"bundleIdentifier": "com.example.app", "productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50",
                "applicationUsername": "user-0001", "keyIdentifier": key_id, "nonce": str(nonce), "timestamp": timestamp,
                "signature": apple_signature, "format": "legacy"}
check(run("verify", "--key-file", key_path, stdin=json.dumps(apple_bundle)).returncode == 0, "offer-signer verify accepts a bundle signed by Apple's library")
public_path = os.path.join(work, "public.pem")
open(public_path, "w").write(inspected["publicKeyPEM"])
check(run("verify", "--public-key-file", public_path, stdin=json.dumps(apple_bundle)).returncode == 0, "offer-signer verify --public-key-file accepts it with the public key only")
# Offline, the key file says nothing of the key's state on a service: no keyState, and a warning that says so.
offline = json.loads(run("verify", "--key-file", key_path, stdin=json.dumps(apple_bundle)).stdout)
check(offline.get("keyState") is None and any("does not know the key's state" in w for w in offline["warnings"]),
      f"offline verify claims no key state and says it cannot know it ({offline.get('keyState')})")
unknown = json.loads(run("verify", "--key-file", key_path, stdin=json.dumps(dict(apple_bundle, keyIdentifier="NOTMYKEY01"))).stdout)
check(unknown["reason"] == "unknown_key" and "among the keys given" in unknown["message"] and "this service" not in unknown["message"],
      f"offline verify of another key says it is not among the keys given ({unknown['message']})")
tampered = dict(apple_bundle, offerIdentifier="winback_60")
check(run("verify", "--key-file", key_path, stdin=json.dumps(tampered)).returncode == 1, "offer-signer verify refuses it tampered (exit 1)")
# A key named twice: refused as the HTTP API refuses it, never one copy read (the first would verify).
doubled = json.dumps(apple_bundle)[:-1] + ', "applicationUsername": "someone-else"}'
twice = run("verify", "--key-file", key_path, stdin=doubled)
check(twice.returncode == 64 and "appears twice" in twice.stderr, f"offer-signer verify refuses a bundle naming a key twice (exit {twice.returncode})")

# 3. SEC1 form of the same key.
sec1_path = os.path.join(work, "sec1.pem")
open(sec1_path, "wb").write(private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
sec1 = run("sign", "--bundle-id", "com.example.app", "--product-id", "p", "--offer-id", "o", "--username", "u", "--key-file", sec1_path, "--key-id", key_id)
bundle = json.loads(sec1.stdout)
payload = apple_payload(pem, key_id, "com.example.app", "p", "o", "u", bundle["nonce"], bundle["timestamp"])
check(verifies(public_key, bundle["signature"], payload), "a SEC1 key signs for the same public key")

# 4. StoreKit 2 JWS, both ways.
issuer = "57246542-96fe-1a63-e053-0824d011072a"
signed = run("sign", "--format", "jws", "--issuer-id", issuer, "--transaction-id", "2000000123456789", "--bundle-id", "com.example.app",
             "--product-id", "com.example.monthly", "--offer-id", "winback_50", "--username", "u", "--key-file", key_path)
token = json.loads(signed.stdout)["signature"]
as_returned = run("verify", "--key-file", key_path, stdin=signed.stdout)
check(as_returned.returncode == 0 and json.loads(as_returned.stdout)["valid"], "offer-signer verify takes the JWS answer of sign exactly as it came")
header = jwt.get_unverified_header(token)
check(header == {"alg": "ES256", "kid": key_id, "typ": "JWT"}, "our promotional offer JWS header is exactly alg/kid/typ")
claims = jwt.decode(token, public_key, algorithms=["ES256"], audience="promotional-offer")
check(set(claims) == {"iss", "bid", "aud", "iat", "nonce", "productId", "offerIdentifier", "transactionId"}, "PyJWT verifies our promotional offer JWS, with exactly the specified claims")
check(isinstance(claims["iat"], int) and claims["nonce"] == claims["nonce"].lower() and claims["iss"] == issuer and claims["bid"] == "com.example.app",
      "iat is an integer, nonce lower-case, iss and bid as configured")
for name, apple_token in [
    ("promotional offer V2", PromotionalOfferV2SignatureCreator(pem, key_id, issuer, "com.example.app").create_signature("com.example.monthly", "winback_50", "2000000123456789")),
    ("introductory-offer eligibility", IntroductoryOfferEligibilitySignatureCreator(pem, key_id, issuer, "com.example.app").create_signature("com.example.monthly", False, "2000000123456789")),
]:
    verified = run("verify", "--key-file", key_path, stdin=apple_token)
    check(verified.returncode == 0 and json.loads(verified.stdout)["valid"], f"offer-signer verify accepts Apple's {name} JWS")
    head, body, sig = apple_token.split(".")
    forged = base64.urlsafe_b64encode(json.dumps(dict(jwt.decode(apple_token, options={"verify_signature": False}), productId="com.example.free")).encode()).decode().rstrip("=")
    check(run("verify", "--key-file", key_path, stdin=json.dumps({"signature": f"{head}.{forged}.{sig}"})).returncode == 1, f"offer-signer verify refuses Apple's {name} JWS with tampered claims")

# 5. A live demo service, verified with the openssl command line.
port = harness.free_port()
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1")
demo_log = open(os.path.join(work, "demo.log"), "w+")
server = harness.start_server(BINARY, env, args=("serve", "--demo"), log=demo_log)
try:
    base = f"http://127.0.0.1:{port}"
    request = urllib.request.Request(base + "/v1/offers/sign", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50", "applicationUsername": "lapsed-user"}).encode())
    bundle = json.loads(urllib.request.urlopen(request, timeout=5).read())
    keys = json.loads(urllib.request.urlopen(base + "/v1/keys", timeout=5).read())
    published = next(k for k in keys if k["keyIdentifier"] == bundle["keyIdentifier"])
    open(os.path.join(work, "demo.pem"), "w").write(published["publicKeyPEM"])
    open(os.path.join(work, "demo.sig"), "wb").write(base64.b64decode(bundle["signature"]))
    fields = [bundle[k] for k in ("bundleIdentifier", "keyIdentifier", "productIdentifier", "offerIdentifier", "applicationUsername", "nonce")] + [str(bundle["timestamp"])]
    open(os.path.join(work, "demo.msg"), "wb").write("\u2063".join(fields).encode())
    openssl = subprocess.run(["openssl", "dgst", "-sha256", "-verify", os.path.join(work, "demo.pem"), "-signature", os.path.join(work, "demo.sig"), os.path.join(work, "demo.msg")], capture_output=True, text=True)
    check(openssl.returncode == 0 and "Verified OK" in openssl.stdout, "openssl verifies a bundle from a live `serve --demo` with the key from GET /v1/keys")
    # The demo's lapsed customer's original transaction, read from a notification the demo's App Store signs (not sent).
    request = urllib.request.Request(base + "/demo/notifications", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"applicationUsername": "lapsed-user", "event": "renew"}).encode())
    signed = json.loads(urllib.request.urlopen(request, timeout=5).read())["signedPayload"]
    inner = jwt.decode(signed, options={"verify_signature": False})["data"]["signedTransactionInfo"]
    demo_transaction = jwt.decode(inner, options={"verify_signature": False})["originalTransactionId"]
    request = urllib.request.Request(base + "/v1/offers/introductory-eligibility", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"productIdentifier": "com.example.monthly", "transactionId": demo_transaction, "applicationUsername": "lapsed-user"}).encode())
    answer = json.loads(urllib.request.urlopen(request, timeout=5).read())
    demo_key = serialization.load_pem_public_key(published["publicKeyPEM"].encode())
    claims = jwt.decode(answer["signature"], demo_key, algorithms=["ES256"], audience="introductory-offer-eligibility")
    check(claims["allowIntroductoryOffer"] == answer["allowIntroductoryOffer"] and claims["transactionId"] == demo_transaction,
          "PyJWT verifies the live service's introductory-offer eligibility JWS")
    # Client errors are counted in the metrics as the status actually sent, never as 500.
    def status_of(path, body, content_type="application/json"):
        request = urllib.request.Request(base + path, method="POST", headers={"Content-Type": content_type}, data=body.encode())
        try:
            return urllib.request.urlopen(request, timeout=5).status
        except urllib.error.HTTPError as error:
            return error.code
    client_errors = [
        ("/v1/offers/sign", '{"productIdentifier":"","offerIdentifier":"o","applicationUsername":"u"}', "application/json", 400),
        ("/v1/offers/sign", '{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","offerIdentifier":"x"}', "application/json", 400),
        ("/v1/offers/sign", '{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u"}', "text/plain", 415),
        ("/v1/offers/sign", '{"bundleIdentifier":"com.other","productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u"}', "application/json", 404),
        ("/v1/offers/verify", '{"bundleIdentifier":"b","productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","keyIdentifier":"K","nonce":"n","timestamp":-9223372036854775808,"signature":"x"}', "application/json", 400),
        ("/v1/offers/eligibility", '{"applicationUsername":"a\\u202Eb"}', "application/json", 400),
    ]
    for path, body, content_type, expected in client_errors:
        check(status_of(path, body, content_type) == expected, f"POST {path} ({content_type}) answers {expected}")
    metrics = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
    request_lines = [line for line in metrics.splitlines() if line.startswith("hb_requests") and "/v1/offers/" in line]
    for path, _, _, expected in client_errors:
        check(any(f'"{path}"' in line and f'"{expected}"' in line for line in request_lines), f"/metrics counts {expected} for {path}")
    check(not any('"500"' in line for line in request_lines), "/metrics counts no 500 for the client errors sent")
    import yaml
    from openapi_spec_validator import validate as validate_openapi
    spec = yaml.safe_load(urllib.request.urlopen(base + "/openapi.yaml", timeout=5).read())
    try:
        validate_openapi(spec)
        check(True, "GET /openapi.yaml is a valid OpenAPI 3.1 document (openapi-spec-validator)")
    except Exception as error:
        check(False, f"GET /openapi.yaml is a valid OpenAPI 3.1 document: {error}")
finally:
    server.terminate()
    server.wait(timeout=10)
demo_log.seek(0)
check("DEMO" in demo_log.read(), "serve --demo says loudly that it is a demo")

# 6. Retention Messaging: a live service answers a real-time request signed by a test App Store chain; the V2
#    signature verifies with PyJWT and has the header and claims Apple's PromotionalOfferV2SignatureCreator makes
#    for the same inputs (nonce and iat aside), with transactionId = the request's originalTransactionId.
chain = harness.AppStoreTestChain()
open(os.path.join(work, "root.pem"), "w").write(chain.root_pem())
open(os.path.join(work, "retention-policy.yaml"), "w").write(f"""
apps:
  - bundleIdentifier: com.example.app
    issuerIdentifier: {issuer}
    appAppleId: 1234567890
    products:
      - productIdentifier: com.example.monthly
        subscriptionGroupIdentifier: "21000001"
        offers:
          - offerIdentifier: retention_30
            rules: [auto-renew-off]
        retention:
          - promotionalOffer: retention_30
            messageIdentifier: 9f2b8d1e-3c4a-4b5d-8e6f-7a8b9c0d1e2f
          - messageIdentifier: 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
""")
port = harness.free_port()
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1", OFFER_SIGNER_KEYS_DIR=os.path.dirname(key_path),
           OFFER_SIGNER_POLICY=os.path.join(work, "retention-policy.yaml"), OFFER_SIGNER_DATABASE_URL=f"sqlite:{work}/retention.sqlite",
           OFFER_SIGNER_ENVIRONMENTS="Sandbox", OFFER_SIGNER_TRUSTED_ROOTS=os.path.join(work, "root.pem"),
           OFFER_SIGNER_API_KEYS="interop:interop-client-key-0123456789abcdef")
for variable in ("OFFER_SIGNER_CLIENT_AUTH", "OFFER_SIGNER_BUNDLE_ID"):
    env.pop(variable, None)
server = harness.start_server(BINARY, env)
try:
    base = f"http://127.0.0.1:{port}"

    def post_json(path, body):
        request = urllib.request.Request(base + path, method="POST", headers={"Content-Type": "application/json"}, data=json.dumps(body).encode())
        try:
            response = urllib.request.urlopen(request, timeout=5)
            return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    original, token, now = "2000000987654321", str(uuid.uuid4()), int(time.time() * 1000)
    transaction = {"originalTransactionId": original, "transactionId": original, "bundleId": "com.example.app", "productId": "com.example.monthly",
                   "subscriptionGroupIdentifier": "21000001", "purchaseDate": now - 86_400_000, "expiresDate": now + 29 * 86_400_000,
                   "type": "Auto-Renewable Subscription", "environment": "Sandbox", "appAccountToken": token, "signedDate": now}
    renewal = {"originalTransactionId": original, "productId": "com.example.monthly", "autoRenewProductId": "com.example.monthly",
               "autoRenewStatus": 0, "environment": "Sandbox", "signedDate": now}
    status, _ = post_json("/v1/notifications/appstore", harness.notification(chain, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", "com.example.app", transaction, renewal))
    check(status == 200, "a live service takes a notification signed by a trusted test chain (auto-renew off)")
    status, answer = post_json("/v1/retention/appstore", harness.realtime_request(chain, original, "com.example.monthly", 1234567890, str(uuid.uuid4())))
    check(status == 200 and list(answer) == ["promotionalOffer"], f"the retention endpoint answers a promotional offer, and only that ({status})")
    token_v2 = answer.get("promotionalOffer", {}).get("promotionalOfferSignatureV2", "")
    ours_header, ours = jwt.get_unverified_header(token_v2), jwt.decode(token_v2, public_key, algorithms=["ES256"], audience="promotional-offer")
    apple_token = PromotionalOfferV2SignatureCreator(pem, key_id, issuer, "com.example.app").create_signature("com.example.monthly", "retention_30", original)
    apple_header, apple = jwt.get_unverified_header(apple_token), jwt.decode(apple_token, public_key, algorithms=["ES256"], audience="promotional-offer")
    check(ours_header == apple_header, f"the retention V2 JWS header is Apple's ({ours_header} vs {apple_header})")
    drop = lambda claims: {k: v for k, v in claims.items() if k not in ("nonce", "iat")}
    check(drop(ours) == drop(apple), f"PyJWT verifies the retention V2 JWS; its claims are Apple's for the same inputs, nonce and iat aside ({drop(ours)})")
    check(ours["transactionId"] == original and isinstance(ours["iat"], int), "transactionId is the request's originalTransactionId; iat an integer")
    status, refused = post_json("/v1/retention/appstore", harness.realtime_request(chain, original, "com.example.monthly", 999, str(uuid.uuid4())))
    check(status == 400 and refused["error"]["code"] == "invalid_signed_payload", "a request for another appAppleId is refused with 400")
    request_file = os.path.join(work, "retention-request.json")
    open(request_file, "w").write(json.dumps({"originalTransactionId": original, "appAppleId": 1234567890, "productId": "com.example.monthly"}))
    explained = subprocess.run([BINARY, "retention", "explain", request_file], env=env, capture_output=True, text=True, timeout=60)
    check(explained.returncode == 0 and "chosen       1. promotionalOffer retention_30 (v2)" in explained.stdout,
          f"offer-signer retention explain names the chosen entry: {explained.stdout.strip()} {explained.stderr.strip()}")
finally:
    server.terminate()
    server.wait(timeout=10)

print(f"\n{len(failures)} failure(s)" if failures else "\nall interoperability checks passed")
scratch.finish(work, failed=bool(failures))
sys.exit(1 if failures else 0)
