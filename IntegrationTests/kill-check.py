#!/usr/bin/env python3
"""Nothing lost: kill -9 `offer-signer serve` under load, then find every bundle a client received in the
issued-signature log (SQLite file, read with Python's own sqlite3).

Usage: IntegrationTests/kill-check.py PATH/TO/offer-signer      (exit status 0 when every received nonce is in the log)
"""
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import http.client

import scratch  # IntegrationTests/scratch.py: the run's folder, removed when it passes

binary = os.path.abspath(sys.argv[1])
work = scratch.folder("offer-signer-kill-")
database = os.path.join(work, "store.sqlite")
key = subprocess.run([binary, "keys", "generate"], capture_output=True, text=True, check=True).stdout
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_BUNDLE_ID="com.example.app",
           OFFER_SIGNER_KEY_KILLTEST01=key, OFFER_SIGNER_API_KEYS="kill:kill-check-key-0123456789", OFFER_SIGNER_DATABASE_URL=f"sqlite:{database}")
server = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(200):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        connection.request("GET", "/readyz")
        if connection.getresponse().status == 200:
            break
    except OSError:
        time.sleep(0.05)

received, lock, stop = [], threading.Lock(), threading.Event()
body = json.dumps({"productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50", "applicationUsername": "user-1"})

def client():
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    while not stop.is_set():
        try:
            connection.request("POST", "/v1/offers/sign", body=body, headers={"Content-Type": "application/json", "Authorization": "Bearer kill-check-key-0123456789"})
            response = connection.getresponse()
            payload = response.read()
            if response.status == 200:
                with lock:
                    received.append(json.loads(payload)["nonce"])
        except Exception:
            return  # the server died: what was received so far is what counts

threads = [threading.Thread(target=client) for _ in range(16)]
for thread in threads:
    thread.start()
time.sleep(2.0)
server.send_signal(signal.SIGKILL)
server.wait()
stop.set()
for thread in threads:
    thread.join()

logged = {row[0] for row in sqlite3.connect(database).execute("SELECT nonce FROM issued_signatures")}
missing = [nonce for nonce in received if nonce not in logged]
print(f"received {len(received)} bundles before kill -9; {len(logged)} records in the log; {len(missing)} received but not logged")
scratch.finish(work, failed=not received or bool(missing))
sys.exit(0 if received and not missing else 1)
