#!/usr/bin/env python3
"""`offer-signer config check` as an operator runs it: the settings in force with secrets redacted, the warnings,
exit status 0; on a bad value exit status 78 and the message `serve` stops with; the appAppleId warning said by
`serve` and `config check` only, not by the tools that open the store. Python's standard library only.

    python3 IntegrationTests/config-check.py .build/debug/offer-signer
"""
import os
import subprocess
import sys

import scratch  # IntegrationTests/scratch.py: the run's folder, removed when it passes

binary = os.path.abspath(sys.argv[1])
work = scratch.folder("offer-signer-config-")
failures = 0


def check(condition, what):
    global failures
    print(f"{'ok  ' if condition else 'FAIL'} {what}")
    failures += 0 if condition else 1


def run(*args, env):
    return subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=60)


key = run("keys", "generate", env=dict(os.environ)).stdout
base = {"PATH": os.environ.get("PATH", ""), "LOG_FORMAT": "text", "OFFER_SIGNER_BUNDLE_ID": "com.example.app",
        "OFFER_SIGNER_KEY_ABC123DEFG": key, "OFFER_SIGNER_API_KEYS": "backend:config-check-api-key-0123",
        "OFFER_SIGNER_ADMIN_TOKENS": "ops:config-check-admin-token-0123", "OFFER_SIGNER_DATABASE_URL": f"sqlite:{work}/store.sqlite"}

valid = run("config", "check", env=dict(base, OFFER_SIGNER_BUNDLEID="typo", OFFER_SIGNER_IDLE_TIMEOUT="45"))
version = subprocess.run([binary, "--version"], capture_output=True, text=True)
check(version.returncode == 0 and version.stdout.strip().count(".") == 2, f"offer-signer --version prints the release ({version.stdout.strip()})")
check(valid.returncode == 0, f"a valid configuration: exit status 0 ({valid.returncode})")
lines = valid.stdout.splitlines()
check("OFFER_SIGNER_BUNDLE_ID = com.example.app" in lines and "OFFER_SIGNER_IDLE_TIMEOUT = 45" in lines, "set values are shown as NAME = value")
check("OFFER_SIGNER_HOST = 127.0.0.1 (default)" in lines, "unset values are shown with (default)")
check("OFFER_SIGNER_API_KEYS = <redacted>" in lines and "OFFER_SIGNER_ADMIN_TOKENS = <redacted>" in lines, "secrets are redacted")
check("config-check-api-key" not in valid.stdout + valid.stderr and "config-check-admin-token" not in valid.stdout + valid.stderr
      and "PRIVATE KEY" not in valid.stdout + valid.stderr and key.splitlines()[1] not in valid.stdout, "no secret and no key material is printed")
check(any(line.startswith("key ABC123DEFG = active, fingerprint ") for line in lines), "the key by identifier and fingerprint")
check(any("did you mean OFFER_SIGNER_BUNDLE_ID?" in line for line in lines), "a typo is a warning naming the nearest variable")
check(any(line.startswith("warning: ") and "OFFER_SIGNER_APP_APPLE_ID" in line for line in lines), "config check says the appAppleId warning")
check(not os.path.exists(f"{work}/store.sqlite"), "config check opens no store")

bad = dict(base, OFFER_SIGNER_RETENTION_DEADLINE="2 seconds")
checked = run("config", "check", env=bad)
served = run("serve", env=bad)
message = checked.stderr.strip()
check(checked.returncode == 78 and served.returncode == 78, f"a bad value: exit status 78 for config check and serve ({checked.returncode}, {served.returncode})")
check(message.startswith("cannot start: OFFER_SIGNER_RETENTION_DEADLINE=2 seconds") and message in served.stderr,
      f"config check gives serve's message ({message!r})")

demo = run("config", "check", "--demo", env={"PATH": base["PATH"], "OFFER_SIGNER_PORT": "0"})
check(demo.returncode == 0 and "OFFER_SIGNER_PORT = 0" in demo.stdout.splitlines() and "key DEMOKEY001 = active" in demo.stdout,
      f"config check --demo reads what serve --demo reads ({demo.returncode})")

policy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "policy.yaml")
missing = run("eligibility", "explain", "--username", "user-0001", env=dict(base, OFFER_SIGNER_POLICY=policy))
check(missing.returncode == 64 and "names no store" in missing.stderr and not os.path.exists(f"{work}/store.sqlite"),
      f"a tool that only reads refuses a SQLite store that does not exist, and creates none ({missing.returncode})")
open(f"{work}/store.sqlite", "w").close()  # an empty SQLite file: the store, before the service ever wrote to it
tool = run("eligibility", "explain", "--username", "user-0001", env=dict(base, OFFER_SIGNER_POLICY=policy))
check(tool.returncode == 0, f"eligibility explain runs ({tool.returncode}: {tool.stderr.strip()[:200]})")
check("appAppleId" not in tool.stdout + tool.stderr and "are refused" not in tool.stdout + tool.stderr, "a tool that opens the store does not print the appAppleId warning")


# One server per SQLite file: a second serve on it stops with 78 naming the first's PID; the tools still read it.
import socket
import time
import urllib.request


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


first_port = free_port()
first_log = open(f"{work}/first-serve.log", "w")
first = subprocess.Popen([binary, "serve"], env=dict(base, OFFER_SIGNER_PORT=str(first_port)), stdout=first_log, stderr=subprocess.STDOUT)
deadline = time.monotonic() + 60
up = False
while not up and time.monotonic() < deadline and first.poll() is None:
    try:
        up = urllib.request.urlopen(f"http://127.0.0.1:{first_port}/healthz", timeout=2).status == 200
    except OSError:
        time.sleep(0.2)
check(up, f"a first serve on the SQLite file starts ({first.poll()})")
second = run("serve", env=dict(base, OFFER_SIGNER_PORT=str(free_port())))
check(second.returncode == 78 and f"in use by another offer-signer serve (PID {first.pid})" in second.stderr
      and "OFFER_SIGNER_DATABASE_URL" in second.stderr,
      f"a second serve on the same SQLite file: exit 78 naming the first's PID ({second.returncode}: {second.stderr.strip()[-300:]})")
beside = run("eligibility", "explain", "--username", "user-0001", env=dict(base, OFFER_SIGNER_POLICY=policy))
check(beside.returncode == 0, f"eligibility explain reads the file while the server holds it ({beside.returncode}: {beside.stderr.strip()[:200]})")
first.terminate()
check(first.wait(timeout=30) == 0, "the first serve stops on SIGTERM")
first_log.close()
after = subprocess.Popen([binary, "serve"], env=dict(base, OFFER_SIGNER_PORT=str(free_port())), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
time.sleep(3)
running = after.poll() is None
after.terminate()
_, after_err = after.communicate(timeout=30)
check(running and "in use by another" not in after_err, "once the first has stopped, the next serve takes the file")

# A port already in use: serve stops with 78 and says so, without a cancellation's dump before it.
holder = socket.socket()
holder.bind(("127.0.0.1", 0))
holder.listen()
busy = holder.getsockname()[1]
taken = subprocess.run([binary, "serve", "--demo"], env=dict(base, OFFER_SIGNER_PORT=str(busy), LOG_FORMAT="text"), capture_output=True, text=True, timeout=60)
holder.close()
check(taken.returncode == 78 and "cannot listen on" in taken.stderr and "CancellationError" not in taken.stderr,
      f"a port in use: exit 78 with what to do, no CancellationError ({taken.returncode})")

print(f"\n{failures} check(s) failed" if failures else "\nall config check checks pass")
scratch.finish(work, failed=bool(failures))
sys.exit(1 if failures else 0)
