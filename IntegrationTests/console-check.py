#!/usr/bin/env python3
"""The console (docs/console.md) in a real browser, against `offer-signer serve --demo` as a newcomer starts it:
reads the console's address and sign-in from the demo's log, makes a little history through the demo's routes,
then drives Debian's Chromium (headless, a phone's width) with Selenium: the redirect to the sign-in form, sign-in
with the printed token, every page (overview, offers, experiments, the demo's experiment, policy, a customer, keys)
with no browser console error (a CSP violation is one), the offers chart against GET /admin/outcomes/daily, the
experiment's intervals against GET /admin/experiments/{id}, a dry-run from the policy form (pasted, then uploaded) against
POST /admin/policy/dry-run, a key rotation (DEMOKEY002 activated) through the Keys form found in the audit, the token
in no URL, sign-out. Saves a full-page screenshot of each page in the directory given (and, with --copy-to, the
pages of docs/console.md there). Bounded: 5 minutes at most, explicit waits with generous timeouts.

    apt-get install -y chromium chromium-driver
    python3 -m venv .venv && .venv/bin/pip install -r IntegrationTests/requirements-console.txt
    .venv/bin/python IntegrationTests/console-check.py /tmp/console-screenshots [--binary .build/debug/offer-signer] [--copy-to docs/images/console]

Exits 1 when a check fails.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

parser = argparse.ArgumentParser()
parser.add_argument("output", help="the directory for the screenshots")
parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", ".build", "debug", "offer-signer"))
parser.add_argument("--chromium", default="/usr/bin/chromium")
parser.add_argument("--driver", default="/usr/bin/chromedriver")
parser.add_argument("--copy-to", help="copy the screenshots of docs/console.md's pages here when every check passes")
arguments = parser.parse_args()
os.makedirs(arguments.output, exist_ok=True)

failures = []
LAPTOP, PHONE = (1366, 900), (390, 844)  # the window sizes the layout is checked at
WAIT = 30  # seconds for any page or element: generous, for a slow machine


def check(ok, label):
    print(("ok   " if ok else "FAIL ") + label, flush=True)
    if not ok:
        failures.append(label)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method, path, body=None, token=None, content_type="application/json"):
    data = None if body is None else (body if isinstance(body, bytes) else (body.encode() if isinstance(body, str) else json.dumps(body).encode()))
    request = urllib.request.Request(f"{base}{path}", method=method, data=data)
    request.add_header("Content-Type", content_type)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        return response.read()


def give_up(*_):
    raise TimeoutError("console-check ran out of its 5 minutes")


signal.signal(signal.SIGALRM, give_up)
signal.alarm(300)

port = free_port()
base = f"http://127.0.0.1:{port}"
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1")
for variable in ("OFFER_SIGNER_DATABASE_URL", "OFFER_SIGNER_ADMIN_TOKENS", "OFFER_SIGNER_ADMIN_PORT"):
    env.pop(variable, None)
log_path = os.path.join(arguments.output, "server.log")
log = open(log_path, "wb")
server = subprocess.Popen([arguments.binary, "serve", "--demo"], env=env, stdout=log, stderr=subprocess.STDOUT)
driver = None
browser_scratch = tempfile.TemporaryDirectory(prefix="offer-signer-console-chromium-")
shots = {}
try:
    deadline = time.time() + 120
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"offer-signer exited with status {server.returncode}; see {log_path}")
        try:
            urllib.request.urlopen(f"{base}/readyz", timeout=2)
            break
        except Exception:
            if time.time() > deadline:
                raise RuntimeError("offer-signer was not ready within 120 s")
            time.sleep(0.3)

    # What the demo says about its console: the address and a token that signs in (waiting for the log to be written).
    pattern = re.compile(r"Console: (http://\S+/console) \S+ sign in with the demo's admin token (\S+) \(public, demo only")
    match, deadline = None, time.time() + WAIT
    while match is None and time.time() < deadline:
        match = pattern.search(open(log_path, encoding="utf-8", errors="replace").read())
        if match is None:
            time.sleep(0.3)
    check(match is not None, "the demo prints the console's address and its sign-in")
    console_url, token = (match.group(1), match.group(2)) if match else (f"{base}/console", "demo-admin-token")
    check(console_url == f"{base}/console", f"the printed address is the demo's ({console_url})")

    # A little history of today's on top of the demo's seeded weeks, through the demo's own routes.
    try:
        call("POST", "/v1/offers/sign", {"productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50", "applicationUsername": "lapsed-user"})
    except urllib.error.HTTPError as error:
        print(f"note: signing for lapsed-user: {error.code}")
    call("POST", "/v1/notifications/appstore", call("POST", "/demo/notifications", {"applicationUsername": "loyal-user", "event": "auto-renew-off"}))
    call("POST", "/v1/retention/appstore", call("POST", "/demo/retention", {"applicationUsername": "leaving-user"}))

    options = webdriver.ChromeOptions()
    options.binary_location = arguments.chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=390,844", "--hide-scrollbars"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium's own scratch files (its profile's lock and socket) in a folder removed after the check.
    browser_env = dict(os.environ, TMPDIR=browser_scratch.name)
    for attempt in (1, 2):  # a slow machine sometimes loses Chromium's first start
        try:
            driver = webdriver.Chrome(service=Service(arguments.driver, env=browser_env), options=options)
            break
        except Exception as error:
            if attempt == 2:
                raise
            print(f"note: Chromium did not start ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); trying again")
            time.sleep(2)
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    wait = WebDriverWait(driver, WAIT)
    visited = []

    def screenshot(name):
        """The whole page at a phone's width (`name.png`) and a laptop's (`name-wide.png`): the window made as tall
        as the document (at most 6000 px) for each shot."""
        for suffix, width in (("", PHONE[0]), ("-wide", LAPTOP[0])):
            driver.set_window_size(width, 900)
            height = min(6000, max(900, int(driver.execute_script("return document.documentElement.scrollHeight")) + 140))
            driver.set_window_size(width, height)
            path = os.path.join(arguments.output, f"{name}{suffix}.png")
            driver.save_screenshot(path)
            shots[name + suffix] = path
        driver.set_window_size(*PHONE)

    # Each table box's width against its content's, by the table's first header cells (what a reader sees first).
    MEASURE = """return Array.from(document.querySelectorAll('main .scroll')).map(box => ({
        head: Array.from(box.querySelectorAll('thead th')).slice(0, 3).map(th => th.textContent).join('|'),
        scrollWidth: box.scrollWidth, clientWidth: box.clientWidth,
        wide: box.classList.contains('wide'),
        cue: getComputedStyle(box, '::before').display !== 'none' && getComputedStyle(box, '::before').content.includes('scroll'),
        shadow: getComputedStyle(box).backgroundImage.includes('gradient')}))"""

    def layout(name, wanted):
        """At a laptop's width (1366 x 900) no table box of the page scrolls sideways; at a phone's (390 x 844) every
        box whose table is wider than the screen shows its cue (the "scroll →" hint and the edge shadows)."""
        driver.set_window_size(*LAPTOP)
        boxes = driver.execute_script(MEASURE)
        found = [box["head"] for box in boxes]
        check(all(any(head.startswith(w) for head in found) for w in wanted), f"{name}: the tables {wanted} are on the page ({found})")
        scrolling = [f"{box['head']} ({box['scrollWidth']} > {box['clientWidth']})" for box in boxes if box["scrollWidth"] > box["clientWidth"]]
        check(not scrolling, f"{name} at {LAPTOP[0]} px: no table scrolls sideways {scrolling}")
        driver.set_window_size(*PHONE)
        boxes = driver.execute_script(MEASURE)
        overflowing = [box for box in boxes if box["scrollWidth"] > box["clientWidth"]]
        uncued = [box["head"] for box in overflowing if not (box["cue"] and box["shadow"])]
        check(not uncued, f"{name} at {PHONE[0]} px: each of the {len(overflowing)} tables that scroll shows the cue {uncued}")

    def settled(name, signed_in=True):
        wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
        visited.append(driver.current_url)
        errors = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        check(not errors, f"{name}: no browser console error {[entry.get('message') for entry in errors] if errors else ''}")
        if signed_in:
            check("/console/login" not in driver.current_url, f"{name}: served with the session ({driver.current_url})")
        screenshot(name)

    def open_page(path, name, signed_in=True):
        driver.get(f"{base}{path}")
        settled(name, signed_in)

    def replaced(element):
        """A wait condition: the page that held `element` is gone. Chromium answers a question about an element
        of a page it is leaving either with a stale reference or, mid-navigation, with "Node with given id does not
        belong to the document" (an unknown error to Selenium); both mean the same."""
        def gone(_):
            try:
                element.is_enabled()
                return False
            except StaleElementReferenceException:
                return True
            except WebDriverException as error:
                if "does not belong to the document" in str(error):
                    return True
                raise
        return gone

    def submit(form_selector):
        old = driver.find_element(By.TAG_NAME, "html")
        driver.find_element(By.CSS_SELECTOR, f"{form_selector} button[type=submit]").click()
        wait.until(replaced(old))

    open_page("/console", "redirect", signed_in=False)
    check(driver.current_url.endswith("/console/login"), "without a session, /console leads to the sign-in form")
    open_page("/console/login", "sign-in", signed_in=False)
    driver.find_element(By.ID, "token").send_keys(token)
    submit("form.stack")
    check(driver.current_url == f"{base}/console", f"signed in with the printed token, on the overview ({driver.current_url})")
    cookies = {cookie["name"]: cookie for cookie in driver.get_cookies()}
    session = cookies.get("offer_signer_session", {})
    check(session.get("httpOnly") is True and session.get("sameSite") == "Strict" and session.get("path") == "/console", f"the session cookie's flags {session and {k: session.get(k) for k in ('httpOnly', 'sameSite', 'path')}}")

    open_page("/console", "overview")
    check("demo" in driver.find_element(By.CSS_SELECTOR, "form.signout").text, "the overview names the admin")
    report = json.loads(call("GET", "/admin/outcomes", token=token))
    redeemed = sum(o["redeemed"] for o in report["offers"])
    shown = int(driver.find_element(By.CSS_SELECTOR, "[data-metric=redeemed]").text)
    check(shown == redeemed and redeemed > 0, f"the overview's redemptions are GET /admin/outcomes' ({shown} = {redeemed})")
    check(int(driver.find_element(By.CSS_SELECTOR, "[data-metric=retention-saved]").text) == report["retention"]["saved"] > 0, "the overview's saves are the report's")
    status = driver.find_element(By.ID, "status")
    warnings = [li.get_attribute("data-warning") for li in status.find_elements(By.CSS_SELECTOR, "li[data-warning]")]
    check("ok" not in status.get_attribute("class").split() and "demo" in warnings, f"the overview is not all-green in the demo: it warns {warnings}")
    figures = {name: driver.find_element(By.CSS_SELECTOR, f"[data-metric={name}]").text for name in ("error-rate", "latency-p50", "last-signature", "last-notification", "version", "uptime", "refusal-rate", "redemption-rate")}
    check(figures["version"] and figures["last-signature"].endswith("ago") and figures["last-notification"].endswith("ago") and "%" in figures["error-rate"] and "ms" in figures["latency-p50"],
          f"the overview shows error rate, latency, last signature and notification, version and uptime ({figures})")
    revenue = {b.get_attribute("data-currency"): b.text for b in driver.find_elements(By.CSS_SELECTOR, "[data-metric=revenue] b[data-currency]")}
    currencies = {r["currency"] for o in report["offers"] for r in o["revenue"]}
    check(set(revenue) == currencies and currencies, f"the overview's revenue has one line per currency ({revenue})")
    layout("overview", ["Key|State"])

    open_page("/console/offers", "offers")
    bars = {}
    for bar in driver.find_elements(By.CSS_SELECTOR, "#daily-chart rect[data-value]"):
        bars.setdefault(bar.get_attribute("data-day"), {})[bar.get_attribute("data-series")] = int(bar.get_attribute("data-value"))
    # The console's 30 days are whole UTC days, today's so far the last.
    first_day = (int(time.time()) // 86400 - 29) * 86400 * 1000
    daily = json.loads(call("GET", f"/admin/outcomes/daily?from={first_day}", token=token))
    api = {}
    for day in daily["days"]:
        key = time.strftime("%Y-%m-%d", time.gmtime(day["from"] / 1000))
        api[key] = {"issued": sum(o["issued"] for o in day["offers"]), "redeemed": sum(o["redeemed"] for o in day["offers"])}
    busy = sum(1 for value in api.values() if value["issued"] or value["redeemed"])
    check(bars == api and len(bars) == 30, f"the chart's {len(bars)} days match GET /admin/outcomes/daily (issued {sum(v['issued'] for v in api.values())}, redeemed {sum(v['redeemed'] for v in api.values())})")
    check(busy >= 5, f"the demo's history spreads over {busy} days of the chart")
    layout("offers", ["Offer|Product|Issued"])
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "main .scroll thead th")][:11]
    check(heads[:6] == ["Offer", "Product", "Issued", "Redeemed", "Refunded", "Revenue"], f"the offers table leads with its key columns ({heads})")
    check(all(c.text in ("app", "retention") for c in driver.find_elements(By.CSS_SELECTOR, "main .scroll tbody td:nth-child(10)")), "the offers table names channels app or retention")
    check("experiment" in driver.find_element(By.ID, "revenue-note").text, "the offers page says why an experiment's revenue differs")
    # The range: 7 days, from the selector's link, then the CSV of that table (with the session's cookie).
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.CSS_SELECTOR, "#range a[href$='days=7']").click()
    wait.until(replaced(old))
    settled("offers-7-days")
    week = driver.find_elements(By.CSS_SELECTOR, "#daily-chart rect[data-series=issued]")
    check(7 <= len(week) <= 8 and "Last 7 days" in driver.find_element(By.ID, "range-title").text, f"the 7-day range charts {len(week)} days")
    export = driver.find_element(By.ID, "export").get_attribute("href")
    request = urllib.request.Request(export)
    request.add_header("Cookie", f"offer_signer_session={driver.get_cookie('offer_signer_session')['value']}")
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        csv_text, csv_type = response.read().decode(), response.headers.get("Content-Type", "")
    shown = [int(td.text) for td in driver.find_elements(By.CSS_SELECTOR, "main .scroll tbody td:nth-child(3)")]
    csv_rows = [line.split(",") for line in csv_text.strip().splitlines()]
    check(csv_type.startswith("text/csv") and csv_rows[0][:5] == ["app", "product", "offer", "channel", "issued"]
          and len(csv_rows) - 1 == len(shown) and sum(int(row[4]) for row in csv_rows[1:]) == sum(shown),
          f"the CSV export is the 7-day table shown: {len(csv_rows) - 1} rows, {sum(shown)} issued")

    open_page("/console/experiments", "experiments")
    links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "main table a")]
    check(f"{base}/console/experiments/retention-offer" in links, "the demo's experiment is listed")
    open_page("/console/experiments/retention-offer", "experiment")
    layout("experiment", [])
    experiment = json.loads(call("GET", "/admin/experiments/retention-offer", token=token))
    drawn = {g.get_attribute("data-variant"): [float(g.get_attribute(a)) for a in ("data-value", "data-lower", "data-upper")]
             for g in driver.find_elements(By.CSS_SELECTOR, "#interval-chart g[data-variant]")}
    reported = {v["name"]: [v["rate"]["estimate"], v["rate"]["lower"], v["rate"]["upper"]] for v in experiment["variants"]}
    check(drawn.keys() == reported.keys() and all(abs(a - b) < 1e-9 for name in drawn for a, b in zip(drawn[name], reported[name])),
          f"the experiment's intervals are GET /admin/experiments/retention-offer's ({ {n: round(r[0], 3) for n, r in reported.items()} })")
    check(sum(v["exposed"] for v in experiment["variants"]) > 0 and any(v["redeemed"] for v in experiment["variants"]), "the experiment has customers and redemptions")
    # Issue 42: every metric over the mature customers, and the comparisons with their verdict in words.
    headers = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "main table th")]
    check(all(h in headers for h in ("Mature", "Maturing", "Converted", "Retained", "Realized revenue")), f"the variants' new metrics are shown ({headers})")
    rows = {tr.find_elements(By.TAG_NAME, "td")[0].text.split(" ")[0]: [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in driver.find_elements(By.CSS_SELECTOR, "main table tr") if len(tr.find_elements(By.TAG_NAME, "td")) == 13}
    check(all(rows.get(v["name"], [None] * 13)[4:10] == [str(v[k]) for k in ("mature", "maturing", "redeemed", "renewedAfterOffer", "converted", "retained")]
              for v in experiment["variants"]) and sum(v["mature"] for v in experiment["variants"]) > 0,
          f"the mature, maturing, redeemed, renewed, converted and retained counts are GET /admin/experiments/retention-offer's ({rows})")
    revenue_cells = {name: row[12] for name, row in rows.items()}
    check(all(f"{r['milliunits'] / 1000:.2f} {r['currency']}\n{r['payers']} paying · " in revenue_cells.get(v["name"], "")
              for v in experiment["variants"] for r in v["revenue"]) and any(v["revenue"] for v in experiment["variants"]),
          f"the realized revenue per currency and its payers are GET /admin/experiments/retention-offer's ({revenue_cells})")
    shown = {span.get_attribute("data-comparison"): (span.get_attribute("data-verdict"), span.text)
             for span in driver.find_elements(By.CSS_SELECTOR, "span[data-comparison]")}
    wanted = {f"{c['variant']}-{c['against']}": (c["verdict"], c["summary"]) for c in experiment["comparisons"]}
    check(shown == wanted and len(wanted) == 1 and experiment["correction"] == "Bonferroni",
          f"the comparisons and their verdicts in words are the report's ({list(shown.values())})")
    check("Bonferroni" in driver.find_element(By.TAG_NAME, "main").text, "the page names the correction")

    open_page("/console/policy", "policy")
    text = driver.find_element(By.CSS_SELECTOR, "details pre").get_attribute("textContent")
    check("experiments:" in text and "winback_50" in text, "the policy page shows the policy in force")
    # A candidate the log can replay (no experiment) that narrows the win-back offer to 60 days after lapsing.
    candidate = text.split("\nexperiments:")[0].replace("maxDays: 365", "maxDays: 60") + "\n"
    driver.find_element(By.ID, "candidate").send_keys(candidate)
    days = driver.find_element(By.ID, "days")
    days.clear()
    days.send_keys("30")
    submit("form.wide")
    wait.until(lambda d: d.find_elements(By.ID, "dry-run-result"))
    settled("policy-dry-run")
    result = driver.find_element(By.ID, "dry-run-result")
    answer = json.loads(call("POST", "/admin/policy/dry-run?days=30", candidate, token=token, content_type="application/yaml"))
    fields = {"replayed": "data-replayed", "grantedToRefused": "data-granted-to-refused", "refusedToGranted": "data-refused-to-granted", "changedOffer": "data-changed-offer"}
    form_numbers = {name: int(result.get_attribute(attribute)) for name, attribute in fields.items()}
    check(form_numbers == {name: answer[name] for name in fields} and answer["grantedToRefused"] > 0,
          f"the form's dry-run is POST /admin/policy/dry-run's ({form_numbers})")
    check("winback_50" in result.text, "the dry-run lists the win-back offer's changes")
    # The same candidate uploaded as a file (the form's file input, multipart), the text area emptied.
    candidate_file = os.path.join(arguments.output, "candidate.yaml")
    with open(candidate_file, "w") as file:
        file.write(candidate)
    driver.find_element(By.ID, "candidate").clear()
    driver.find_element(By.ID, "file").send_keys(os.path.abspath(candidate_file))
    submit("form.wide")
    wait.until(lambda d: d.find_elements(By.ID, "dry-run-result"))
    settled("policy-upload")
    result = driver.find_element(By.ID, "dry-run-result")
    uploaded = {name: int(result.get_attribute(attribute)) for name, attribute in fields.items()}
    check(uploaded == form_numbers, f"the uploaded file's dry-run is the same ({uploaded})")
    # "Start from the policy in force": the candidate is its text, the demo's experiments kept; one line changed, it
    # is replayed with the variants the decision log kept (not refused), and the page shows that line's diff.
    driver.find_element(By.ID, "start-from-policy").click()
    wait.until(lambda d: "start=in-force" in d.current_url)
    settled("policy-started")
    area = driver.find_element(By.ID, "candidate")
    prefilled = area.get_attribute("value")
    check(prefilled.strip() == text.strip(), "“Start from the policy in force” fills the candidate with its text, experiments included")
    kept = prefilled.replace("maxDays: 365", "maxDays: 60", 1)
    driver.execute_script("arguments[0].value = arguments[1]", area, kept)
    submit("form.wide")
    wait.until(lambda d: d.find_elements(By.ID, "dry-run-result") or d.find_elements(By.CSS_SELECTOR, "p.error"))
    settled("policy-keep-experiment")
    errors = driver.find_elements(By.CSS_SELECTOR, "p.error")
    check(not errors, f"a candidate keeping the experiments is replayed, not refused {[e.text for e in errors]}")
    if not errors:
        result = driver.find_element(By.ID, "dry-run-result")
        kept_numbers = {name: int(result.get_attribute(attribute)) for name, attribute in fields.items()}
        answer = json.loads(call("POST", "/admin/policy/dry-run?days=30", kept, token=token, content_type="application/yaml"))
        check(kept_numbers == {name: answer[name] for name in fields} and kept_numbers["replayed"] > 0,
              f"its dry-run is POST /admin/policy/dry-run's ({kept_numbers})")
        diff = driver.find_element(By.ID, "candidate-diff")
        check(diff.get_attribute("data-added") == "1" and diff.get_attribute("data-removed") == "1"
              and "maxDays: 60" in diff.find_element(By.CSS_SELECTOR, ".add").text
              and "maxDays: 365" in diff.find_element(By.CSS_SELECTOR, ".del").text,
              "the page shows the candidate's one changed line against the policy in force")

    open_page("/console/customers", "customer-search")
    check(driver.find_element(By.CSS_SELECTOR, "input[name=bundleId]").get_attribute("value") == "com.example.offersigner.demo", "the lookup fills in the one app's bundle ID")
    open_page("/console/customers?bundleId=com.example.offersigner.demo&customer=returning-01", "customer")
    decisions = driver.find_elements(By.CSS_SELECTOR, "#decisions + .scroll tbody tr")
    redemptions = driver.find_elements(By.CSS_SELECTOR, "#redemptions + .scroll tbody tr")
    check(len(decisions) >= 3 and len(redemptions) >= 1, f"the customer page shows decisions ({len(decisions)}) and redemptions ({len(redemptions)})")
    check("cap:cap_reached" in driver.find_element(By.CSS_SELECTOR, "#decisions + .scroll").text, "a refusal is shown with its reasons")
    layout("customer", ["When|Channel|Product", "Purchased|Product|Offer"])
    check("promotional offer" in driver.find_element(By.CSS_SELECTOR, "#redemptions + .scroll").text, "a redemption's offer type is in words")
    check("has not lapsed" in driver.find_element(By.CSS_SELECTOR, "#decisions + .scroll").text or "cap allows" in driver.find_element(By.CSS_SELECTOR, "#decisions + .scroll").text,
          "a refusal's reasons are in words beside rule:code")
    open_page("/console/customers?bundleId=com.example.offersigner.demo&customer=subscriber-02", "customer-retention")
    answers = driver.find_elements(By.CSS_SELECTOR, "#retention + .scroll tbody tr")
    check(len(answers) >= 1, f"the customer page shows the retention answers ({len(answers)})")
    layout("customer-retention", ["Answered|Product"])

    # The Retention Messaging catalogue (docs/retention.md): the demo's policy declares none, and the page says how.
    open_page("/console/retention", "retention")
    check(f"{base}/console/retention" in [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "header nav a")],
          "the navigation links the Retention page")
    check("declares no retention messages" in driver.page_source, "the Retention page says the policy declares no catalogue")
    layout("retention", [])
    open_page("/console/keys", "keys")
    Select(driver.find_element(By.ID, "keyIdentifier")).select_by_value("DEMOKEY002")
    Select(driver.find_element(By.ID, "action")).select_by_value("activate")
    driver.find_element(By.ID, "confirmation").send_keys("DEMOKEY002")
    submit("form.stack")
    settled("keys-after-rotation")
    check("DEMOKEY002: activate done" in driver.page_source, "DEMOKEY002 activated through the Keys form")
    keys = json.loads(call("GET", "/admin/keys", token=token))
    check(keys.get("activeKeyIdentifier") == "DEMOKEY002", f"the rotation serves: the active key is {keys.get('activeKeyIdentifier')}")
    audit = json.loads(call("GET", "/admin/audit?limit=20", token=token))["events"]
    check(any(e["actor"] == "demo" and e["action"] == "key.activate" and e["target"] == "DEMOKEY002" for e in audit), "the rotation is audited under the admin's name")
    check("key.activate" in driver.find_element(By.TAG_NAME, "main").text, "the Keys page's audit shows it")
    layout("keys", ["When|Admin|Action"])
    open_page("/console/offers", "offers-after-rotation")
    marks = [g.get_attribute("data-change") for g in driver.find_elements(By.CSS_SELECTOR, "#daily-chart g[data-change]")]
    check("key.activate" in marks, f"the daily chart marks the key change ({marks})")
    check(all(token not in url for url in visited), "the token is in no URL")
    submit("form.signout")
    check(driver.current_url.endswith("/console/login"), "signed out")
    open_page("/console/keys", "after-sign-out", signed_in=False)
    check(driver.current_url.endswith("/console/login"), "after signing out, pages lead to the sign-in form")
except Exception as error:  # a failure to start or to drive the browser is a failure of the check
    traceback.print_exc()
    check(False, f"{type(error).__name__}: {error}")
finally:
    signal.alarm(0)
    if driver:
        driver.quit()
    browser_scratch.cleanup()
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()

if arguments.copy_to and not failures:
    os.makedirs(arguments.copy_to, exist_ok=True)
    for name in ("overview", "offers", "experiments", "experiment", "policy", "policy-dry-run", "customer", "customer-retention", "keys-after-rotation"):
        shutil.copy(shots[name + "-wide"], os.path.join(arguments.copy_to, f"{name.removesuffix('-after-rotation')}.png"))
    shutil.copy(shots["overview"], os.path.join(arguments.copy_to, "overview-phone.png"))
    print(f"copied the pages' screenshots to {arguments.copy_to}")
print(f"{len(failures)} failure(s); screenshots in {arguments.output}")
sys.exit(1 if failures else 0)
