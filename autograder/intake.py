"""Intake: find every submitted notebook, whatever the layout, and check that it can be graded.

The first step of a grading run (:func:`autograder.grading.grade`).  :func:`collect_submissions` matches a
submissions folder (or zip) against the assignments' notebook names (:func:`notebook_names`):

* **layouts**: nbgrader's ``submitted/<student>/<assignment>/<notebook>.ipynb`` (with its ``timestamp.txt``),
  flat LMS downloads (``<student>_<anything>_<notebook>.ipynb``, Canvas/Moodle style, or one folder per
  student), a zip of either, or a ``student_pattern`` of the instructor's;
* **zip**: members are extracted one by one into a private folder, never by their own path; unsafe paths and
  symbolic links are listed as unmatched;
* **duplicates**: the newest file per (student, assignment, notebook) is graded, the others listed;
* **validity**: files over the size cap are never opened; files that are not UTF-8 JSON, or not notebooks, get
  a problem (:class:`~autograder.events.EventKind`) and are graded as the untouched release notebook (zero);
  the others are reviewed (:mod:`autograder.review`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import nbformat
from nbformat.notebooknode import NotebookNode

from .course import SOLUTIONS_DIR, assignments as list_assignments
from .events import EventKind
from .limits import Limits
from .review import changed_test_cells, suspicious_lines

__all__ = ["SubmissionFile", "Intake", "notebook_names", "student_from_prefix", "check_notebook_bytes",
           "collect_submissions"]

_SAFE_ID = re.compile(r"[^A-Za-z0-9_.@-]+")
_IGNORED_NAMES = ("timestamp.txt", "Thumbs.db")


@dataclasses.dataclass
class SubmissionFile:
    """One notebook file found among the submissions."""

    student: str
    assignment: str
    notebook: str
    path: Path                   # where its bytes are (extracted from the zip if needed)
    origin: str                  # its path relative to the submissions folder / inside the zip
    size: int
    sha256: str = ""
    problem: str | None = None   # why it cannot be graded as is (then the release notebook is graded)
    problem_kind: EventKind | None = None
    review: list[str] = dataclasses.field(default_factory=list)  # suspicious lines, for the instructor
    changes: list[str] = dataclasses.field(default_factory=list)  # test cells deleted/duplicated/edited
    mtime: float = 0.0
    timestamp: str | None = None  # nbgrader's timestamp.txt next to the notebook (late penalties)


@dataclasses.dataclass
class Intake:
    """What :func:`collect_submissions` found."""

    files: list[SubmissionFile]
    unmatched: list[tuple[str, str]]      # (path, reason) of files that could not be attributed
    duplicates: list[tuple[str, str]]     # (ignored path, kept path)
    layout: str

    def jobs(self) -> dict[tuple[str, str], list[SubmissionFile]]:
        """The files of each (student, assignment), sorted by notebook; keys sorted."""
        out: dict[tuple[str, str], list[SubmissionFile]] = {}
        for f in self.files:
            out.setdefault((f.student, f.assignment), []).append(f)
        for v in out.values():
            v.sort(key=lambda f: f.notebook)
        return dict(sorted(out.items()))


@dataclasses.dataclass
class _Entry:
    """A file among the submissions, before it is attributed."""

    rel: str                          # path relative to the submissions folder, or inside the zip
    path: Path | None                 # on disk (None: in the zip, or a symbolic link)
    size: int                         # -1: a symbolic link
    mtime: float
    member: zipfile.ZipInfo | None = None


def notebook_names(solutions_dir: Path = SOLUTIONS_DIR,
                   names: Iterable[str] | None = None) -> dict[str, list[str]]:
    """``{assignment: [notebook names]}`` for the given (default: all) assignments of ``solutions_dir``.

    Raises:
        ValueError: a name is not an assignment of ``solutions_dir``.
    """
    names = list(names) if names is not None else list_assignments(solutions_dir)
    out = {}
    for a in names:
        d = Path(solutions_dir) / a
        if not (d / f"{a}.ipynb").is_file():
            raise ValueError(f"assignment must be one of {list_assignments(solutions_dir)}, got {a!r}")
        out[a] = sorted(p.stem for p in d.glob("*.ipynb"))
    return out


def _safe_id(name: str) -> str:
    return _SAFE_ID.sub("_", name).strip("._-")


def student_from_prefix(prefix: str) -> str:
    """Student id from the part of an LMS file name before the notebook name: its first ``_``-separated token.

    ``alice_`` -> ``alice``; ``alice_resubmission_`` -> ``alice``; Canvas ``doejane_late_123456_7890123_``
    -> ``doejane``; Moodle ``Jane Doe_123456_assignsubmission_file_`` -> ``Jane_Doe``.  Ids that contain
    ``_`` need ``student_pattern``.  The result is a safe directory name (ASCII letters, digits, ``_.@-``).
    """
    tokens = [t for t in re.split(r"_+", prefix.strip(" _-.")) if t.strip(" -.")]
    return _safe_id(tokens[0] if tokens else "")


def _match_notebook(stem: str, notebooks: dict[str, list[str]]) -> tuple[str, str, int, int] | None:
    """Find the rightmost (then longest) known notebook name inside ``stem``: (assignment, notebook, start, end)."""
    best = None
    low = stem.lower()
    for assignment, nbs in notebooks.items():
        for nb in nbs:
            start = low.rfind(nb.lower())
            if start < 0:
                continue
            end = start + len(nb)
            key = (end, len(nb))
            if best is None or key > best[0]:
                best = (key, assignment, nb, start, end)
    if best is None:
        return None
    return best[1], best[2], best[3], best[4]


def check_notebook_bytes(data: bytes) -> tuple[EventKind | None, str | None, NotebookNode | None]:
    """(problem kind, problem text, ``None``) for the raw bytes of a file that cannot be graded, else
    (``None``, ``None``, the notebook)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return EventKind.INVALID_JSON, f"not UTF-8 text ({exc.reason} at byte {exc.start})", None
    try:
        json.loads(text)
    except ValueError as exc:
        return EventKind.INVALID_JSON, f"not valid JSON: {str(exc)[:200]}", None
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several types for "JSON but not a notebook"
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return EventKind.NOT_A_NOTEBOOK, f"valid JSON but not a Jupyter notebook: {msg[:200]}", None
    return None, None, nb


