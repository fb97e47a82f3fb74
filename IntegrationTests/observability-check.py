#!/usr/bin/env python3
"""The alert rules and the dashboard against a real Prometheus scraping real replicas (docs/observability.md):

1. `promtool check rules deploy/prometheus/alerts.yml` and `promtool test rules` of
   deploy/prometheus/alerts.test.yml and alerts.refusals-shift.test.yml (each alert fires on a synthetic series and
   stays quiet on a healthy one);
2. two replicas with traffic: `serve --demo` (signatures, refusals, App Store notifications and real-time retention
   requests signed by the demo's App Store, a key reload; its /metrics on the operations listener,
   OFFER_SIGNER_ADMIN_PORT), and `serve` on a SQLite file with a policy, API keys, a per-customer rate limit and the
   App Store Server API pointed at a fake of Apple in this process that answers 404, 500, 401 and 200 by the
   transaction's last digit (so lookups, retries, the cache, single flight, 401s, 429s and 503s all happen);
3. Debian's `prometheus` (loopback, a free port, scraping both every second, storage in the scratch folder, the
   alert rules loaded) until it holds a few scrapes of each;
4. every query of deploy/grafana/offer-signer.json — its variables and every panel's targets, with `$job`,
   `$replica` (All), `$__rate_interval` and `$__range` replaced by concrete values — through /api/v1/query: each must
   evaluate and return at least one number, except the documented EMPTY_PANELS below;
5. every alert rule as Prometheus loaded it (/api/v1/rules): evaluated without error, its expression answers through
   /api/v1/query (empty is expected: an alert that does not fire), the metrics it reads exist in Prometheus, and its
   measured quantity (the expression without its final threshold) returns data, except EMPTY_SIGNALS below; its
   runbook_url names a section of docs/operations.md; its severity is critical, warning or info;
6. every metric name the dashboard and the rules use is in docs/observability.md's metric table.

Usage: IntegrationTests/observability-check.py PATH/TO/offer-signer      (exit status 0 when every check passes)

Standard library only. Needs `prometheus` and `promtool` (Debian's `prometheus` package; `.ci/run` installs it).
Takes about half a minute; its folder under the temporary directory is removed when it passes, kept and named when
it fails (the servers' and Prometheus's logs are in it).
"""
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import scratch  # IntegrationTests/scratch.py: the run's folder, removed when it passes

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ALERTS = os.path.join(ROOT, "deploy", "prometheus", "alerts.yml")
ALERT_TESTS = [os.path.join(ROOT, "deploy", "prometheus", name) for name in ("alerts.test.yml", "alerts.refusals-shift.test.yml")]
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "offer-signer.json")
OPERATIONS = os.path.join(ROOT, "docs", "operations.md")
OBSERVABILITY = os.path.join(ROOT, "docs", "observability.md")

JOB = "offer-signer"
RATE_INTERVAL = "10s"   # $__rate_interval: ten scrapes at one a second, all during the traffic
RANGE = "1m"            # $__range

# Dashboard targets (panel title, refId) that may answer no series on a healthy run, and why. Their expression must
# still evaluate without error, and its metric must be in docs/observability.md's table.
EMPTY_PANELS = {
    ("Customer binding conflicts", "A"):
        "offer_signer_customer_binding_conflicts_total is created at the first conflict, which a healthy run never has",
    ("Retries, cache, single flight, rate-limit waits", "D"):
        "offer_signer_app_store_api_rate_limit_waits_total is created when the client first waits for its own rate "
        "limit, which a short run may or may not do",
}
# Alerts whose measured quantity (the expression without its threshold) may be empty on this run, and why.
EMPTY_SIGNALS = {
    "OfferSignerRefusalsShift": "it compares with the same hour a week ago, and Prometheus holds only this run",
    "OfferSignerRetentionPastDeadline": "the answer=\"fallback_after_deadline\" and \"timed_out\" series appear at the first late "
                                        "answer, and a healthy run answers every retention request in time",
}
SEVERITIES = {"critical", "warning", "info"}
METRIC_NAME = re.compile(r"\b((?:offer_signer|hb|http_server)_[a-z0-9_]+)\b")

binary = os.path.abspath(sys.argv[1])
work = scratch.folder("offer-signer-observability-")
failures = []
processes = []
stop_traffic = threading.Event()


def fail(message):
    failures.append(message)
    print(f"FAIL {message}")


