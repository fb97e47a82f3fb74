"""The Python peer of Benchmarks/Signing/compare.sh: POST /v1/offers/sign as a Python service would write it, Flask
around Apple's own app-store-server-library (PromotionalOfferSignatureCreator), with the signature verified
against the public key before replying, as OfferSigner and the Node peer do. Served by gunicorn, one worker
per core (see Benchmarks/Signing/compare.sh). Env: KEY_FILE (PKCS#8 PEM), KEY_ID, BUNDLE_ID."""
import base64
import os
import time
import uuid

from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from flask import Flask, jsonify, request

SEP = "\u2063"
FIELDS = ("productIdentifier", "offerIdentifier", "applicationUsername")

with open(os.environ["KEY_FILE"], "rb") as f:
    PEM = f.read()
KEY_ID, BUNDLE_ID = os.environ["KEY_ID"], os.environ["BUNDLE_ID"]
creator = PromotionalOfferSignatureCreator(PEM, KEY_ID, BUNDLE_ID)
public_key = serialization.load_pem_private_key(PEM, password=None).public_key()

app = Flask(__name__)


@app.post("/v1/offers/sign")
def sign():
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return jsonify(error={"code": "malformed_json"}), 400
    for field in FIELDS:
        value = body.get(field)
        if not isinstance(value, str) or not value or SEP in value:
            return jsonify(error={"code": "invalid_request", "field": field}), 400
    username = body["applicationUsername"].lower()
    nonce, timestamp = uuid.uuid4(), int(time.time() * 1000)
    # Apple's library lower-cases the username and the nonce itself; the payload below is what it signs.
    signature = creator.create_signature(body["productIdentifier"], body["offerIdentifier"], username, nonce, timestamp)
    payload = SEP.join([BUNDLE_ID, KEY_ID, body["productIdentifier"], body["offerIdentifier"],
                        username, str(nonce), str(timestamp)]).encode()
    public_key.verify(base64.b64decode(signature), payload, ec.ECDSA(hashes.SHA256()))  # raises if it does not match
    return jsonify(format="legacy", bundleIdentifier=BUNDLE_ID, keyIdentifier=KEY_ID,
                   productIdentifier=body["productIdentifier"], offerIdentifier=body["offerIdentifier"],
                   applicationUsername=username, nonce=str(nonce), timestamp=timestamp, signature=signature)
