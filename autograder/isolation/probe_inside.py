"""What a process inside a candidate sandbox can see and do; prints one JSON line for autograder.isolation.isolation.

:func:`autograder.isolation.isolation.probe` runs this file's text as ``python -I -S -c SOURCE CONFIG_JSON`` inside a
test sandbox (so nothing of the course kit needs to be visible there) and reads the line it prints:

* ``net``: whether a TCP listener on the host's loopback (``127.0.0.1``) answered -- it must not, from a separate
  network namespace (the check never leaves this machine);
* ``sees_secret``: whether a file the host created outside the sandbox's view is visible -- it must not be;
* ``pid``: this process's pid (small in a new pid namespace);
* ``python``: empty when the kernel's interpreter starts and finds ``ipykernel`` (under the dedicated uid
  ``uid`` when given, as a kernel of a root grader runs), else why not;
* ``nproc_scoped`` (when ``nproc`` is set): whether ``RLIMIT_NPROC`` counts only this sandbox's processes.  The
  host keeps more idle threads running under the same user than the limit tried here, so if the kernel counted
  every process of the user (no user namespace of its own, or a Linux older than 5.14), starting a few
  threads would fail.

Standard library only.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import threading
from typing import Any

_FIND_IPYKERNEL = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('ipykernel') else 3)"


def python_problem(python: str, uid: int | None) -> str:
    """Empty if ``python`` starts (as ``uid`` when given) and finds ipykernel, else the reason."""
    kwargs: dict[str, Any] = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    try:
        proc = subprocess.run([python, "-I", "-c", _FIND_IPYKERNEL], capture_output=True, text=True, timeout=60,
                              cwd="/", **kwargs)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    except subprocess.TimeoutExpired:
        return f"{python} did not start within 60 s"
    if proc.returncode == 3:
        return f"{python} starts but cannot find ipykernel (its site-packages is not readable)"
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return (lines[-1] if lines else f"{python} exited with code {proc.returncode}")[:300]
    return ""


def nproc_scoped(limit: int, threads: int) -> bool:
    """Whether ``threads`` more threads start under ``RLIMIT_NPROC = limit`` (this process keeps the limit)."""
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    stop = threading.Event()
    started = []
    try:
        for _ in range(threads):
            t = threading.Thread(target=stop.wait)
            t.start()
            started.append(t)
    except RuntimeError:  # "can't start new thread"
        return False
    finally:
        stop.set()
        for t in started:
            t.join()
    return True


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    out: dict[str, Any] = {"pid": os.getpid(), "uid": os.getuid()}
    try:
        socket.create_connection(("127.0.0.1", int(cfg["port"])), timeout=2).close()
        out["net"] = True
    except OSError:
        out["net"] = False
    out["sees_secret"] = os.path.exists(cfg["secret"])
    out["python"] = python_problem(cfg["python"], cfg.get("uid"))
    if cfg.get("nproc"):
        out["nproc_scoped"] = nproc_scoped(int(cfg["limit"]), int(cfg["threads"]))
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
