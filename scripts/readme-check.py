"""Runs the README's quick start against a live `serve --demo` and checks that every command prints what the
README shows, modulo what changes on every run (nonces, timestamps, signatures, identifiers).

    python3 scripts/readme-check.py .build/debug/offer-signer

The quick start is the README's text between `<!-- quickstart:begin -->` and `<!-- quickstart:end -->`; in its
```console blocks a line starting with `$ ` is a command (continued by a trailing backslash) and the lines after
it, up to the next command, are its output. http://127.0.0.1:8080 is replaced by the demo's address.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

binary = os.path.abspath(sys.argv[1])
readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")).read()
section = readme.split("<!-- quickstart:begin -->", 1)[1].split("<!-- quickstart:end -->", 1)[0]

steps = []
for block in re.findall(r"```console\n(.*?)```", section, re.S):
    command, output, continued = None, [], False
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


def normalize(text):
    text = re.sub(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+", "<jws>", text)
    text = re.sub(r'"signature":"[A-Za-z0-9+/=]+"', '"signature":"<signature>"', text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    text = re.sub(r"\b\d{13}\b", "<ms>", text)
    return re.sub(r"\s+", "", text)


port = harness.free_port()
env = dict(os.environ, OFFER_SIGNER_PORT=str(port), OFFER_SIGNER_HOST="127.0.0.1", PATH=os.path.dirname(binary) + os.pathsep + os.environ.get("PATH", ""))
env.pop("OFFER_SIGNER_DATABASE_URL", None)
server = harness.start_server(binary, env, args=("serve", "--demo"))
failures = 0
try:
    if not steps:
        raise SystemExit("the README's quick start has no commands")
    for command, expected in steps:
        shell = command.replace("http://127.0.0.1:8080", f"http://127.0.0.1:{port}")
        actual = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60, env=env).stdout
        if normalize(actual) == normalize(expected):
            print(f"ok   $ {command.splitlines()[0][:100]}")
        else:
            failures += 1
            print(f"FAIL $ {command}\n  README shows: {expected}\n  it printed:   {actual.strip()}")
finally:
    server.terminate()
    server.wait(timeout=10)
print(f"\n{failures} of {len(steps)} quick-start command(s) differ from the README" if failures else f"\nall {len(steps)} quick-start commands print what the README shows")
sys.exit(1 if failures else 0)