def ok(message):
    print(f"ok   {message}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def on_signal(signum, frame):
    raise SystemExit(f"stopped by signal {signum}")


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGALRM, lambda signum, frame: on_signal(signum, frame))
signal.alarm(150)  # the whole run, whatever hangs


def start(name, args, env=None):
    log = open(os.path.join(work, f"{name}.log"), "wb")
    process = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    processes.append((name, process))
    return process


def wait_until(what, check, process, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with status {process.returncode} (see {work})")
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what}: not within {timeout} s")


def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def request(port, method, path, body=None, headers=None):
    """(status, JSON or text) of one request; (0, error) when the connection fails."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        payload = response.read()
        try:
            return response.status, json.loads(payload)
        except ValueError:
            return response.status, payload.decode(errors="replace")
    except OSError as error:
        return 0, str(error)
    finally:
        connection.close()


# --- The fake App Store Server API: the answer by the transaction identifier's last digit. ---------------------

class FakeAppStore(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(0.05)  # long enough for concurrent lookups of one transaction to join in flight
        path = self.path.split("?")[0]
        transaction = path.rstrip("/").rsplit("/", 1)[-1]
        status = {"1": 404, "2": 500, "3": 401, "4": 200}.get(transaction[-1:], 404)
        if status == 200 and "/subscriptions/" in path:
            body = {"environment": "Sandbox", "bundleId": "com.example.app", "data": []}
        elif status == 200:
            body = {"revision": "r1", "bundleId": "com.example.app", "environment": "Sandbox", "hasMore": False, "signedTransactions": []}
        else:
            body = {"errorCode": 4040010, "errorMessage": "Transaction id not found."}
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


POLICY = """apps:
  - bundleIdentifier: com.example.app
    products:
      - productIdentifier: com.example.monthly
        offers:
          - offerIdentifier: winback_50
            rules:
              - lapsed: { minDays: 30, maxDays: 365 }
          - offerIdentifier: anyone_10
