"""Runs the README's commands against a live `offer-signer` and checks that every command prints what the README
says it prints, modulo what changes on every run (nonces, timestamps, signatures, identifiers).

    python3 IntegrationTests/readme-check.py .build/debug/offer-signer

The quick start is the README's text between `<!-- quickstart:begin -->` and `<!-- quickstart:end -->`; in its
```console blocks a line starting with `$ ` is a command (continued by a trailing backslash) and the lines after
it, up to the next command, are its output. A block right after `<!-- quickstart:second-run -->` shows what some
of those commands print once the quick start has run on the same demo (the win-back cap); it holds only commands
the quick start runs before it. The quick start runs twice in a row against one `serve --demo`, every block in
order: the first time every command must print what its block shows; the second time, a command of a second-run
block must print what that block shows, and every other command what its own block shows, as the README says.

The block between `<!-- securing:begin -->` and `<!-- securing:end -->` ("Securing it") runs as a script with a
bundle identifier and a generated key in the environment, as "Running it for real" sets them: it must print a
signed legacy bundle, and the same request without the API key must get 401.

The block between `<!-- real:begin -->` and `<!-- real:end -->` ("Running it for real") runs as a script with a
generated key in its keys folder and examples/policy.yaml: it must print a bundle signed under the policy (a
customer-service grant, then the offer it allows), and the same request again must get 403.

http://127.0.0.1:8080 is replaced by the address of the server under test.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

binary = os.path.abspath(sys.argv[1])
readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")).read()


def between(text, begin, end):
    if begin not in text or end not in text:
        raise SystemExit(f"the README has no {begin} … {end} section")
    return text.split(begin, 1)[1].split(end, 1)[0]


def parse(block):
    """(command, output) pairs of one ```console block."""
    steps, command, output, continued = [], None, [], False
    for line in block.splitlines():
        if continued:
            command += "\n" + line
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            if command is not None:
                steps.append((command, "\n".join(output)))
            command, output, continued = line[2:], [], line.endswith("\\")
        else:
            output.append(line)
    if command is not None:
        steps.append((command, "\n".join(output)))
    return steps


def normalize(text):
    text = re.sub(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+", "<jws>", text)
    text = re.sub(r'"signature":"[A-Za-z0-9+/=]+"', '"signature":"<signature>"', text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    text = re.sub(r"\b\d{13}\b", "<ms>", text)
    return re.sub(r"\s+", "", text)


def key(command):
    return re.sub(r"\s+", " ", command.replace("\\\n", " ")).strip()


# The quick start: every step in order, and what the second run prints where the README says it differs.
section = between(readme, "<!-- quickstart:begin -->", "<!-- quickstart:end -->")
steps, second_run = [], {}
for marker, block in re.findall(r"(<!-- quickstart:second-run -->\s*)?```console\n(.*?)```", section, re.S):
    for command, output in parse(block):
        if marker:
            if key(command) not in {key(c) for c, _ in steps}:
                raise SystemExit(f"the second-run block shows a command the quick start does not run before it:\n  $ {command}")
            second_run[key(command)] = output
        steps.append((command, output))
if not steps:
    raise SystemExit("the README's quick start has no commands")
if not second_run:
    raise SystemExit("the README's quick start does not say what a second run prints (<!-- quickstart:second-run -->)")

failures, checks = 0, 0


def report(ok, label, command, expected, actual):
    global failures, checks
    checks += 1
    if ok:
        print(f"ok   {label}$ {command.splitlines()[0][:100]}")
    else:
        failures += 1
        print(f"FAIL {label}$ {command}\n  README shows: {expected}\n  it printed:   {actual.strip()}")


port = harness.free_port()
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1", PATH=os.path.dirname(binary) + os.pathsep + os.environ.get("PATH", ""))
env.pop("OFFER_SIGNER_DATABASE_URL", None)
server = harness.start_server(binary, env, args=("serve", "--demo"))
# The quick start's `mktemp -d` folders go to a scratch TMPDIR removed afterwards, not to the machine's /tmp.
scratch = tempfile.TemporaryDirectory(prefix="offer-signer-readme-quickstart-")
env["TMPDIR"] = scratch.name
try:
    for run in (1, 2):
        for command, shown in steps:
            expected = second_run.get(key(command), shown) if run == 2 else shown
            shell = command.replace("http://127.0.0.1:8080", f"http://127.0.0.1:{port}")
            actual = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60, env=env).stdout
            report(normalize(actual) == normalize(expected), f"run {run}  ", command, expected, actual)
finally:
    server.terminate()
    server.wait(timeout=10)
    scratch.cleanup()

# "Securing it": the block as a script, in a folder of its own (serve's default SQLite file lands there).
block = between(readme, "<!-- securing:begin -->", "<!-- securing:end -->")
script = re.search(r"```sh\n(.*?)```", block, re.S).group(1)
port = harness.free_port()
key_id = "READMECHK1"
env = {name: value for name, value in os.environ.items() if not name.startswith("OFFER_SIGNER_")}
env.update(PATH=os.path.dirname(binary) + os.pathsep + os.environ.get("PATH", ""), OFFER_SIGNER_PORT=str(port),
           OFFER_SIGNER_BUNDLE_ID="com.example.app",
           **{f"OFFER_SIGNER_KEY_{key_id}": subprocess.run([binary, "keys", "generate"], capture_output=True, text=True, check=True).stdout})
unauthenticated = (f"echo; curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/v1/offers/sign -H 'Content-Type: application/json' "
                   """-d '{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"someone"}'""")
with tempfile.TemporaryDirectory(prefix="offer-signer-readme-") as folder:
    shell = ('trap \'kill $(jobs -p) 2>/dev/null; wait\' EXIT\n'
             + script.replace("http://127.0.0.1:8080", f"http://127.0.0.1:{port}") + unauthenticated + "\n")
    result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120, env=env, cwd=folder)
lines = result.stdout.strip().splitlines()
try:
    bundle = json.loads(lines[0])
    signed = (bundle.get("format"), bundle.get("bundleIdentifier"), bundle.get("keyIdentifier"), bundle.get("applicationUsername")) == \
        ("legacy", "com.example.app", key_id, "8c1d6a9e-0b2f-4c3d-9e8f-1a2b3c4d5e6f") and bool(bundle.get("signature"))
except (IndexError, ValueError):
    signed = False
report(signed, "securing ", script.strip(), "a signed legacy bundle for com.example.app", result.stdout + result.stderr[-2000:])
report(lines[-1:] == ["401"], "securing ", "the same request without the API key", "401", lines[-1] if lines else "")

# "Running it for real": the block as a script, with a generated key in its keys folder and the repository's
# examples/policy.yaml: it must print a bundle signed under the policy with that key, and the same request again
# must be refused (the grant is spent).
block = between(readme, "<!-- real:begin -->", "<!-- real:end -->")
script = re.search(r"```sh\n(.*?)```", block, re.S).group(1)
port = harness.free_port()
key_id = "READMEREAL"
repository = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
env = {name: value for name, value in os.environ.items() if not name.startswith("OFFER_SIGNER_")}
env.update(PATH=os.path.dirname(binary) + os.pathsep + os.environ.get("PATH", ""), OFFER_SIGNER_PORT=str(port))
again = (f"\necho; curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/v1/offers/sign -H \"Authorization: Bearer $BACKEND_KEY\" "
         """-H 'Content-Type: application/json' -d '{"productIdentifier":"com.example.monthly","offerIdentifier":"sorry_free_month","applicationUsername":"first-customer"}'""")
with tempfile.TemporaryDirectory(prefix="offer-signer-readme-real-") as folder:
    keys = os.path.join(folder, "keys")
    os.mkdir(keys)
    subprocess.run([binary, "keys", "generate", "--output", os.path.join(keys, f"SubscriptionKey_{key_id}.p8")], check=True, capture_output=True)
    shell = ('trap \'kill $(jobs -p) 2>/dev/null; wait\' EXIT\n'
             + script.replace("http://127.0.0.1:8080", f"http://127.0.0.1:{port}")
             .replace("/secure/offer-signer-keys", keys).replace("examples/policy.yaml", os.path.join(repository, "examples", "policy.yaml"))
             + again + "\n")
    result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120, env=env, cwd=folder)
lines = result.stdout.strip().splitlines()
try:
    bundle = json.loads(lines[0])
    signed = (bundle.get("format"), bundle.get("bundleIdentifier"), bundle.get("keyIdentifier"), bundle.get("offerIdentifier"), bundle.get("applicationUsername")) == \
        ("legacy", "com.example.app", key_id, "sorry_free_month", "first-customer") and bool(bundle.get("signature"))
except (IndexError, ValueError):
    signed = False
report(signed, "for real ", script.strip(), "a bundle signed under examples/policy.yaml with the folder's key", result.stdout + result.stderr[-2000:])
report(lines[-1:] == ["403"], "for real ", "the same request again (the grant is spent)", "403", lines[-1] if lines else "")

print(f"\n{failures} of {checks} README check(s) failed" if failures else
      f"\nall {checks} README checks print what the README says: the quick start twice ({len(steps)} commands each), \"Securing it\" and \"Running it for real\"")
sys.exit(1 if failures else 0)