def _folder_entries(src: Path) -> list[_Entry]:
    base = src / "submitted" if (src / "submitted").is_dir() else src
    entries = []
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__MACOSX")
        for f in sorted(files):
            p = Path(root) / f
            rel = p.relative_to(base).as_posix()
            if p.is_symlink():
                entries.append(_Entry(rel, None, -1, 0.0))
                continue
            st = p.stat()
            entries.append(_Entry(rel, p, st.st_size, st.st_mtime))
    return entries


def _zip_entries(zf: zipfile.ZipFile) -> list[_Entry]:
    return [_Entry(info.filename, None, info.file_size, dt.datetime(*info.date_time).timestamp(), info)
            for info in zf.infolist() if not info.is_dir()]


def _attribute(entry: _Entry, notebooks: dict[str, list[str]], pattern: re.Pattern[str] | None,
               layouts: set[str], timestamps: dict[tuple[str, str], str]) -> tuple[str, str, str] | str:
    """(student, assignment, notebook) of a file, or why it cannot be attributed (noting the layout it follows,
    and nbgrader's ``timestamp.txt`` next to it)."""
    parts = PurePosixPath(entry.rel).parts
    stem = (parts[-1] if parts else entry.rel)[: -len(".ipynb")]
    student = assignment = nb = None
    if pattern is not None:
        m = pattern.search(entry.rel)
        hit = _match_notebook(stem, notebooks)
        if m and hit:
            student, (assignment, nb) = _safe_id(m.group("student")), hit[:2]
            layouts.add("pattern")
    elif len(parts) >= 3 and parts[-2] in notebooks and stem in notebooks[parts[-2]]:
        student, assignment, nb = _safe_id(parts[-3]), parts[-2], stem
        layouts.add("nbgrader")
        stamp = entry.path.parent / "timestamp.txt" if entry.path is not None else None
        if stamp is not None and stamp.is_file():
            timestamps[(student, assignment)] = stamp.read_text(errors="replace")[:64].strip()
    else:
        hit = _match_notebook(stem, notebooks)
        if hit:
            assignment, nb, start, _ = hit
            # the student is named in the file name, else by the folder it is in (Moodle: one per student)
            student = student_from_prefix(stem[:start])
            if not student and len(parts) > 1:
                student = student_from_prefix(parts[-2] + "_")
            layouts.add("flat")
    if student and assignment and nb:
        return student, assignment, nb
    return "no assignment notebook name in the file name" if not assignment else \
        "no student name before the notebook name"