"""
API_KEY = "observability-check-key-0123456789"


def demo_round(port):
    """What a newcomer does with the demo (README's quick start), and the App Store's retention requests."""
    def sign(body):
        return request(port, "POST", "/v1/offers/sign", {"productIdentifier": "com.example.monthly", **body})
    sign({"offerIdentifier": "winback_50", "applicationUsername": "lapsed-user"})                       # 200, then the cap's 403
    sign({"offerIdentifier": "retention_30", "applicationUsername": "lapsed-user"})                     # 403 not_active_subscriber
    sign({"offerIdentifier": "retention_30", "applicationUsername": "leaving-user", "format": "jws"})  # 200 (JWS)
    request(port, "POST", "/v1/offers/eligibility", {"applicationUsername": "loyal-user"})
    status, signed = request(port, "POST", "/demo/notifications", {"applicationUsername": "loyal-user", "event": "renew"})
    if status == 200:
        request(port, "POST", "/v1/notifications/appstore", signed)
    for customer in ("leaving-user", "new-user"):
        status, signed = request(port, "POST", "/demo/retention", {"applicationUsername": customer})
        if status == 200:
            request(port, "POST", "/v1/retention/appstore", signed)


def api_round(port, number):
    """Signatures, refusals, lookups at the fake Apple (every outcome), a 401 and, after a few rounds, a 429."""
    auth = {"Authorization": f"Bearer {API_KEY}"}

    def sign(offer, customer, transaction=None, headers=auth):
        body = {"productIdentifier": "com.example.monthly", "offerIdentifier": offer, "applicationUsername": customer}
        if transaction:
            body["transactionId"] = transaction
        return request(port, "POST", "/v1/offers/sign", body, headers)

    sign("anyone_10", f"r{number}-anyone")
    sign("winback_50", f"r{number}-not-found", f"{number}0001")        # Apple: 404, then not_lapsed
    threads = [threading.Thread(target=sign, args=("winback_50", f"r{number}-down-{i}", f"{number}0002")) for i in range(3)]
    for thread in threads:                                             # Apple: 500, retried; joined in flight
        thread.start()
    for thread in threads:
        thread.join()
    sign("winback_50", f"r{number}-unauthorized", f"{number}0003")     # Apple: 401
    sign("winback_50", f"r{number}-known", f"{number}0004")            # Apple: 200, no subscription
    sign("winback_50", f"r{number}-known", f"{number}0004")            # from the client's cache
    sign("anyone_10", f"r{number}-no-credential", headers={})          # 401
    sign("anyone_10", "busy-customer")                                 # over 5/min from the third round: 429


def traffic(demo_port, api_port):
    number = 1
    while not stop_traffic.is_set():
        demo_round(demo_port)
        api_round(api_port, number)
        number += 1
        stop_traffic.wait(0.2)


# --- Prometheus's HTTP API ------------------------------------------------------------------------------------

prometheus_url = None


def api(path, **params):
    url = f"{prometheus_url}{path}?{urllib.parse.urlencode(params, doseq=True)}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        try:
            return json.load(error)
        except ValueError:
            return {"status": "error", "error": f"HTTP {error.code}"}


def query(expression):
    """(error or None, result list)."""
    answer = api("/api/v1/query", query=expression)
    if answer.get("status") != "success":
        return answer.get("error", "unknown error"), []
    return None, answer["data"]["result"]


def has_number(result):
    for series in result:
        value = float(series["value"][1])
        if value == value:  # not NaN
            return True
    return False


def substitute(expression, replica=".*"):
    return (expression.replace("$__rate_interval", RATE_INTERVAL).replace("$__range", RANGE)
            .replace("${job}", JOB).replace("$job", JOB).replace("${replica}", replica).replace("$replica", replica))


def anchors(markdown):
    """GitHub's anchors of the headings of a Markdown file."""
    found = set()
    for line in markdown.splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            title = match.group(1).strip().lower()
            found.add(re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", title)))
    return found


try:
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"`{tool}` is not installed (Debian: apt-get install prometheus)")

    # 1. The rules on their own.
    for args in (["check", "rules", ALERTS], ["test", "rules", *ALERT_TESTS]):
        run = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)
        if run.returncode == 0:
            ok(f"promtool {' '.join(args[:2])} {' '.join(os.path.relpath(path, ROOT) for path in args[2:])}")
        else:
            fail(f"promtool {' '.join(args)}:\n{run.stdout}{run.stderr}")

    dashboard = json.load(open(DASHBOARD))
    documented = open(OBSERVABILITY).read()
    runbooks = anchors(open(OPERATIONS).read())

    # 2. The replicas and the fake Apple.
    fake = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeAppStore)
    threading.Thread(target=fake.serve_forever, daemon=True).start()

    demo_port, demo_operations_port, api_port = free_port(), free_port(), free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("OFFER_SIGNER_")}
    base["LOG_FORMAT"] = "json"
    demo = start("demo", [binary, "serve", "--demo"],
                 dict(base, OFFER_SIGNER_PORT=str(demo_port), OFFER_SIGNER_ADMIN_PORT=str(demo_operations_port)))
    key = subprocess.run([binary, "keys", "generate"], capture_output=True, text=True, check=True, timeout=30).stdout
    with open(os.path.join(work, "policy.yaml"), "w") as f:
        f.write(POLICY)
    replica = start("replica", [binary, "serve"], dict(
        base, OFFER_SIGNER_PORT=str(api_port), OFFER_SIGNER_POLICY=os.path.join(work, "policy.yaml"),
        OFFER_SIGNER_KEY_OBSERVE001=key, OFFER_SIGNER_ISSUER_ID="11111111-2222-3333-4444-555555555555",
        OFFER_SIGNER_DATABASE_URL=f"sqlite:{os.path.join(work, 'store.sqlite')}", OFFER_SIGNER_API_KEYS=f"check:{API_KEY}",
        OFFER_SIGNER_RATE_LIMIT_CUSTOMER="5/min", OFFER_SIGNER_ENVIRONMENTS="Sandbox",
        OFFER_SIGNER_APP_STORE_API_KEY_ID="OBSERVE001", OFFER_SIGNER_APP_STORE_API_URL=f"http://127.0.0.1:{fake.server_address[1]}",
        OFFER_SIGNER_APP_STORE_API_TIMEOUT="500ms"))
    wait_until("serve --demo ready", lambda: http_status(f"http://127.0.0.1:{demo_port}/readyz") == 200, demo, 60)
    wait_until("serve ready", lambda: http_status(f"http://127.0.0.1:{api_port}/readyz") == 200, replica, 60)
    status, _ = request(demo_operations_port, "POST", "/admin/keys/reload", headers={"Authorization": "Bearer demo-admin-token"})
    if status != 200:
        fail(f"POST /admin/keys/reload on the demo answered {status}")
    targets = [f"127.0.0.1:{demo_operations_port}", f"127.0.0.1:{api_port}"]
    ok(f"replicas listening: serve --demo (metrics on {targets[0]}), serve (metrics on {targets[1]})")
    traffic_thread = threading.Thread(target=traffic, args=(demo_port, api_port), daemon=True)
    traffic_thread.start()

    # 3. Prometheus.
    prometheus_port = free_port()
    prometheus_url = f"http://127.0.0.1:{prometheus_port}"
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        json.dump({  # JSON is YAML
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [ALERTS],
            "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": targets}]}],
        }, f, indent=2)
    prometheus = start("prometheus", [
        "prometheus", f"--config.file={os.path.join(work, 'prometheus.yml')}", f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
        f"--web.listen-address=127.0.0.1:{prometheus_port}", "--storage.tsdb.retention.time=1d", "--log.level=warn"])
    wait_until("prometheus ready", lambda: http_status(f"{prometheus_url}/-/ready") == 200, prometheus, 30)

    def scraped_enough():
        error, result = query(f'count_over_time(up{{job="{JOB}"}}[1m]) >= 12 and up{{job="{JOB}"}} == 1')
        return error is None and len(result) == len(targets)
    wait_until("12 scrapes of each replica", scraped_enough, prometheus, 40)
    ok(f"prometheus {prometheus_url} scraped both replicas at least 12 times")

    def rules_evaluated():
        groups = api("/api/v1/rules", type="alert")["data"]["groups"]
        return groups and all(not rule.get("lastEvaluation", "0001").startswith("0001") for group in groups for rule in group["rules"])
    wait_until("every rule evaluated", rules_evaluated, prometheus, 10)

    used_metrics = set()

    # 4. The dashboard: variables, then every target of every panel.
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    if variables.get("DS_PROMETHEUS", {}).get("type") != "datasource":
        fail("the dashboard has no DS_PROMETHEUS datasource variable")
    if dashboard.get("schemaVersion", 0) < 39:
        fail(f"the dashboard's schemaVersion is {dashboard.get('schemaVersion')}, not 39 or later")
    for name, wanted in (("job", {JOB}), ("replica", set(targets))):
        definition = variables.get(name, {}).get("definition", "")
        match = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", definition)
        if not match:
            fail(f"dashboard variable {name}: not label_values(…): {definition!r}")
            continue
        used_metrics.update(METRIC_NAME.findall(match.group(1)))
        values = set(api(f"/api/v1/label/{match.group(2)}/values", **{"match[]": substitute(match.group(1))}).get("data", []))
        if wanted <= values:
            ok(f"dashboard variable ${name}: {sorted(values)}")
        else:
            fail(f"dashboard variable ${name} ({definition}) lists {sorted(values)}, not {sorted(wanted)}")

    panel_ids, with_data, allowed_empty = set(), 0, 0
    for panel in dashboard["panels"]:
        if panel["id"] in panel_ids:
            fail(f"panel id {panel['id']} is used twice")
        panel_ids.add(panel["id"])
        if panel["type"] not in ("row", "text") and panel.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
            fail(f"panel {panel['title']!r} does not use the ${{DS_PROMETHEUS}} datasource")
        for target in panel.get("targets", []):
            expression = target["expr"]
            used_metrics.update(METRIC_NAME.findall(expression))
            where = f"panel {panel['title']!r} {target['refId']}"
            error, result = query(substitute(expression))
            if error:
                fail(f"{where}: {error}\n    {substitute(expression)}")
            elif has_number(result):
                with_data += 1
            elif (panel["title"], target["refId"]) in EMPTY_PANELS:
                allowed_empty += 1
                print(f"ok   {where}: evaluates, no data (documented: {EMPTY_PANELS[(panel['title'], target['refId'])]})")
            else:
                fail(f"{where}: {'no series' if not result else 'only NaN'}\n    {substitute(expression)}")
    ok(f"dashboard: {with_data} queries returned data, {allowed_empty} documented as empty on a healthy run")

    # 4b. The labels the dashboard's offer and key panels promise: offers named as the policies list them (bounded:
    # anything else is "unlisted", no offer "none"), every key state on every replica.
    listed = {"winback_50", "retention_30", "loyalty_month", "anyone_10", "unlisted", "none"}
    for metric, wanted in (("offer_signer_offer_signatures_total", {"winback_50", "retention_30", "anyone_10"}),
                           ("offer_signer_eligibility_refusals_total", {"winback_50", "retention_30"})):
        error, result = query(f'sum by (offer) ({metric}{{job="{JOB}"}})')
        offers = {series["metric"].get("offer", "") for series in result}
        if error or not wanted <= offers or not offers <= listed:
            fail(f"{metric} by offer: {error or sorted(offers)}; wanted {sorted(wanted)} among, and nothing but, {sorted(listed)}")
        else:
            ok(f"{metric} by offer: {sorted(offers)}")
    error, result = query(f'offer_signer_keys{{job="{JOB}"}}')
    states = {(series["metric"]["instance"], series["metric"]["state"]): float(series["value"][1]) for series in result}
    if error or any(states.get((target, state)) is None for target in targets for state in ("active", "retired", "revoked")) \
            or any(states[(target, "active")] < 1 for target in targets):
        fail(f"offer_signer_keys: every replica reports active (at least 1), retired and revoked: {error or states}")
    else:
        ok(f"offer_signer_keys by replica and state: {states}")

    # 5. The alert rules, as Prometheus loaded them.
    rules = [rule for group in api("/api/v1/rules", type="alert")["data"]["groups"] for rule in group["rules"]]
    present = {series["metric"]["__name__"] for series in query('count by (__name__) ({__name__=~"(offer_signer|hb|http_server)_.+"})')[1]}
    firing_now = []
    for rule in rules:
        name, expression = rule["name"], rule["query"]
        used_metrics.update(METRIC_NAME.findall(expression))
        if rule.get("health") != "ok":
            fail(f"alert {name}: Prometheus evaluates it with health {rule.get('health')!r}: {rule.get('lastError')}")
        error, result = query(expression)
        if error:
            fail(f"alert {name}: {error}")
            continue
        if result:
            firing_now.append(name)
        missing = sorted(set(METRIC_NAME.findall(expression)) - present)
        if missing:
            fail(f"alert {name} reads metrics Prometheus does not have: {missing}")
        threshold = re.fullmatch(r"(.*\S)\s*(?:>=|<=|>|<|==|!=)\s*[0-9.e+-]+\s*", expression, re.S)
        if threshold:
            error, signal_result = query(threshold.group(1))
            if error:
                fail(f"alert {name}: its quantity does not evaluate: {error}")
            elif not signal_result and name not in EMPTY_SIGNALS:
                fail(f"alert {name}: its quantity returns no series:\n    {threshold.group(1)}")
        if rule["labels"].get("severity") not in SEVERITIES:
            fail(f"alert {name}: severity {rule['labels'].get('severity')!r} is not one of {sorted(SEVERITIES)}")
        annotations = rule.get("annotations", {})
        if not annotations.get("summary") or not annotations.get("description"):
            fail(f"alert {name}: no summary or no description")
        runbook = annotations.get("runbook_url", "")
        if not re.match(r"https?://[^#]+/docs/operations\.md#", runbook) or runbook.split("#", 1)[1] not in runbooks:
            fail(f"alert {name}: runbook_url {runbook!r} names no section of docs/operations.md")
    ok(f"alerts: {len(rules)} rules evaluated without error, each metric present, each with a runbook section; "
       f"conditions true on this run (the fake Apple's outages and the 429s): {', '.join(sorted(firing_now)) or 'none'}")
    if len(rules) < 10:
        fail(f"Prometheus loaded only {len(rules)} alert rules from {ALERTS}")

    # 6. Every metric used is documented.
    base_names = {re.sub(r"_(bucket|sum|count)$", "", m) for m in used_metrics}
    undocumented = sorted(m for m in base_names if f"`{m}`" not in documented)
    if undocumented:
        fail(f"metrics used but not in docs/observability.md's table: {undocumented}")
    else:
        ok(f"{len(base_names)} metrics used by the dashboard and the rules, each in docs/observability.md")
except (Exception, SystemExit) as error:
    fail(f"{type(error).__name__}: {error}")
finally:
    signal.alarm(0)
    stop_traffic.set()
    for name, process in reversed(processes):
        if process.poll() is None:
            process.terminate()
    for name, process in reversed(processes):
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    try:
        fake.shutdown()
    except NameError:
        pass

print(f"observability-check: {'FAILED, ' + str(len(failures)) + ' failure(s)' if failures else 'passed'}")
scratch.finish(work, failed=bool(failures))
sys.exit(1 if failures else 0)
