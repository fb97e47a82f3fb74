#!/usr/bin/env python3
"""Two `offer-signer serve` processes on one PostgreSQL database, as two replicas behind a load balancer:
caps, grants and key states must hold across them.

- (a) 50 concurrent requests for an offer capped at 1 (`cap: {count: 1, days: 30}`), for one customer, spread
  over both processes: exactly one 200, every other answer 403 `not_eligible`, one signature in the log;
- (b) a customer-service grant given through the admin API is spent by exactly one of 50 concurrent requests
  over both processes;
- (c) the multi-replica steps of docs/key-rotation.md, repeatedly: process B activates the next key while
  process A revokes the previous one (A retries its revoke on 409 until B's activation is saved); then both
  processes report the same states (B picks up A's revoke through its 5 s refresh), every key revoked so far
  is revoked on both, and signatures — requested after the revoke returned on A, after the activation returned
  on B, and 20 from each afterwards — are never made with a revoked key. Signers run against both processes
  throughout.
- (e) a console session signed in through A works on B, and a sign-out through B ends it on A (sessions are kept
  in the store: no session affinity).
- (d) the revocation window, WINDOW_TRIALS times, with a third process C: A activates the next key and at once
  revokes the one before it, while B's and C's signers run without pause. Key states reach them by PostgreSQL's
  NOTIFY (the 5 s poll is the backstop): for each trial and follower, how long after A's revoke returned it still
  answered a signature made with the revoked key (0 when it never did), and how long its verify still called a
  bundle signed with it valid (for a request sent after the revoke; polled from a thread per follower). Each must be
  pushed (within 1 s); the p99 is reported against the 100 ms target, and asserted with
  OFFER_SIGNER_REPLICA_STRICT=1 (docs/deployment.md). OFFER_SIGNER_WINDOW_FOLLOWERS=1 measures it on two replicas
  (B alone follows).

- (f) one policy for the fleet, on three replicas (F1, F2, F3) of a database of the case's own (a policy applied to
  the store is in force for every server on that database; created with the test URL's role, else as the local
  superuser, and dropped at the end): POLICY_TRIALS times F1 applies (PUT /admin/policy) a policy that alternately
  refuses and grants the `toggle` offer; F2 and F3 are polled until /readyz reports the new version and a sign
  request gets the new policy's answer. The p99 over both replicas and all trials must be within 100 ms, no
  replica may answer under the old policy once it reports the new one, and /metrics must show the last revision.

- (g) one limit for the fleet, on three replicas (G1, G2, G3) of the test database, then on two of them: an API key
  of the measurement's own, limited to LIMIT_COUNT an hour (OFFER_SIGNER_RATE_LIMIT_CLIENT), is sent 3 × LIMIT_COUNT
  sign requests, in turn to each replica, 10 at once; then 40 failed admin authentications (a wrong bearer token)
  from a loopback address of the measurement's own, in turn to each, and 40 failed console sign-ins from another.
  Allowed must be LIMIT_COUNT ± 10 % and 10 (the
  failure burst) ± 1 plus one per 6 s elapsed; each replica alone would allow all of it.

Usage: IntegrationTests/replica-check.py PATH/TO/offer-signer     (exit status 0 when every check passes)

Needs OFFER_SIGNER_TEST_DATABASE_URL (a PostgreSQL database the run may write to; `eval "$(scripts/start-postgres.sh)"`);
without it the check is skipped (exit 0). Each run uses its own bundle identifier (so its customers and
signatures are its own) and its own key identifiers: the key-state document is shared by every run on the
database, and a key an earlier run activated or revoked is not loaded by this one, so it changes nothing here.
"""
import http.client
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

DATABASE_URL = os.environ.get("OFFER_SIGNER_TEST_DATABASE_URL", "")
TEST_DATABASE_URL = DATABASE_URL  # case (f) moves DATABASE_URL to a database of its own; case (g) runs here
if not DATABASE_URL:
    print("replica-check: skipped (OFFER_SIGNER_TEST_DATABASE_URL is not set; eval \"$(scripts/start-postgres.sh)\" sets it)")
    sys.exit(0)

