#!/usr/bin/env python3
"""One entry point for the course kit: sets itself up, then runs what you ask.

    python3 run.py lab              open the course in JupyterLab (creates .venv on first use)
    python3 run.py lab --headless   only serve it (no browser); prints the URL with its token
    python3 run.py lab --instructor OUTPUT   hand-grade a grading run: nbgrader's Formgrader on OUTPUT
                                    (= dp-course formgrade OUTPUT; OUTPUT is what dp-course grade -o wrote)
    python3 run.py lab --instructor the course with nbgrader's Create Assignment toolbar (writing lectures)
    python3 run.py test             run the whole test suite (installs the developer tools, chromium and Pyodide's core)
    python3 run.py course ARGS...   the instructor / student CLI (dp-course: release, grade, formgrade, feedback,
                                    report, check, ...); paths are relative to where you type it
    python3 run.py site [-o DIR]    the course site: every lecture executed, as HTML that reads offline
    python3 run.py lite [-o DIR]    a JupyterLite site: the course in the browser, nothing to install
    python3 run.py binder [--write] this repository's Binder link (from its git remote); --write: README badge
    python3 run.py fetch-pyodide    download Pyodide's core (npm) and the kernel's packages (PyPI), hash-checked,
                                    into .cache/pyodide/: `run.py lite --pyodide` then starts Python with no CDN
    python3 run.py setup [--dev]    only create or refresh the virtual environment

Needs nothing but Python 3.11+ (with the standard ``venv`` module) and access to PyPI on first use.
The environment lives in ``.venv/`` next to this file: ``lab``, ``course`` and ``site`` install the
course's runtime dependencies only; ``test`` and ``lite`` add the developer extras.  It is refreshed
whenever ``pyproject.toml`` changes (a hash of it is kept in ``.venv/.dp-course-stamp``); pip's messages
go to ``.venv/setup.log``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: ensure_env says so clearly before anything needs it
    tomllib = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".dp-course-stamp"
SETUP_LOG = VENV / "setup.log"
APT_LOG = VENV / "apt-chromium.log"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
JUPYTER_CONFIG = ROOT / "jupyter_config"
CHROMIUM = Path("/usr/bin/chromium")
LITE_VENV = ROOT / ".venv-lite"


def _die(msg: str) -> None:
    print(f"run.py: {msg}", file=sys.stderr)
    raise SystemExit(2)


def _project_hash() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def _installed_extras() -> set[str] | None:
    """The extras installed for the current ``pyproject.toml``, or None when the environment is stale."""
    if not (PY.exists() and STAMP.exists()):
        return None
    digest, _, extras = STAMP.read_text().strip().partition(" ")
    return {e for e in extras.split(",") if e} if digest == _project_hash() else None


def ensure_env(extras: tuple[str, ...] = ()) -> None:
    """Create ``.venv`` and install the package (with ``extras``) unless it is already current.

    One progress line; pip's output goes to ``.venv/setup.log`` (its tail is shown when pip fails).
    """
    if sys.version_info < (3, 11):  # noqa: UP036 - run.py must say so on an older python3
        _die(f"Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    have = _installed_extras()
    if have is not None and set(extras) <= have:
        return
    want = sorted(set(extras) | (have or set()))
    if not PY.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    what = "the course kit" + (f" with its {' and '.join(want)} tools" if want else "")
    print(f"run.py: installing {what} into .venv (first run takes a few minutes; log: {SETUP_LOG}) ...",
          flush=True)
    target = f"{ROOT}[{','.join(want)}]" if want else str(ROOT)
    cmd = [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", "-e", target]
    with open(SETUP_LOG, "w") as log:
        rc = subprocess.call(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        tail = SETUP_LOG.read_text(errors="replace").splitlines()[-15:]
        _die("installing the dependencies failed (pip exit code {}); the end of {}:\n  {}".format(
            rc, SETUP_LOG, "\n  ".join(tail)))
    STAMP.write_text(f"{_project_hash()} {','.join(want)}\n")


def _lite_requirements() -> list[str]:
    """The ``lite`` extra of ``pyproject.toml``."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["lite"]


