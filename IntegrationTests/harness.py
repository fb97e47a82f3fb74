"""Shared by the live checks in IntegrationTests/ and the benchmarks that start a server: a free port, a running
`offer-signer serve`, and an App Store test certificate chain that signs data as the App Store does (x5c with
Apple's marker extensions), so a service that trusts its root (OFFER_SIGNER_TRUSTED_ROOTS) accepts notifications
and retention requests from it.

Needs `cryptography` and PyJWT (IntegrationTests/requirements-interop.txt).
"""
import base64
import datetime
import os
import socket
import subprocess
import time
import urllib.request

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID, ObjectIdentifier

LEAF_MARKER = ObjectIdentifier("1.2.840.113635.100.6.11.1")
INTERMEDIATE_MARKER = ObjectIdentifier("1.2.840.113635.100.6.2.1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, env, args=("serve",), log=None, ready_path="/readyz", timeout=30):
    """Starts `binary args` with `env` and waits until `ready_path` answers on OFFER_SIGNER_PORT; returns the process."""
    port = env["OFFER_SIGNER_PORT"]
    server = subprocess.Popen([binary, *args], env=env, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT if log else subprocess.DEVNULL)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode} before it was ready")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{ready_path}", timeout=1)
            return server
        except Exception:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"the server was not ready within {timeout} s")


class AppStoreTestChain:
    """A root, an intermediate and a leaf (P-256) shaped like Apple's: the leaf signs, x5c is [leaf, intermediate, root]."""

    def __init__(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        keys = [ec.generate_private_key(ec.SECP256R1()) for _ in range(3)]
        self.root_key, intermediate_key, self.leaf_key = keys
        names = [x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "OfferSigner Tests")])
                 for name in ("OfferSigner Test Root CA", "OfferSigner Test Intermediate CA", "OfferSigner Test App Store Signer")]

        def certificate(subject, issuer, key, issuer_key, ca, path_length, marker):
            builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
                       .serial_number(x509.random_serial_number())
                       .not_valid_before(now - datetime.timedelta(days=365)).not_valid_after(now + datetime.timedelta(days=365))
                       .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length), critical=True)
                       .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False,
                                                    data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                                                    encipher_only=False, decipher_only=False), critical=True))
            if marker is not None:
                builder = builder.add_extension(x509.UnrecognizedExtension(marker, b"\x05\x00"), critical=False)
            return builder.sign(issuer_key, hashes.SHA256())

        self.root = certificate(names[0], names[0], self.root_key, self.root_key, True, None, None)
        intermediate = certificate(names[1], names[0], intermediate_key, self.root_key, True, 0, INTERMEDIATE_MARKER)
        leaf = certificate(names[2], names[1], self.leaf_key, intermediate_key, False, None, LEAF_MARKER)
        self.x5c = [base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode() for c in (leaf, intermediate, self.root)]

    def root_pem(self):
        return self.root.public_bytes(serialization.Encoding.PEM).decode()

    def sign(self, payload):
        """A compact JWS of `payload` (a dict) as the App Store signs: ES256 with x5c."""
        return jwt.encode(payload, self.leaf_key, algorithm="ES256", headers={"x5c": self.x5c})


def realtime_request(chain, original_transaction_id, product_id, app_apple_id, request_identifier, environment="Sandbox"):
    """A signed Retention Messaging request body, as the App Store POSTs it."""
    return {"signedPayload": chain.sign({
        "originalTransactionId": original_transaction_id, "appAppleId": app_apple_id, "productId": product_id,
        "userLocale": "en-US", "requestIdentifier": request_identifier, "environment": environment,
        "signedDate": int(time.time() * 1000)})}


def notification(chain, notification_type, subtype, bundle_id, transaction, renewal, environment="Sandbox", app_apple_id=None):
    """A signed App Store Server Notification V2 body for one transaction and its renewal info."""
    now = int(time.time() * 1000)
    data = {"bundleId": bundle_id, "environment": environment, "signedTransactionInfo": chain.sign(transaction),
            "signedRenewalInfo": chain.sign(renewal), "status": 1}
    if app_apple_id is not None:
        data["appAppleId"] = app_apple_id
    payload = {"notificationType": notification_type, "notificationUUID": str(__import__("uuid").uuid4()), "data": data,
               "version": "2.0", "signedDate": now}
    if subtype:
        payload["subtype"] = subtype
    return {"signedPayload": chain.sign(payload)}