BINARY = os.path.abspath(sys.argv[1])
RUN = secrets.token_hex(4).upper()
BUNDLE = f"com.replicacheck.r{RUN.lower()}"
PRODUCT = "com.example.monthly"
KEYS = [f"RC{RUN}K{i}" for i in range(6)]  # 5 rounds of activate-while-revoke
WINDOW_TRIALS = int(os.environ.get("OFFER_SIGNER_WINDOW_TRIALS", "20"))
# OFFER_SIGNER_WINDOW_FOLLOWERS=1: case (d) on two replicas (A and B), C left idle; 2 (the default): three.
WINDOW_FOLLOWERS = min(max(int(os.environ.get("OFFER_SIGNER_WINDOW_FOLLOWERS", "2")), 1), 2)
WINDOW_KEYS = [f"RC{RUN}W{i}" for i in range(WINDOW_TRIALS)]
WINDOW_LIMIT = 0.100  # the target (issue 41): a change reaches every replica within 100 ms
# What every run asserts: pushed by NOTIFY, not found by the 5 s poll — a bound a machine loaded by other work meets.
# The 100 ms target is measured and reported on every run, and asserted with OFFER_SIGNER_REPLICA_STRICT=1 (a quiet
# machine: docs/deployment.md quotes such a run).
VERIFY_BOUND = 1.0
STRICT = os.environ.get("OFFER_SIGNER_REPLICA_STRICT") == "1"


def target(values, what):
    """Asserts `values` (seconds) within VERIFY_BOUND — within WINDOW_LIMIT under STRICT — and says whether the
    100 ms target held."""
    ordered = sorted(values)
    summary = f"median {ordered[len(ordered) // 2] * 1000:.1f} ms, worst {ordered[-1] * 1000:.1f} ms" if ordered else "no trials"
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("inf")
    bound = WINDOW_LIMIT if STRICT else VERIFY_BOUND
    check(p99 <= bound, f"{what} — {summary}, p99 {p99 * 1000:.1f} ms (bound {bound * 1000:.0f} ms"
          + ("" if STRICT else ": pushed, not polled") + ")")
    held = p99 <= WINDOW_LIMIT
    print(f"{'info' if held else 'note'} the target of {WINDOW_LIMIT * 1000:.0f} ms (p99) {'held' if held else 'was not met'}: {what}", flush=True)
TOKEN = secrets.token_hex(24)
CONCURRENT = 50
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)
    return condition


def stop_processes(processes):
    """Stops `processes` (SIGTERM, then SIGKILL after 10 s), closes their logs, and prints each log's last lines when a
    check failed."""
    for p in processes:
        if p.process.poll() is None:
            p.process.terminate()
    for p in processes:
        try:
            p.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.process.kill()
        p.log.close()
    if failures:
        for p in processes:
            print(f"--- last lines of process {p.name}'s log ({work}) ---")
            print("".join(open(os.path.join(work, f"{p.name}.log")).readlines()[-20:]))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


work = tempfile.mkdtemp(prefix="offer-signer-replicas-")
os.mkdir(os.path.join(work, "keys"))
for key in KEYS + WINDOW_KEYS:
    subprocess.run([BINARY, "keys", "generate", "--output", os.path.join(work, "keys", f"SubscriptionKey_{key}.p8")],
                   check=True, stdout=subprocess.DEVNULL)
policy = os.path.join(work, "policy.yaml")
with open(policy, "w") as f:
    f.write(f"""apps:
  - bundleIdentifier: {BUNDLE}
    products:
      - productIdentifier: {PRODUCT}
        offers:
          - offerIdentifier: capped_once
            rules:
              - cap: {{ count: 1, days: 30 }}
          - offerIdentifier: service_gesture
            rules: [customer-service-grant]
          - offerIdentifier: open_offer
""")


