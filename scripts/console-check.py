#!/usr/bin/env python3
"""The console (docs/console.md) in a real browser: starts `offer-signer serve --demo` with an admin token, makes a
little history through the demo's own routes (signatures, a redemption-shaped notification, a retention answer),
signs in through the form with Debian's Chromium (headless, a phone's width) driven by Selenium, opens every page,
and checks that no page logs a browser console error (a CSP violation is one), that the token never shows in a
URL, that the offers chart's bars carry the numbers of GET /admin/outcomes/daily, and that a key activated through
the Keys form is in the audit under the admin's name. Saves a screenshot of each page in the directory given.

    apt-get install -y chromium chromium-driver
    python3 -m venv /tmp/console-venv && /tmp/console-venv/bin/pip install selenium
    /tmp/console-venv/bin/python scripts/console-check.py /tmp/console-screenshots [--binary .build/debug/offer-signer]

Exits 1 when a check fails.
"""
import argparse
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

parser = argparse.ArgumentParser()
parser.add_argument("output", help="the directory for the screenshots")
parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", ".build", "debug", "offer-signer"))
parser.add_argument("--chromium", default="/usr/bin/chromium")
parser.add_argument("--driver", default="/usr/bin/chromedriver")
arguments = parser.parse_args()
os.makedirs(arguments.output, exist_ok=True)

failures = []


def check(ok, label):
    print(("ok   " if ok else "FAIL ") + label)
    if not ok:
        failures.append(label)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method, path, body=None, token=None):
    request = urllib.request.Request(f"{base}{path}", method=method, data=None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode()))
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


