"""The Binder launch link of this copy of the course, from its own git remote (or one setting), and the README badge.

    python3 run.py binder            print the link and the badge for this repository
    python3 run.py binder --write    also put the badge into README.md (between its binder-badge markers)

Where the repository lives is read from, in this order: the setting ``repository = "<owner>/<name>"`` under
``[tool.dp-course]`` in ``pyproject.toml`` (for a course hosted somewhere its clones do not say), then the
``origin`` remote of the git checkout (``https://github.com/<owner>/<name>(.git)``, ``git@github.com:<owner>/...``
or ``ssh://git@github.com/<owner>/...``).  Binder (mybinder.org) builds GitHub repositories with repo2docker from
``environment.yml`` and ``postBuild``; the link opens JupyterLab on the lecture index.  Without either source
the command says so and changes nothing: the README then keeps its instructions instead of a badge that would
point at somebody else's repository.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
URLPATH = "lab/tree/notebooks/README.md"
BEGIN, END = "<!-- binder-badge: begin (python3 run.py binder --write) -->", "<!-- binder-badge: end -->"
_GITHUB = re.compile(r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)"
                     r"([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100}?)(?:\.git)?/?$")
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")


def setting(root: Path = ROOT) -> str | None:
    """``[tool.dp-course] repository`` of ``pyproject.toml`` (``owner/name``), or None.

    Raises:
        ValueError: the setting is there but is not ``owner/name``.
    """
    value = tomllib.loads((root / "pyproject.toml").read_text()).get("tool", {}).get("dp-course", {}).get("repository")
    if value is None:
        return None
    if not (isinstance(value, str) and _SLUG.match(value)):
        raise ValueError(f"[tool.dp-course] repository in pyproject.toml must be \"<owner>/<name>\" of a GitHub "
                         f"repository, got {value!r}")
    return value


def remote(root: Path = ROOT) -> str | None:
    """``owner/name`` of the checkout's ``origin`` remote when it is on GitHub, else None."""
    try:
        url = subprocess.run(["git", "-C", str(root), "remote", "get-url", "origin"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    m = _GITHUB.match(url)
    return f"{m.group(1)}/{m.group(2)}" if m else None


def launch_url(repository: str) -> str:
    return f"https://mybinder.org/v2/gh/{repository}/HEAD?urlpath={URLPATH}"


def badge(repository: str) -> str:
    return f"[![Binder](https://mybinder.org/badge_logo.svg)]({launch_url(repository)})"


def write_badge(readme: Path, repository: str) -> bool:
    """Put the badge between the README's markers; returns whether the file changed.

    Raises:
        ValueError: the README lacks the markers (they say where the badge goes).
    """
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{readme} must hold the lines {BEGIN!r} and {END!r}: the badge goes between them")
    new = text[:start + len(BEGIN)] + "\n" + badge(repository) + "\n" + text[end:]
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py binder", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="put the badge into README.md")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        repository = setting(args.root) or remote(args.root)
    except ValueError as exc:
        print(f"run.py binder: {exc}", file=sys.stderr)
        return 2
    if repository is None:
        print("run.py binder: this copy has no GitHub `origin` remote and pyproject.toml no [tool.dp-course] "
              "repository = \"<owner>/<name>\" setting: push it to GitHub (or add the setting) first",
              file=sys.stderr)
        return 2
    print(f"Binder link: {launch_url(repository)}\nREADME badge: {badge(repository)}")
    if args.write:
        changed = write_badge(args.root / "README.md", repository)
        print("README.md: badge " + ("written" if changed else "already there"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