class Process:
    def __init__(self, name, extra_env=None):
        self.name, self.port = name, free_port()
        self.log = open(os.path.join(work, f"{name}.log"), "w")
        env = dict(os.environ, OFFER_SIGNER_PORT=str(self.port), OFFER_SIGNER_DATABASE_URL=DATABASE_URL,
                   OFFER_SIGNER_POLICY=policy, OFFER_SIGNER_KEYS_DIR=os.path.join(work, "keys"),
                   OFFER_SIGNER_ACTIVE_KEY_ID=KEYS[0], OFFER_SIGNER_ADMIN_TOKENS=f"replica-check:{TOKEN}",
                   OFFER_SIGNER_CLIENT_AUTH="none")
        for name, value in (extra_env or {}).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        env.pop("OFFER_SIGNER_STATE_FILE", None)  # key states in the shared store: what replicas must use
        env.pop("OFFER_SIGNER_BUNDLE_ID", None)
        self.process = subprocess.Popen([BINARY, "serve"], env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                if self.call("GET", "/readyz", timeout=1)[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def call(self, method, path, body=None, admin=False, timeout=30):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            if admin:
                headers["Authorization"] = f"Bearer {TOKEN}"
            connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            response = connection.getresponse()
            data = response.read()
            try:
                return response.status, json.loads(data) if data else None
            except ValueError:
                return response.status, data.decode(errors="replace")
        finally:
            connection.close()

    def sign(self, offer, customer):
        return self.call("POST", "/v1/offers/sign", {"bundleIdentifier": BUNDLE, "productIdentifier": PRODUCT,
                                                     "offerIdentifier": offer, "applicationUsername": customer})

    def key_states(self):
        status, body = self.call("GET", "/admin/keys", admin=True)
        assert status == 200, (status, body)
        # This run's keys only: the key-state document is shared by every run on the database, and a key an earlier
        # run revoked stays listed as revoked (its public half is remembered with the states).
        return body["activeKeyIdentifier"], {k["keyIdentifier"]: k["state"] for k in body["keys"] if k["keyIdentifier"].startswith(f"RC{RUN}")}


def concurrently(functions):
    """Runs every function in its own thread, released together; returns their results in order."""
    barrier = threading.Barrier(len(functions))
    results = [None] * len(functions)

    def run(i):
        barrier.wait()
        try:
            results[i] = functions[i]()
        except Exception as error:  # noqa: BLE001 — reported as a result
            results[i] = ("exception", repr(error))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(functions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def one_signature(what, offer, customer):
    """50 concurrent sign requests for (offer, customer), alternating between the processes."""
    results = concurrently([(lambda p=procs[i % 2]: p.sign(offer, customer)) for i in range(CONCURRENT)])
    statuses = [r[0] for r in results]
    granted = statuses.count(200)
    refused = sum(1 for s, body in results if s == 403 and isinstance(body, dict) and body["error"]["code"] == "not_eligible")
    others = [r for r in results if r[0] not in (200, 403)]
    by_process = [sum(1 for i, r in enumerate(results) if r[0] == 200 and i % 2 == n) for n in (0, 1)]
    check(granted == 1 and refused == CONCURRENT - 1,
          f"{what}: {CONCURRENT} concurrent requests over both processes: {granted} signed (A {by_process[0]}, B {by_process[1]}), "
          f"{refused} refused not_eligible" + (f", other answers {others[:3]}" if others else ""))
    status, body = A.call("GET", f"/admin/signatures?bundleIdentifier={BUNDLE}&applicationUsername={customer}&offerIdentifier={offer}", admin=True)
    check(status == 200 and len(body["signatures"]) == 1,
          f"{what}: the log holds {len(body['signatures']) if status == 200 else '?'} signature(s) for the customer (want 1)")


procs = [Process("A"), Process("B")]
A, B = procs
# A third replica for the revocation window (d): the change must reach every other replica, not one.
C = Process("C")
try:
    for p in procs + [C]:
        if not check(p.wait_ready(), f"process {p.name} ready on port {p.port} (PostgreSQL, bundle {BUNDLE}, keys {KEYS[0]}…{KEYS[-1]})"):
            p.log.flush()
            print(open(os.path.join(work, f"{p.name}.log")).read()[-3000:])
            sys.exit(1)

    # (a) a cap of 1, across both processes
    for n in range(3):
        one_signature(f"cap 1 (customer {n + 1})", "capped_once", f"cap-customer-{n}")

    # (b) one customer-service grant, given on A, spent across both processes
    for n in range(3):
        customer = f"grant-customer-{n}"
        status, body = A.call("POST", f"/admin/customers/{BUNDLE}/{customer}/grants",
                              {"productIdentifier": PRODUCT, "offerIdentifier": "service_gesture"}, admin=True)
        check(status == 200 and len(body["facts"]["grants"]) == 1, f"grant {n + 1} given through A's admin API ({status})")
        one_signature(f"one grant (customer {n + 1})", "service_gesture", customer)

    # (c) B activates the next key while A revokes the previous one, repeatedly; signers run throughout.
    signed = []  # (process name, monotonic time the request was sent, keyIdentifier or error)
    stop_signers = threading.Event()

    def signer(process, index):
        n = 0
        while not stop_signers.is_set():
            sent = time.monotonic()
            try:
                status, body = process.sign("open_offer", f"rotation-{process.name}-{index}-{n}")
                signed.append((process.name, sent, body["keyIdentifier"] if status == 200 else f"status {status}: {body}"))
            except OSError as error:
                signed.append((process.name, sent, f"error {error!r}"))
            n += 1
            time.sleep(0.01)

    signers = [threading.Thread(target=signer, args=(p, i), daemon=True) for p in procs for i in range(2)]
    for t in signers:
        t.start()
    revoked_since = {}  # key → (process, monotonic time from which that process must never sign with it)
    for round_ in range(1, len(KEYS)):
        new, old = KEYS[round_], KEYS[round_ - 1]
        retries = [0]

        def activate_on_b():
            status, body = B.call("POST", f"/admin/keys/{new}/activate", admin=True)
            return status, body, time.monotonic()

        def revoke_on_a():
            deadline = time.monotonic() + 20
            while True:
                status, body = A.call("POST", f"/admin/keys/{old}/revoke", admin=True)
                if status == 409 and body["error"]["code"] == "key_state_conflict" and time.monotonic() < deadline:
                    retries[0] += 1
                    time.sleep(0.02)
                    continue
                return status, body, time.monotonic()

        started = time.monotonic()
        (b_status, b_body, b_done), (a_status, a_body, a_done) = concurrently([activate_on_b, revoke_on_a])
        check(b_status == 200 and a_status == 200,
              f"round {round_}: B activated {new} ({b_status}), A revoked {old} ({a_status}) after {retries[0]} retries on 409"
              + ("" if a_status == 200 else f": {a_body}") + ("" if b_status == 200 else f": {b_body}"))
        revoked_since[old] = {"A": a_done, "B": b_done}  # B never signs with `old` once it activated `new`
        # Both processes agree once B's refresher has applied A's revoke (every 5 s).
        deadline = time.monotonic() + 15
        while True:
            (a_active, a_states), (b_active, b_states) = A.key_states(), B.key_states()
            if (a_active, a_states) == (b_active, b_states) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        check((a_active, a_states) == (b_active, b_states),
              f"round {round_}: both processes report the same states {time.monotonic() - started:.1f} s after the change"
              + ("" if (a_active, a_states) == (b_active, b_states) else f": A {a_active} {a_states}, B {b_active} {b_states}"))
        expected = {k: ("revoked" if i < round_ else "active" if i == round_ else "retired") for i, k in enumerate(KEYS)}
        expected.update({k: "retired" for k in WINDOW_KEYS})
        check(a_states == expected and b_states == expected and a_active == b_active == new,
              f"round {round_}: {new} active, {', '.join(KEYS[:round_])} revoked on both")
        for p in procs:
            answers = [p.sign("open_offer", f"after-round-{round_}-{p.name}-{n}") for n in range(20)]
            keys_used = {body["keyIdentifier"] if status == 200 else f"status {status}" for status, body in answers}
            check(keys_used == {new}, f"round {round_}: 20 signatures from {p.name} all made with {new} (got {sorted(keys_used)})")
    stop_signers.set()
    for t in signers:
        t.join(timeout=35)
    errors = [s for s in signed if not s[2].startswith(f"RC{RUN}")]
    check(not errors, f"signers during the rotations: {len(signed)} requests, {len(errors)} failed" + (f": {errors[:3]}" if errors else ""))
    bad = [(name, key) for name, sent, key in signed if key in revoked_since and sent >= revoked_since[key][name]]
    check(not bad, f"no signature requested after its key's revoke (A) or successor's activation (B) used that key ({len(bad)} did: {bad[:3]})")

    # (d) the revocation window: A activates the next key and at once revokes the previous one; B and C sign
    # throughout. Each trial gives a window and a verify lag per follower.
    followers = [B, C][:WINDOW_FOLLOWERS]
    windows, answered_windows, verify_lags, verify_window_list = [], [], [], []
    previous = KEYS[-1]
    for trial, new in enumerate(WINDOW_KEYS):
        bundles = {}
        for f in followers:
            status, bundles[f.name] = f.sign("open_offer", f"window-bundle-{trial}-{f.name}")
            check(status == 200 and bundles[f.name].get("keyIdentifier") == previous,
                  f"window {trial}: {f.name} signs with {previous} before the change ({status})")
        signed_by = {f.name: [] for f in followers}  # (sent, received, keyIdentifier)
        stop = threading.Event()

        def hammer(f, index, stop=stop, signed_by=signed_by, trial=trial):
            n = 0
            while not stop.is_set():
                sent = time.monotonic()
                status, body = f.sign("open_offer", f"window-{trial}-{f.name}-{index}-{n}")
                signed_by[f.name].append((sent, time.monotonic(), body["keyIdentifier"] if status == 200 else f"status {status}"))
                n += 1

        threads = [threading.Thread(target=hammer, args=(f, i), daemon=True) for f in followers for i in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.05)
        status_activate, _ = A.call("POST", f"/admin/keys/{new}/activate", admin=True)
        status_revoke, body_revoke = A.call("POST", f"/admin/keys/{previous}/revoke", admin=True)
        revoked = time.monotonic()
        # Each follower's verify of the bundle it signed before, polled (a thread each) until it says key_revoked:
        # the latest request sent after A's revoke returned that still found the key valid (0 when none did, the
        # verify window, as the signing window above), and when the first key_revoked answer came back.
        lags, verify_windows = {}, {}

        def poll_verify(f, lags=lags, verify_windows=verify_windows, bundles=bundles, revoked=revoked):
            latest_valid = 0.0
            while time.monotonic() - revoked < 10:
                sent = time.monotonic()
                status, answer = f.call("POST", "/v1/offers/verify", bundles[f.name])
                if status == 200 and answer.get("reason") == "key_revoked":
                    lags[f.name] = time.monotonic() - revoked
                    break
                latest_valid = max(latest_valid, sent - revoked)
                time.sleep(0.002)
            verify_windows[f.name] = latest_valid if f.name in lags else float("inf")

        pollers = [threading.Thread(target=poll_verify, args=(f,), daemon=True) for f in followers]
        for t in pollers:
            t.start()
        for t in pollers:
            t.join(timeout=15)
        time.sleep(0.2)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        check(status_activate == 200 and status_revoke == 200, f"window {trial}: A activated {new} ({status_activate}) and revoked {previous} ({status_revoke})"
              + ("" if status_revoke == 200 else f": {body_revoke}"))
        for f in followers:
            f_signed = signed_by[f.name]
            # A request sent after A's revoke returned was signed after it: the latest such request the follower still
            # signed with the revoked key, as time since the revoke (0 when none was) — a lower bound of the window,
            # since it was signed between its sending and its answer. One sent before and answered after may have
            # been signed before.
            late = [sent - revoked for sent, _, key in f_signed if key == previous and sent > revoked]
            windows.append(max(late, default=0.0))
            answered_late = [received - revoked for _, received, key in f_signed if key == previous and received > revoked]
            answered_windows.append(max(answered_late, default=0.0))
            verify_lags.append(lags.get(f.name, float("inf")))
            verify_window_list.append(verify_windows.get(f.name, float("inf")))
            failed = [key for _, _, key in f_signed if key not in (previous, new)]
            check(not failed, f"window {trial}: {f.name} answered {len(f_signed)} signatures during the change, {len(failed)} not signed"
                  + (f": {failed[:2]}" if failed else ""))
        previous = new

    target(windows, f"revocation window over {WINDOW_TRIALS} trials on {len(followers) + 1} replicas (followers {', '.join(f.name for f in followers)}): how long after A's revoke returned "
           "a follower still signed a request sent after it with the revoked key")
    ordered = sorted(answered_windows)
    if ordered:
        print(f"info the last answer with the revoked key a follower gave after A's revoke returned (requests sent before it "
              f"included): median {ordered[len(ordered) // 2] * 1000:.1f} ms, worst {ordered[-1] * 1000:.1f} ms", flush=True)
    target(verify_window_list, f"verify window on {' and '.join(f.name for f in followers)}: how long after A's revoke returned a follower's verify still "
           "called the revoked key valid for a request sent after it")
    ordered = sorted(verify_lags)
    if ordered:
        print(f"info the first key_revoked answer of a follower's verify came back after A's revoke returned: median "
              f"{ordered[len(ordered) // 2] * 1000:.1f} ms, worst {ordered[-1] * 1000:.1f} ms (the poller's round trips "
              "included)", flush=True)

    # (e) a console session moves between the replicas.
    def console(process, method, path, form=None, cookie=None):
        connection = http.client.HTTPConnection("127.0.0.1", process.port, timeout=30)
        try:
            headers = {"Cookie": f"offer_signer_session={cookie}"} if cookie else {}
            body = None
            if form is not None:
                body = "&".join(f"{k}={v}" for k, v in form.items())
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheader("Location") or "", response.getheader("Set-Cookie") or "", response.read().decode(errors="replace")
        finally:
            connection.close()

    status, location, set_cookie, _ = console(A, "POST", "/console/login", {"token": TOKEN})
    cookie = set_cookie.split(";", 1)[0].split("=", 1)[1] if set_cookie.startswith("offer_signer_session=") else ""
    check(status == 303 and location == "/console" and cookie, f"console: signed in through A ({status} to {location})")
    # The Keys page: the session is what is checked here, and the overview reads outcome reports (seconds on a database
    # that holds many earlier runs' signatures).
    status, location, _, page = console(B, "GET", "/console/keys", cookie=cookie)
    check(status == 200, f"console: the session works on B ({status}{' to ' + location if location else ''})")
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0] if 'name="csrf" value="' in page else ""
    status, location, _, _ = console(B, "POST", "/console/logout", {"csrf": csrf}, cookie=cookie)
    check(status == 303 and location == "/console/login", f"console: signed out through B ({status} to {location})")
    status, location, _, _ = console(A, "GET", "/console/keys", cookie=cookie)
    check(status == 303 and location == "/console/login", f"console: the session is gone on A too ({status} to {location})")

    for p in procs + [C]:
        check(p.process.poll() is None, f"process {p.name} still running")
finally:
    stop_processes(procs + [C])



# (f) one policy for the fleet, on three replicas of a database of this case's own (a policy applied to the store is
# in force for every server on that database, so it must not be the shared test database).
def psql(url, sql):
    return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qtAc", sql], capture_output=True, text=True, timeout=60)


def own_database():
    """Creates a database for case (f): with the test URL's role, else as the local superuser (scripts/start-postgres.sh)."""
    from urllib.parse import urlsplit, urlunsplit
    name = f"replica_policy_{RUN.lower()}"
    parts = urlsplit(DATABASE_URL)
    superuser = urlunsplit(parts._replace(netloc=f"postgres@{parts.hostname}:{parts.port or 5432}", path="/postgres", query=""))
    owner = parts.username or "postgres"
    for admin_url, sql in ((DATABASE_URL, f"CREATE DATABASE {name}"), (superuser, f"CREATE DATABASE {name} OWNER {owner}")):
        if shutil.which("psql") and psql(admin_url, sql).returncode == 0:
            return urlunsplit(parts._replace(path=f"/{name}")), admin_url, name
    return None, None, None


POLICY_TRIALS = int(os.environ.get("OFFER_SIGNER_POLICY_TRIALS", "20"))


def fleet_policy(gate):
    """A policy whose `toggle` offer is for everyone (gate False) or only for customers at high churn risk (gate True)."""
    rules = "[{ churn-risk: { values: [high] } }]" if gate else "[]"
    return f"""apps:
  - bundleIdentifier: {BUNDLE}
    products:
      - productIdentifier: {PRODUCT}
        offers:
          - offerIdentifier: toggle
            rules: {rules}
          - offerIdentifier: open_offer
"""


fleet_url, fleet_admin_url, fleet_name = own_database()
fleet = []
if not fleet_url:
    check(False, "policy for the fleet: cannot create a database of the case's own (psql with the test URL's role or the local superuser)")
else:
    try:
        with open(policy, "w") as f:
            f.write(fleet_policy(False))
        DATABASE_URL = fleet_url  # the processes below start on the case's database
        fleet = [Process(name) for name in ("F1", "F2", "F3")]
        for p in fleet:
            check(p.wait_ready(), f"policy for the fleet: process {p.name} ready on port {p.port} (database {fleet_name})")
        applier, others = fleet[0], fleet[1:]
        lags = {p.name: [] for p in others}  # seconds from the apply's return until the replica reports and enforces it
        stale = []
        for trial in range(POLICY_TRIALS):
            gate = trial % 2 == 0
            text = fleet_policy(gate)
            connection = http.client.HTTPConnection("127.0.0.1", applier.port, timeout=30)
            connection.request("PUT", "/admin/policy", body=text, headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/yaml"})
            response = connection.getresponse()
            answer = json.loads(response.read() or b"null")
            connection.close()
            applied = time.monotonic()
            if not check(response.status == 200, f"policy trial {trial}: applied on {applier.name} ({response.status})"):
                break
            version = answer["version"]

            def follow(p, trial=trial, gate=gate, version=version, applied=applied):
                """Polls the replica until /readyz reports the version and a sign request gets the policy's answer."""
                seen = False
                while time.monotonic() - applied < 10:
                    if not seen:
                        status, body = p.call("GET", "/readyz", timeout=10)
                        seen = status == 200 and (body.get("policy") or {}).get("version") == version
                    if seen:
                        status, _ = p.sign("toggle", f"toggle-{trial}-{p.name}")
                        if status == (403 if gate else 200):
                            return time.monotonic() - applied
                        stale.append((trial, p.name, status))
                return float("inf")

            for p, lag in zip(others, concurrently([(lambda p=p: follow(p)) for p in others])):
                lags[p.name].append(lag if isinstance(lag, float) else float("inf"))
        every = sorted(lag for values in lags.values() for lag in values)
        if every:
            per_replica = "; ".join(f"{name} median {sorted(v)[len(v) // 2] * 1000:.1f} ms, worst {max(v) * 1000:.1f} ms" for name, v in lags.items() if v)
            target(every, f"policy applied on {applier.name}, {len(others)} other replicas report and enforce it over {POLICY_TRIALS} trials "
                   f"({per_replica})")
            check(not stale, f"no replica answered under the old policy after reporting the new version ({len(stale)} did: {stale[:3]})")
        revisions = {}
        for p in fleet:
            status, text = p.call("GET", "/metrics")
            line = next((l for l in (text if isinstance(text, str) else "").splitlines() if l.startswith("offer_signer_policy_revision")), "")
            revisions[p.name] = line.split()[-1] if line else f"none ({status})"
        # Prometheus's text format may write the gauge as 20 or 20.0.
        numbers = {name: float(value) if re.fullmatch(r"[0-9.e+]+", value) else None for name, value in revisions.items()}
        check(set(numbers.values()) == {float(POLICY_TRIALS)}, f"every replica's /metrics says offer_signer_policy_revision {POLICY_TRIALS}: {revisions}")
    finally:
        stop_processes(fleet)
        if fleet_admin_url:
            psql(fleet_admin_url, f"DROP DATABASE IF EXISTS {fleet_name} WITH (FORCE)")

# (g) one limit for the fleet: the client limit and the failed-sign-in throttle, over three replicas, then two (an API
# key and a client address of each measurement's own: 127.x.y.z, any of which reaches the servers on loopback).
LIMIT_COUNT = 100
API_KEYS = {replicas: secrets.token_hex(16) for replicas in (3, 2)}
DATABASE_URL = TEST_DATABASE_URL
limited = []


def fleet_limits(replicas):
    api_key = API_KEYS[len(replicas)]
    source = (f"127.{secrets.randbelow(250) + 1}.{secrets.randbelow(250) + 1}.{secrets.randbelow(250) + 1}", 0)
    what = f"{len(replicas)} replicas"

    def connect(p):
        return http.client.HTTPConnection("127.0.0.1", p.port, timeout=30, source_address=source)

    def keyed_sign(p, i):
        connection = connect(p)
        try:
            connection.request("POST", "/v1/offers/sign", body=json.dumps({
                "bundleIdentifier": BUNDLE, "productIdentifier": PRODUCT, "offerIdentifier": "open_offer",
                "applicationUsername": f"limit-{RUN}-{i}"}),
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"})
            return connection.getresponse().status
        finally:
            connection.close()

    statuses = []
    started = time.monotonic()
    for wave in range(3 * LIMIT_COUNT // 10):
        statuses += concurrently([(lambda i=wave * 10 + j: keyed_sign(replicas[i % len(replicas)], i)) for j in range(10)])
    elapsed = time.monotonic() - started
    allowed = statuses.count(200)
    print(f"limits for the fleet, {what}: client limit {LIMIT_COUNT}/h, {len(statuses)} sign requests in turn, 10 at once, in "
          f"{elapsed:.1f} s: {allowed} signed, {statuses.count(429)} refused 429")
    check(set(statuses) <= {200, 429}, f"{what}: every sign request answered 200 or 429: {sorted(set(map(str, statuses)))}")
    check(abs(allowed - LIMIT_COUNT) <= LIMIT_COUNT // 10,
          f"{what}: client limit held for the fleet: {allowed} signed, {LIMIT_COUNT} ± 10 % allowed")

    wrong = []
    started = time.monotonic()
    for attempt in range(40):
        connection = connect(replicas[attempt % len(replicas)])
        connection.request("GET", "/admin/keys", headers={"Authorization": "Bearer not-the-admin-token"})
        wrong.append(connection.getresponse().status)
        connection.close()
    elapsed = time.monotonic() - started
    refused = wrong.count(403)
    ceiling = 11 + int(elapsed / 6)
    print(f"limits for the fleet, {what}: 40 failed admin authentications from {source[0]} in turn in {elapsed:.1f} s: {refused} "
          f"answered 403, {wrong.count(429)} throttled 429 (10 at once, then one per 6 s, for the fleet)")
    check(9 <= refused <= ceiling, f"{what}: failed admin authentications held for the fleet: {refused} let through, 9 to {ceiling} allowed")

    # The console's sign-in counts in the same buckets: wrong tokens from another address of the measurement's own.
    source = (f"127.{secrets.randbelow(250) + 1}.{secrets.randbelow(250) + 1}.{secrets.randbelow(250) + 1}", 0)
    wrong = []
    started = time.monotonic()
    for attempt in range(40):
        connection = connect(replicas[attempt % len(replicas)])
        connection.request("POST", "/console/login", body="token=not-the-admin-token",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
        response = connection.getresponse()
        response.read()
        wrong.append(response.status)
        connection.close()
    elapsed = time.monotonic() - started
    refused = wrong.count(403)
    ceiling = 11 + int(elapsed / 6)
    print(f"limits for the fleet, {what}: 40 failed console sign-ins from {source[0]} in turn in {elapsed:.1f} s: {refused} "
          f"answered 403, {wrong.count(429)} throttled 429")
    check(set(wrong) <= {403, 429}, f"{what}: every failed console sign-in answered 403 or 429: {sorted(set(map(str, wrong)))}")
    check(9 <= refused <= ceiling, f"{what}: the console's sign-in throttle held for the fleet: {refused} let through, 9 to {ceiling} allowed")


try:
    keys = ",".join(f"rc{RUN.lower()}n{count}:{key}" for count, key in API_KEYS.items())
    limited = [Process(name, {"OFFER_SIGNER_API_KEYS": keys, "OFFER_SIGNER_CLIENT_AUTH": None,
                              "OFFER_SIGNER_RATE_LIMIT_CLIENT": f"{LIMIT_COUNT}/h"}) for name in ("G1", "G2", "G3")]
    for p in limited:
        check(p.wait_ready(), f"limits for the fleet: process {p.name} ready on port {p.port}")
    fleet_limits(limited)
    fleet_limits(limited[:2])
finally:
    stop_processes(limited)

if failures:
    print(f"replica checks: {len(failures)} failed")
    sys.exit(1)
shutil.rmtree(work, ignore_errors=True)
print("replica checks passed")
