"""The kernel's first program: runs inside the sandbox (or directly, without one) and becomes the kernel.

:func:`autograder.isolation.sandbox.launch` runs this file's text as ``python -I -S -c SOURCE CONFIG_JSON`` (so nothing
of
the course kit needs to be importable there; standard library only).  In this order it applies the rlimits,
creates the kernel's home (with a copy of the prepared matplotlib cache), hands the home to the dedicated uid
and drops root for good (a root grader), forbids gaining privileges (``PR_SET_NO_NEW_PRIVS``), and ``exec``-s
the kernel with its scrubbed environment.  Trusted code: it runs before any student code.

``CONFIG_JSON`` keys: ``rlimits`` (``{name: value or [soft, hard]}``), ``env``, ``argv``, ``cwd``, ``uid`` and
``gid`` (``None``: keep the user), ``mpl_cache`` (optional).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import sys
from typing import Any

PR_SET_NO_NEW_PRIVS = 38


def set_rlimits(rlimits: dict[str, Any]) -> None:
    """``{"RLIMIT_AS": 123, "RLIMIT_CPU": [soft, hard], ...}``: a number sets both soft and hard limits."""
    for name, value in rlimits.items():
        soft, hard = (value, value) if isinstance(value, int) else value
        resource.setrlimit(getattr(resource, name), (soft, hard))


def drop_root(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` for good, with no supplementary groups; exit if root stays."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        sys.exit("could not drop root")


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[1])
    set_rlimits(cfg["rlimits"])
    home = cfg["env"]["HOME"]
    os.makedirs(home, exist_ok=True)
    if cfg.get("mpl_cache") and os.path.isdir(cfg["mpl_cache"]):
        shutil.copytree(cfg["mpl_cache"], cfg["env"]["MPLCONFIGDIR"], dirs_exist_ok=True)
    if cfg.get("uid") is not None:
        for root, dirs, files in os.walk(home):
            for n in [root] + [os.path.join(root, f) for f in dirs + files]:
                os.lchown(n, cfg["uid"], cfg["gid"])
        drop_root(cfg["uid"], cfg["gid"])
    prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)  # Linux only
    if prctl is not None:
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # setuid binaries cannot raise privileges
    os.chdir(cfg["cwd"])
    os.execve(cfg["argv"][0], cfg["argv"], cfg["env"])
    return 1  # not reached: execve replaced this process


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