def _extract(zf: zipfile.ZipFile, entry: _Entry, dest: Path, cap: int) -> int:
    """Copy a zip member to ``dest`` (only when its header claims at most ``cap`` bytes); its size."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    size = entry.size
    if size <= cap:
        assert entry.member is not None
        with zf.open(entry.member) as fin, open(dest, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
            if fout.tell() > cap:  # lying header
                size = fout.tell()
    return size


def _keep_newest(files: list[SubmissionFile]) -> tuple[list[SubmissionFile], list[tuple[str, str]]]:
    """The newest file per (student, assignment, notebook), sorted; and (ignored, kept) pairs of the others."""
    by_key: dict[tuple[str, str, str], SubmissionFile] = {}
    duplicates: list[tuple[str, str]] = []
    for f in sorted(files, key=lambda f: (f.mtime, f.origin)):
        key = (f.student, f.assignment, f.notebook)
        if key in by_key:
            duplicates.append((by_key[key].origin, f.origin))
        by_key[key] = f
    return sorted(by_key.values(), key=lambda f: (f.student, f.assignment, f.notebook)), duplicates


def _check(f: SubmissionFile, limits: Limits, releases: dict[tuple[str, str], NotebookNode] | None) -> None:
    """Hash the file and record why it cannot be graded, or what to review in it."""
    if f.size > int(limits.max_notebook_mb * 1024 * 1024):
        f.problem_kind = EventKind.TOO_LARGE
        f.problem = (f"the file is {f.size / 1e6:.1f} MB, over the limit of {limits.max_notebook_mb:g} MB;"
                     " it was not opened")
        f.sha256 = f"size:{f.size}:{f.mtime}"
        return
    data = Path(f.path).read_bytes()
    f.sha256 = hashlib.sha256(data).hexdigest()
    kind, text, nb = check_notebook_bytes(data)
    if kind:
        f.problem_kind, f.problem = kind, text
    elif nb is not None:
        f.review = suspicious_lines(nb)
        if releases and (f.assignment, f.notebook) in releases:
            f.changes = changed_test_cells(nb, releases[(f.assignment, f.notebook)])


def collect_submissions(src: Path, notebooks: dict[str, list[str]], *, limits: Limits = Limits(),
                        extract_dir: Path | None = None, student_pattern: str | None = None,
                        releases: dict[tuple[str, str], NotebookNode] | None = None) -> Intake:
    """Find and check every submitted notebook under ``src`` (a folder or a ``.zip``).

    Args:
        src: the submissions: nbgrader's ``submitted/`` folder (or the course folder holding it), a flat
            folder of LMS downloads, nested per-student folders, or a zip of any of these.
        notebooks: ``{assignment: [notebook names]}`` (see :func:`notebook_names`).
        limits: ``limits.max_notebook_mb`` is the size above which a file is not opened.
        extract_dir: where to unpack a zip (required for a zip).
        student_pattern: optional regular expression with a named group ``student``, matched against
            the file's path relative to ``src`` (``/``-separated), overriding the built-in rules.
        releases: ``{(assignment, notebook): release notebook}``; when given, deleted, duplicated or edited
            test cells are reported (nbgrader restores them when grading).

    Returns:
        An :class:`Intake`; files that could not be attributed to a student and an assignment notebook are
        listed in ``unmatched`` with the reason.

    Raises:
        ValueError: ``src`` does not exist, is neither a folder nor a zip, or the zip is unsafe to unpack.
    """
    if not Path(src).exists():
        raise ValueError(f"submissions must be an existing folder or .zip file, got {str(src)!r}")
    src = Path(src).resolve()
    pattern = re.compile(student_pattern) if student_pattern else None
    if pattern is not None and "student" not in pattern.groupindex:
        raise ValueError(f"student_pattern must contain a named group (?P<student>...), got {student_pattern!r}")
    cap = int(limits.max_notebook_mb * 1024 * 1024)
    zf = None
    if src.is_file():
        if not zipfile.is_zipfile(src):
            raise ValueError(f"submissions must be a folder or a .zip file, got the file {str(src)!r}")
        if extract_dir is None:
            raise ValueError("extract_dir is required to read a zip of submissions")
        zf = zipfile.ZipFile(src)
        entries, layout_root = _zip_entries(zf), "zip"
    elif src.is_dir():
        entries, layout_root = _folder_entries(src), "folder"
    else:
        raise ValueError(f"submissions must be a folder or a .zip file, got {str(src)!r}")

    files: list[SubmissionFile] = []
    unmatched: list[tuple[str, str]] = []
    layouts: set[str] = set()
    timestamps: dict[tuple[str, str], str] = {}
    try:
        for entry in entries:
            parts = PurePosixPath(entry.rel).parts
            name = parts[-1] if parts else entry.rel
            if name.startswith(".") or "__MACOSX" in parts or name in _IGNORED_NAMES:
                continue
            if entry.rel.startswith("/") or ".." in parts:
                unmatched.append((entry.rel, "unsafe path in the archive"))
                continue
            if entry.size < 0:
                unmatched.append((entry.rel, "symbolic link (ignored)"))
                continue
            if not name.endswith(".ipynb"):
                unmatched.append((entry.rel, "not a .ipynb file"))
                continue
            found = _attribute(entry, notebooks, pattern, layouts, timestamps)
            if isinstance(found, str):
                unmatched.append((entry.rel, found))
                continue
            path, size = entry.path, entry.size
            if zf is not None:
                assert extract_dir is not None
                path = Path(extract_dir) / "files" / f"{len(files):05d}.ipynb"
                size = _extract(zf, entry, path, cap)
            assert path is not None
            files.append(SubmissionFile(*found, path, entry.rel, size, mtime=entry.mtime))
    finally:
        if zf is not None:
            zf.close()

    kept, duplicates = _keep_newest(files)
    for f in kept:
        _check(f, limits, releases)
        f.timestamp = timestamps.get((f.student, f.assignment))
    return Intake(kept, unmatched, duplicates, f"{layout_root}:{'+'.join(sorted(layouts)) or 'none'}")