port = free_port()
base = f"http://127.0.0.1:{port}"
token = secrets.token_hex(24)
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1", OFFER_SIGNER_ADMIN_TOKENS=f"operator:{token}")
env.pop("OFFER_SIGNER_DATABASE_URL", None)
log = open(os.path.join(arguments.output, "server.log"), "wb")
server = subprocess.Popen([arguments.binary, "serve", "--demo"], env=env, stdout=log, stderr=subprocess.STDOUT)
driver = None
try:
    deadline = time.time() + 60
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"offer-signer exited with status {server.returncode}; see server.log")
        try:
            urllib.request.urlopen(f"{base}/readyz", timeout=1)
            break
        except Exception:
            if time.time() > deadline:
                raise RuntimeError("offer-signer was not ready within 60 s")
            time.sleep(0.2)

    # A little history: signatures, an App Store notification and a retention answer, through the demo's routes.
    for user in ("lapsed-user", "leaving-user"):
        try:
            call("POST", "/v1/offers/sign", {"productIdentifier": "com.example.monthly", "offerIdentifier": "winback_50", "applicationUsername": user})
        except urllib.error.HTTPError as error:
            print(f"note: signing for {user}: {error.code}")
    call("POST", "/v1/notifications/appstore", call("POST", "/demo/notifications", {"applicationUsername": "loyal-user", "event": "auto-renew-off"}))
    call("POST", "/v1/retention/appstore", call("POST", "/demo/retention", {"applicationUsername": "leaving-user"}))

    options = webdriver.ChromeOptions()
    options.binary_location = arguments.chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=412,915"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(arguments.driver), options=options)
    driver.set_page_load_timeout(30)

    visited = []

    def open_page(path, name, signed_in=True):
        driver.get(f"{base}{path}")
        visited.append(driver.current_url)
        errors = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        check(not errors, f"{name}: no browser console error {[entry.get('message') for entry in errors] if errors else ''}")
        if signed_in:
            check("/console/login" not in driver.current_url, f"{name}: served with the session ({driver.current_url})")
        driver.save_screenshot(os.path.join(arguments.output, f"{name}.png"))

    open_page("/console", "redirect", signed_in=False)
    check(driver.current_url.endswith("/console/login"), "without a session, /console leads to the sign-in form")
    open_page("/console/login", "sign-in", signed_in=False)
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "form.stack button").click()
    try:
        WebDriverWait(driver, 10).until(lambda d: d.current_url == f"{base}/console")
    except Exception:
        pass
    check(driver.current_url == f"{base}/console", f"signed in, on the overview ({driver.current_url})")
    cookies = {cookie["name"]: cookie for cookie in driver.get_cookies()}
    session = cookies.get("offer_signer_session", {})
    check(session.get("httpOnly") is True and session.get("sameSite") == "Strict" and session.get("path") == "/console", f"the session cookie's flags {session and {k: session.get(k) for k in ('httpOnly', 'sameSite', 'path')}}")

    open_page("/console", "overview")
    check("operator" in driver.page_source, "the overview names the admin")
    open_page("/console/offers", "offers")
    bars = {}
    for bar in driver.find_elements(By.CSS_SELECTOR, "#daily-chart rect[data-value]"):
        bars.setdefault(bar.get_attribute("data-day"), {})[bar.get_attribute("data-series")] = int(bar.get_attribute("data-value"))
    daily = json.loads(call("GET", "/admin/outcomes/daily", token=token))
    api = {}
    for day in daily["days"]:
        key = time.strftime("%Y-%m-%d", time.gmtime(day["from"] / 1000))
        api[key] = {"issued": sum(o["issued"] for o in day["offers"]), "redeemed": sum(o["redeemed"] for o in day["offers"])}
    check(bars == api and len(bars) >= 30, f"the chart's {len(bars)} days match GET /admin/outcomes/daily (issued {sum(v['issued'] for v in api.values())})")
    open_page("/console/experiments", "experiments")
    links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "main table a")]
    for index, link in enumerate(links):
        open_page(link.removeprefix(base), f"experiment-{index + 1}")
    open_page("/console/customers", "customer-search")
    open_page("/console/customers?bundleId=com.example.offersigner.demo&customer=loyal-user", "customer")
    check("Signatures issued" in driver.page_source, "the customer page shows the signatures")
    open_page("/console/keys", "keys")
    key = Select(driver.find_element(By.ID, "keyIdentifier")).first_selected_option.get_attribute("value")
    Select(driver.find_element(By.ID, "action")).select_by_value("activate")
    driver.find_element(By.ID, "confirmation").send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "form.stack button").click()
    try:
        WebDriverWait(driver, 10).until(lambda d: "activate done" in d.page_source)
        activated = True
    except Exception:
        activated = False
    check(activated, f"key {key} activated through the form")
    driver.save_screenshot(os.path.join(arguments.output, "keys-after-activate.png"))
    audit = json.loads(call("GET", "/admin/audit?limit=10", token=token))["events"]
    check(any(e["actor"] == "operator" and e["action"] == "key.activate" and e["target"] == key for e in audit), "the activation is audited under the admin's name")
    check(all(token not in url for url in visited) and token not in driver.page_source, "the token is in no URL and no page")
    driver.find_element(By.CSS_SELECTOR, "form.signout button").click()
    try:
        WebDriverWait(driver, 10).until(lambda d: d.current_url.endswith("/console/login"))
    except Exception:
        pass
    check(driver.current_url.endswith("/console/login"), "signed out")
    open_page("/console/keys", "after-sign-out", signed_in=False)
    check(driver.current_url.endswith("/console/login"), "after signing out, pages lead to the sign-in form")
except Exception as error:  # a failure to start or to drive the browser is a failure of the check
    check(False, f"{type(error).__name__}: {error}")
finally:
    if driver:
        driver.quit()
    server.terminate()
    server.wait(timeout=10)

log.close()
with open(os.path.join(arguments.output, "server.log"), "rb") as server_log:
    check(token.encode() not in server_log.read(), "the token is in no line of the server's log")
print(f"{len(failures)} failure(s); screenshots in {arguments.output}")
sys.exit(1 if failures else 0)
