"""A check script's scratch folder (its store, its server's log, its keys): removed when the script passes, kept
and named when it fails, so what the server logged can still be read. Standard library only, for the scripts
that run on the system's python3.

    work = scratch.folder("offer-signer-edge-")
    ...
    scratch.finish(work, failed=bool(failures))
"""
import shutil
import sys
import tempfile


def folder(prefix):
    """A new folder under the machine's temporary directory, named with `prefix`."""
    return tempfile.mkdtemp(prefix=prefix)


def finish(path, failed):
    """Remove `path` after a passing run; after a failing one keep it and say where it is."""
    if failed:
        print(f"the run's files are kept in {path}", file=sys.stderr)
    else:
        shutil.rmtree(path, ignore_errors=True)
