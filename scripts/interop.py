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

Usage: scripts/interop.py PATH/TO/offer-signer   (exit status 0 when every check passes)
"""
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
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


work = tempfile.mkdtemp(prefix="offer-signer-interop-")
key_id = "INTEROP001"
key_path = os.path.join(work, f"SubscriptionKey_{key_id}.p8")
generated = run("keys", "generate", "--output", key_path)
check(generated.returncode == 0 and os.stat(key_path).st_mode & 0o077 == 0, "keys generate writes a PKCS#8 key readable by its owner only")
pem = open(key_path, "rb").read()
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
tampered = dict(apple_bundle, offerIdentifier="winback_60")
check(run("verify", "--key-file", key_path, stdin=json.dumps(tampered)).returncode == 1, "offer-signer verify refuses it tampered (exit 1)")

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
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1")
server = subprocess.Popen([BINARY, "serve", "--demo"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(base + "/readyz", timeout=1)
            break
        except Exception:
            time.sleep(0.1)
    request = urllib.request.Request(base + "/v1/offers/sign", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50", "applicationUsername": "user-0001"}).encode())
    bundle = json.loads(urllib.request.urlopen(request, timeout=5).read())
    keys = json.loads(urllib.request.urlopen(base + "/v1/keys", timeout=5).read())
    published = next(k for k in keys if k["keyIdentifier"] == bundle["keyIdentifier"])
    open(os.path.join(work, "demo.pem"), "w").write(published["publicKeyPEM"])
    open(os.path.join(work, "demo.sig"), "wb").write(base64.b64decode(bundle["signature"]))
    fields = [bundle[k] for k in ("bundleIdentifier", "keyIdentifier", "productIdentifier", "offerIdentifier", "applicationUsername", "nonce")] + [str(bundle["timestamp"])]
    open(os.path.join(work, "demo.msg"), "wb").write("\u2063".join(fields).encode())
    openssl = subprocess.run(["openssl", "dgst", "-sha256", "-verify", os.path.join(work, "demo.pem"), "-signature", os.path.join(work, "demo.sig"), os.path.join(work, "demo.msg")], capture_output=True, text=True)
    check(openssl.returncode == 0 and "Verified OK" in openssl.stdout, "openssl verifies a bundle from a live `serve --demo` with the key from GET /v1/keys")
    request = urllib.request.Request(base + "/v1/offers/introductory-eligibility", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"productIdentifier": "com.example.monthly", "transactionId": "2000000123456789", "applicationUsername": "user-0001"}).encode())
    answer = json.loads(urllib.request.urlopen(request, timeout=5).read())
    demo_key = serialization.load_pem_public_key(published["publicKeyPEM"].encode())
    claims = jwt.decode(answer["signature"], demo_key, algorithms=["ES256"], audience="introductory-offer-eligibility")
    check(claims["allowIntroductoryOffer"] == answer["allowIntroductoryOffer"] and claims["transactionId"] == "2000000123456789",
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
check("DEMO" in server.stderr.read(), "serve --demo says loudly that it is a demo")

print(f"\n{len(failures)} failure(s)" if failures else "\nall interoperability checks passed")
sys.exit(1 if failures else 0)