def ensure_lite_env() -> None:
    """Create ``.venv-lite`` with the JupyterLite build tools only (the ``lite`` extra), unless current.

    A separate environment: jupyterlite's lab extensions break a JupyterLab in the same environment (console
    errors), and the site must not pick up the instructor's extensions (nbgrader) from it.
    """
    if sys.version_info < (3, 11):  # noqa: UP036 - run.py must say so on an older python3
        _die(f"Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    reqs = _lite_requirements()
    stamp, py = LITE_VENV / ".dp-course-stamp", LITE_VENV / BIN.name / PY.name
    digest = hashlib.sha256("\n".join(reqs).encode()).hexdigest()
    if py.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return
    if not py.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(LITE_VENV)
    log_path = LITE_VENV / "setup.log"
    print(f"run.py: installing the JupyterLite build tools into .venv-lite (log: {log_path}) ...", flush=True)
    with open(log_path, "w") as log:
        rc = subprocess.call([str(py), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
                              *reqs], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        _die("installing the JupyterLite tools failed (pip exit code {}); the end of {}:\n  {}".format(
            rc, log_path, "\n  ".join(tail)))
    stamp.write_text(digest + "\n")


def _can_apt() -> list[str] | None:
    """The prefix to run apt-get with (``[]`` as root, ``["sudo", "-n"]`` with passwordless sudo), or None."""
    if not shutil.which("apt-get") or not hasattr(os, "geteuid"):
        return None
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.call(["sudo", "-n", "true"], stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL) == 0:
        return ["sudo", "-n"]
    return None


def ensure_chromium() -> None:
    """Install Debian's ``chromium`` for the browser test when missing and this user may (root / sudo -n).

    Quiet: one line, apt's output in ``.venv/apt-chromium.log``.  When it cannot be installed the browser
    test skips with the reason (and fails in CI, where ``DP_COURSE_CI=1``).
    """
    if CHROMIUM.exists() or os.environ.get("DP_COURSE_NO_APT") == "1":
        return
    prefix = _can_apt()
    if prefix is None:
        print("run.py: chromium is missing and this user cannot install it (no apt-get as root or via sudo -n); "
              "the browser test will be skipped", flush=True)
        return
    print(f"run.py: installing chromium for the browser test (log: {APT_LOG}) ...", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = [*prefix, "apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
    with open(APT_LOG, "w") as log:
        ok = subprocess.call(install, stdout=log, stderr=subprocess.STDOUT, env=env) == 0
        if not ok:  # the package lists may be missing or stale
            ok = (subprocess.call([*prefix, "apt-get", "update", "-q"], stdout=log, stderr=subprocess.STDOUT,
                                  env=env) == 0
                  and subprocess.call(install, stdout=log, stderr=subprocess.STDOUT, env=env) == 0)
    if not ok or not CHROMIUM.exists():
        print(f"run.py: could not install chromium (see {APT_LOG}); the browser test will be skipped", flush=True)


def ensure_pyodide() -> None:
    """Download Pyodide's core and the kernel's packages for the JupyterLite browser test (``tools/fetch_pyodide.py``:
    standard library only, hash-checked, into ``.cache/pyodide``); what is already there with the right hash is
    not downloaded again.  Quiet; a failure (no network) is reported in one line and the test that needs them skips
    saying so (fails in CI)."""
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "fetch_pyodide.py")], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"run.py: could not fetch Pyodide ({proc.stderr.strip()[-300:]}); the browser test that starts Python "
              "in JupyterLite will be skipped", flush=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # nbgrader shells out to `alembic`, which lives in the venv's bin: it must be on PATH.
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(VENV)
    env.setdefault("MPLBACKEND", "Agg")
    env.pop("PYTHONHOME", None)
    return env


def lab_env(instructor: bool = False) -> dict[str, str]:
    """Environment of a JupyterLab session: the course's config folders first on ``JUPYTER_CONFIG_PATH``."""
    env = _env()
    env.pop("MPLBACKEND", None)  # inline plots in the notebooks
    folders = [JUPYTER_CONFIG / ("instructor" if instructor else "student"), JUPYTER_CONFIG / "common"]
    rest = [p for p in env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([*map(str, folders), *rest])
    return env


def lab_argv(port: int, headless: bool) -> list[str]:
    """The JupyterLab command line of ``run.py lab``."""
    argv = [str(PY), "-m", "jupyterlab", f"--ServerApp.root_dir={ROOT}",
            "--LabApp.default_url=/lab/tree/notebooks/README.md",
            f"--LabApp.app_settings_dir={JUPYTER_CONFIG / 'lab_settings'}", f"--port={port}"]
    if headless:
        argv += ["--no-browser", "--ServerApp.ip=127.0.0.1"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")  # containers and CI machines often run as root
    return argv


def _exec(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = ROOT) -> int:
    """Run ``argv`` in ``cwd`` (the repository by default; ``None``: where the command was typed) with the
    environment's PATH: on POSIX by replacing this process (so signals such as Ctrl-C or a supervisor's SIGTERM
    reach JupyterLab / pytest directly), else as a child."""
    env = _env() if env is None else env
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        if cwd is not None:
            os.chdir(cwd)
        os.execve(argv[0], argv, env)
    return subprocess.call(argv, cwd=cwd, env=env)


def _needs_instructor_kit(what: str) -> None:
    """Stop with a clear message in a student copy (``dp-course student-copy``), which has no grader."""
    if not (ROOT / "autograder").is_dir():
        _die(f"`{what}` is an instructor command and this is a student copy of the course (no autograder/); "
             "use `python3 run.py lab` to open the notebooks")


def formgrade_argv(output: str, port: int, headless: bool, extra: list[str]) -> list[str]:
    """The ``dp-course formgrade`` command of ``run.py lab --instructor OUTPUT`` (``OUTPUT`` taken relative to the
    folder the command was typed in: run.py itself runs in the repository)."""
    target = Path(output).expanduser().resolve()
    return [str(BIN / "dp-course"), "formgrade", str(target), "--port", str(port),
            *(["--headless"] if headless else []), *(["--", *extra] if extra else [])]


def cmd_lab(args: argparse.Namespace) -> int:
    ensure_env()
    extra = [a for a in args.jupyter_args if a != "--"]
    if args.instructor:  # a grading run's output folder: the Formgrader on it
        return _exec(formgrade_argv(args.instructor, args.port, args.headless, extra))
    if args.instructor is not None:
        print("run.py: instructor tools for writing lectures (Create Assignment); to hand-grade a grading run, "
              "pass its output folder: python3 run.py lab --instructor OUTPUT", flush=True)
    given = {a.split("=", 1)[0] for a in extra if a.startswith("--")}
    # an option given after `--` replaces run.py's default (traitlets refuses a single-value option twice)
    argv = [a for a in lab_argv(args.port, args.headless) if a.split("=", 1)[0] not in given] + extra
    return _exec(argv, lab_env(args.instructor is not None))


def cmd_test(args: argparse.Namespace) -> int:
    _needs_instructor_kit("run.py test")
    ensure_env(("dev",))
    ensure_lite_env()
    ensure_chromium()
    ensure_pyodide()
    workers = args.workers or str(min(4, os.cpu_count() or 1))
    # one xdist group = one unit of work, handed out in the order tests/conftest.py sorts them (longest first);
    # --durations: every log (CI's included) ends with the slowest tests, to see where the minutes go
    argv = [str(PY), "-m", "pytest", "-n", workers, "--dist", "loadgroup", "--no-loadscope-reorder",
            "--durations=30", *args.pytest_args]
    return _exec(argv)


def cmd_course(args: argparse.Namespace) -> int:
    _needs_instructor_kit("run.py course")
    ensure_env()
    # relative paths in the arguments (SUBMISSIONS, -o DIR, ...) mean what they mean where the command was typed
    return _exec([str(BIN / "dp-course"), *args.course_args], cwd=None)


def cmd_site(args: argparse.Namespace) -> int:
    """The student site (works in a student copy), or with ``--solutions`` the instructors' solutions build."""
    build_args = [a for a in args.build_args if a != "--solutions"]
    if len(build_args) == len(args.build_args):
        ensure_env()
        return _exec([str(PY), str(ROOT / "tools" / "build_site.py"), *build_args])
    _needs_instructor_kit("run.py site --solutions")
    ensure_env()
    return _exec([str(PY), str(ROOT / "tools" / "build_solutions_site.py"), *build_args])


def cmd_lite(args: argparse.Namespace) -> int:
    _needs_instructor_kit("run.py lite")
    ensure_lite_env()
    env = _env()
    env["PATH"] = str(LITE_VENV / BIN.name) + os.pathsep + env["PATH"]
    return _exec([str(LITE_VENV / BIN.name / PY.name), str(ROOT / "tools" / "build_lite.py"), *args.build_args],
                 env)


def cmd_binder(args: argparse.Namespace) -> int:
    """The Binder link and README badge from the repository's own remote (standard library only: no .venv)."""
    return _exec([sys.executable, str(ROOT / "tools" / "binder_link.py"), *args.build_args])


def cmd_fetch_pyodide(args: argparse.Namespace) -> int:
    """Pyodide's core and the kernel's packages into .cache/pyodide (standard library only: no .venv)."""
    return _exec([sys.executable, str(ROOT / "tools" / "fetch_pyodide.py"), *args.build_args])


def cmd_setup(args: argparse.Namespace) -> int:
    ensure_env(("dev",) if args.dev else ())
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
    p.add_argument("--instructor", nargs="?", const="", default=None, metavar="OUTPUT",
                   help="nbgrader's instructor tools, hidden from students: with OUTPUT (the output folder of "
                        "dp-course grade) the Formgrader on that grading run, to mark written answers; without, "
                        "the course with the Create Assignment toolbar")
    p.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="after --: options for JupyterLab")
    p.set_defaults(func=cmd_lab)
    p = sub.add_parser("test", help="run the whole test suite (extra arguments go to pytest)")
    p.add_argument("--workers", default=None, help="pytest-xdist workers (default: number of cores, at most 4)")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_test)
    # no help of its own: `run.py course --help` (and `course grade --help`) is dp-course's help
    p = sub.add_parser("course", add_help=False, help="the dp-course CLI: release, grade, formgrade, report, check, "
                       "demo, ... (--help)")
    p.add_argument("course_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_course)
    p = sub.add_parser("site", add_help=False, help="build the course site: every lecture as HTML that reads "
                       "offline; --solutions for the solutions build (--help)")
    p.add_argument("build_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_site)
    p = sub.add_parser("lite", add_help=False, help="build a JupyterLite site of the course (--help)")
    p.add_argument("build_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_lite)
    p = sub.add_parser("binder", add_help=False, help="print this repository's Binder link; --write puts the badge "
                       "into README.md (--help)")
    p.add_argument("build_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_binder)
    p = sub.add_parser("fetch-pyodide", add_help=False, help="download Pyodide's core and the kernel's packages "
                       "(hash-checked) into .cache/pyodide, for `run.py lite --pyodide` and the browser test (--help)")
    p.add_argument("build_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_fetch_pyodide)
    p = sub.add_parser("setup", help="create or refresh .venv only")
    p.add_argument("--dev", action="store_true", help="also install the developer extras (tests, builds)")
    p.set_defaults(func=cmd_setup)
    args, extra = parser.parse_known_args(argv)
    # options meant for pytest / the course CLI / JupyterLab / a build (e.g. `run.py test -x -k pld`) pass through
    if extra:
        if args.command == "test":
            args.pytest_args = [*extra, *args.pytest_args]
        elif args.command == "course":
            args.course_args = [*extra, *args.course_args]
        elif args.command == "lab":
            args.jupyter_args = [*extra, *args.jupyter_args]
        elif args.command in ("site", "lite", "binder", "fetch-pyodide"):
            args.build_args = [*extra, *args.build_args]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
