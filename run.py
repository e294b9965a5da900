#!/usr/bin/env python3
"""One entry point for the course kit: sets itself up, then runs what you ask.

    python3 run.py lab              open the course in JupyterLab (creates .venv on first use)
    python3 run.py lab --headless   only serve it (no browser); prints the URL with its token
    python3 run.py test             run the whole test suite
    python3 run.py course ARGS...   the instructor / student CLI (release, grade, check, demo)
    python3 run.py setup            only create or refresh the virtual environment

Needs nothing but Python 3.11+ (with the standard ``venv`` module) and access to PyPI on first use.
The environment lives in ``.venv/`` next to this file and is refreshed whenever ``pyproject.toml``
changes (a hash of it is kept in ``.venv/.dp-course-stamp``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".dp-course-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def _die(msg: str) -> None:
    print(f"run.py: {msg}", file=sys.stderr)
    raise SystemExit(2)


def _stamp() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_env(quiet: bool = False) -> None:
    """Create ``.venv`` and install the package with its dev extra, unless already current."""
    if sys.version_info < (3, 11):
        _die(f"Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    if PY.exists() and STAMP.exists() and STAMP.read_text().strip() == _stamp():
        return
    if not PY.exists():
        print(f"run.py: creating a virtual environment in {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    print("run.py: installing the course kit and its dependencies (first run takes a few minutes) ...",
          flush=True)
    cmd = [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "-e", f"{ROOT}[dev]"]
    if quiet:
        cmd.insert(4, "-q")
    rc = subprocess.call(cmd, cwd=ROOT)
    if rc != 0:
        _die(f"installing dependencies failed (pip exit code {rc}); see the messages above")
    STAMP.write_text(_stamp())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # nbgrader shells out to `alembic`, which lives in the venv's bin: it must be on PATH.
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(VENV)
    env.setdefault("MPLBACKEND", "Agg")
    env.pop("PYTHONHOME", None)
    return env


def _exec(argv: list[str], env: dict[str, str] | None = None) -> int:
    """Run ``argv`` in the repository with the environment's PATH: on POSIX by replacing this process (so
    signals such as Ctrl-C or a supervisor's SIGTERM reach JupyterLab / pytest directly), else as a child."""
    env = _env() if env is None else env
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.chdir(ROOT)
        os.execve(argv[0], argv, env)
    return subprocess.call(argv, cwd=ROOT, env=env)


def cmd_lab(args: argparse.Namespace) -> int:
    ensure_env()
    argv = [str(PY), "-m", "jupyterlab", f"--ServerApp.root_dir={ROOT}",
            "--LabApp.default_url=/lab/tree/notebooks/README.md", f"--port={args.port}"]
    if args.headless:
        argv += ["--no-browser", "--ServerApp.ip=127.0.0.1"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")  # containers and CI machines often run as root
    argv += [a for a in args.jupyter_args if a != "--"]
    env = _env()
    env.pop("MPLBACKEND", None)  # inline plots in the notebooks
    return _exec(argv, env)


def cmd_test(args: argparse.Namespace) -> int:
    ensure_env(quiet=True)
    workers = args.workers or str(min(4, os.cpu_count() or 1))
    argv = [str(PY), "-m", "pytest", "-n", workers, "--dist", "loadgroup", *args.pytest_args]
    return _exec(argv)


def cmd_course(args: argparse.Namespace) -> int:
    ensure_env()
    return _exec([str(BIN / "dp-course"), *args.course_args])


def cmd_setup(args: argparse.Namespace) -> int:
    ensure_env()
    print(f"run.py: environment ready in {VENV}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("lab", help="open the course in JupyterLab")
    p.add_argument("--headless", action="store_true", help="serve only, do not open a browser")
    p.add_argument("--port", type=int, default=8888, help="port to serve on (default 8888)")
    p.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="after --: options for JupyterLab")
    p.set_defaults(func=cmd_lab)
    p = sub.add_parser("test", help="run the whole test suite (extra arguments go to pytest)")
    p.add_argument("--workers", default=None, help="pytest-xdist workers (default: number of cores, at most 4)")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_test)
    p = sub.add_parser("course", help="the dp-course CLI: release, grade, check, demo")
    p.add_argument("course_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_course)
    p = sub.add_parser("setup", help="create or refresh .venv only")
    p.set_defaults(func=cmd_setup)
    args, extra = parser.parse_known_args(argv)
    # options meant for pytest / the course CLI / JupyterLab (e.g. `run.py test -x -k pld`) pass through
    if extra:
        if args.command == "test":
            args.pytest_args = [*extra, *args.pytest_args]
        elif args.command == "course":
            args.course_args = [*extra, *args.course_args]
        elif args.command == "lab":
            args.jupyter_args = [*extra, *args.jupyter_args]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
