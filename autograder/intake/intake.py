"""Intake: find every submitted notebook, whatever the layout, and check that it can be graded.

The first step of a grading run (:func:`autograder.run.grading.grade`).  :func:`collect_submissions` matches a
submissions folder (or zip) against the assignments' notebook names (:func:`notebook_names`):

* **layouts**: nbgrader's ``submitted/<student>/<assignment>/<notebook>.ipynb`` (with its ``timestamp.txt``),
  flat LMS downloads (``<student>_<anything>_<notebook>.ipynb``, Canvas/Moodle style, or one folder per
  student), a zip of either, or a ``student_pattern`` of the instructor's;
* **untrusted bytes** (:mod:`autograder.intake.untrusted_files`): every file is read with a byte cap, streamed (a zip's
  declared sizes are never trusted), and never through a symbolic link (the file's or a folder's in its path);
  a zip member is copied into a private folder, never by its own path, and so is a folder's file when
  ``extract_dir`` is given (grading reads only those copies).  A corrupt member, a symbolic link, a zip inside
  the submissions, a file over the size cap is *one bad submission*: attributed to its student when its name
  allows, graded as the untouched release notebook (zero) with the reason; the batch goes on.  Unsafe member
  paths (``../x``, absolute) and a folder's files past :data:`MAX_MEMBERS` are listed as unmatched.  A zip of
  submissions that declares more members than that (or a central directory larger than
  :data:`~autograder.intake.untrusted_files.DIRECTORY_BYTES_PER_MEMBER` bytes each), or whose directory holds more
  records than its end record declares, is refused before ``zipfile`` reads its directory
  (:func:`~autograder.intake.untrusted_files.check_zip_directory`), like any unreadable zip: a clear error, nothing
  graded;
* **student ids** (:func:`student_id`): Unicode letters are kept (NFC-normalised, case and accents preserved);
  two different names that still give the same id are both graded, under ids made distinct, and flagged;
* **duplicates**: the newest file per (student, assignment, notebook) is graded, the others listed; at equal
  times the highest copy number wins (``x (1).ipynb`` / ``x-1.ipynb`` over ``x.ipynb``);
* **LMS ids, times, lateness**: :func:`autograder.intake.deadlines.stamp_and_flag`;
* **validity**: files that are not UTF-8 JSON, or not notebooks, get a problem
  (:class:`~autograder.intake.events.EventKind`) and are graded as the untouched release notebook (zero); the others
  are reviewed (:mod:`autograder.intake.review`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath

import nbformat
from nbformat.notebooknode import NotebookNode

from ..course.course import SOLUTIONS_DIR, assignments as list_assignments
from .deadlines import stamp_and_flag
from .events import EventKind
from ..course.limits import Limits
from .lms import copy_number
from .review import changed_test_cells, suspicious_lines
from .student_ids import assign_ids, compile_pattern, name_of, prefix_name, student_from_prefix, student_id
from .untrusted_files import (SymlinkFound, UnreadableFile, check_zip_directory, is_symlink_member, read_member,
                              read_no_follow)

__all__ = ["SubmissionFile", "Intake", "MAX_MEMBERS", "notebook_names", "student_id", "student_from_prefix",
           "check_notebook_bytes", "collect_submissions", "MAX_EXTRACTED_BYTES", "preview_submissions"]

MAX_MEMBERS = 20_000
"""Files read from one submissions folder (the rest are listed as unmatched); a zip of submissions that declares
or holds more members is refused unread."""

MAX_EXTRACTED_BYTES = 4 << 30
"""Bytes extracted from one zip of submissions at most; members past it are bad submissions (too large)."""

_IGNORED_NAMES = ("timestamp.txt", "Thumbs.db")
_UNSAFE = re.compile(r"^(/|[A-Za-z]:)")


@dataclasses.dataclass
class SubmissionFile:
    """One notebook file found among the submissions."""

    student: str
    assignment: str
    notebook: str
    path: Path                   # where its bytes are (a private copy when extracted from a zip or copied)
    origin: str                  # its path relative to the submissions folder / inside the zip
    size: int
    sha256: str = ""
    problem: str | None = None   # why it cannot be graded as is (then the release notebook is graded)
    problem_kind: EventKind | None = None
    review: list[str] = dataclasses.field(default_factory=list)  # suspicious lines, for the instructor
    changes: list[str] = dataclasses.field(default_factory=list)  # test cells deleted/duplicated/edited
    mtime: float = 0.0
    timestamp: str | None = None  # nbgrader's timestamp.txt next to the notebook, else the LMS's time of the file
    name: str = ""               # the student's name as found (NFC), before it was made an id
    flags: list[tuple[EventKind, str]] = dataclasses.field(default_factory=list)  # other things to report
    lms_user_id: str = ""        # Moodle's participant id / Canvas's user id from the file name
    late: bool = False           # after the lecture's due date, or marked LATE by the LMS


@dataclasses.dataclass
class Intake:
    """What :func:`collect_submissions` found."""

    files: list[SubmissionFile]
    unmatched: list[tuple[str, str]]      # (path, reason) of files that could not be attributed
    duplicates: list[tuple[str, str]]     # (ignored path, kept path)
    layout: str
    collisions: list[tuple[str, list[str]]] = dataclasses.field(default_factory=list)  # (id, names sharing it)

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
    size: int                         # as stat or the zip header says (a claim, for a zip)
    mtime: float
    link: str = ""                    # "file" or "folder": a symbolic link (never followed)
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
    except (ValueError, RecursionError) as exc:
        return EventKind.INVALID_JSON, f"not valid JSON: {str(exc)[:200]}", None
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several types for "JSON but not a notebook"
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return EventKind.NOT_A_NOTEBOOK, f"valid JSON but not a Jupyter notebook: {msg[:200]}", None
    return None, None, nb


def _folder_entries(base: Path) -> list[_Entry]:
    """Every file below ``base``; symbolic links (to files or folders) are listed, never followed."""
    entries = []
    for root, dirs, files in os.walk(base):  # os.walk does not descend into linked folders
        for d in sorted(dirs):
            if (Path(root) / d).is_symlink():
                entries.append(_Entry((Path(root) / d).relative_to(base).as_posix(), -1, 0.0, "folder"))
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__MACOSX"
                         and not (Path(root) / d).is_symlink())
        for f in sorted(files):
            p = Path(root) / f
            try:
                st = p.lstat()
            except OSError:  # gone since the folder was listed
                continue
            entries.append(_Entry(p.relative_to(base).as_posix(), st.st_size, st.st_mtime,
                                  "file" if p.is_symlink() else ""))
    return entries


def _member_name(info: zipfile.ZipInfo) -> str:
    """A member's path, ``/``-separated; UTF-8 names packed without the UTF-8 flag (macOS, old tools) decoded."""
    name = info.filename
    if not info.flag_bits & 0x800:
        with contextlib.suppress(UnicodeError):
            name = name.encode("cp437").decode("utf-8")
    return name.replace("\\", "/")


def _zip_entries(zf: zipfile.ZipFile, most: int) -> tuple[list[_Entry], int]:
    """The archive's first ``most`` files (folders skipped), and how many it lists."""
    files = [info for info in zf.infolist() if not info.is_dir()]
    out = []
    for info in files[:most]:
        try:
            mtime = dt.datetime(*info.date_time).timestamp()
        except (ValueError, OverflowError):  # an impossible date in the header
            mtime = 0.0
        out.append(_Entry(_member_name(info), info.file_size, mtime, "file" if is_symlink_member(info) else "",
                          info))
    return out, len(files)


def _attribute(rel: str, stem: str, notebooks: dict[str, list[str]], pattern: re.Pattern[str] | None,
               layouts: set[str]) -> tuple[str, str, str, str] | str:
    """(student's name, assignment, notebook, layout) of a file, or why it cannot be attributed."""
    parts = PurePosixPath(rel).parts
    student = assignment = nb = None
    layout = ""
    if pattern is not None:
        m = pattern.search(rel)
        hit = _match_notebook(stem, notebooks)
        if m and hit:
            student, (assignment, nb), layout = name_of(m.group("student")), hit[:2], "pattern"
    elif len(parts) >= 3 and parts[-2] in notebooks and stem in notebooks[parts[-2]]:
        student, assignment, nb, layout = name_of(parts[-3]), parts[-2], stem, "nbgrader"
    else:
        hit = _match_notebook(stem, notebooks)
        if hit:
            assignment, nb, start, _ = hit
            # the student is named in the file name, else by the folder it is in (Moodle: one per student)
            student = prefix_name(stem[:start])
            if not student_id(student) and len(parts) > 1:
                student = prefix_name(parts[-2] + "_")
            layout = "flat"
    if student and student_id(student) and assignment and nb:
        layouts.add(layout)
        return student, assignment, nb, layout
    return "no assignment notebook name in the file name" if not assignment else \
        "no student name before the notebook name"


def _keep_newest(files: list[SubmissionFile]) -> tuple[list[SubmissionFile], list[tuple[str, str]]]:
    """The newest file per (student, assignment, notebook), sorted; and (ignored, kept) pairs of the others.

    Newest by time, then by copy number (``x (1).ipynb`` after ``x.ipynb``), then by path."""
    by_key: dict[tuple[str, str, str], SubmissionFile] = {}
    duplicates: list[tuple[str, str]] = []
    for f in sorted(files, key=lambda f: (f.mtime, copy_number(f.origin, f.notebook), f.origin)):
        key = (f.student, f.assignment, f.notebook)
        if key in by_key:
            duplicates.append((by_key[key].origin, f.origin))
        by_key[key] = f
    return sorted(by_key.values(), key=lambda f: (f.student, f.assignment, f.notebook)), duplicates


def _mark(f: SubmissionFile, kind: EventKind, text: str) -> None:
    f.problem_kind, f.problem = kind, text


def _too_large(f: SubmissionFile, limits: Limits, declared: bool) -> None:
    if declared:
        text = f"the file is {f.size / 1e6:.1f} MB, over the limit of {limits.max_notebook_mb:g} MB; it was not opened"
    else:
        text = (f"the file grew past the limit of {limits.max_notebook_mb:g} MB while it was read (its size was "
                f"given as {f.size} bytes); it was not read further")
    _mark(f, EventKind.TOO_LARGE, text)


def _check(f: SubmissionFile, limits: Limits, releases: dict[tuple[str, str], NotebookNode] | None,
           read: Callable[[SubmissionFile], bytes], copy_to: Path | None) -> None:
    """Read the file (capped, no link followed), hash it, keep a private copy at ``copy_to`` (if given), and
    record why it cannot be graded, or what to review in it."""
    cap = int(limits.max_notebook_mb * 1024 * 1024)
    if f.problem is None and f.size > cap:
        _too_large(f, limits, declared=True)
    if f.problem is None:
        try:
            data = read(f)
        except SymlinkFound as exc:
            _mark(f, EventKind.SYMLINK, str(exc))
        except UnreadableFile as exc:
            _mark(f, EventKind.UNREADABLE_FILE, str(exc))
        else:
            if len(data) > cap:
                _too_large(f, limits, declared=False)
    if f.problem is not None:
        f.sha256 = f"size:{f.size}:{f.mtime}:{f.problem_kind}"
        return
    f.sha256 = hashlib.sha256(data).hexdigest()
    if copy_to is not None:
        copy_to.parent.mkdir(parents=True, exist_ok=True)
        copy_to.write_bytes(data)
        f.path = copy_to
    kind, text, nb = check_notebook_bytes(data)
    if kind:
        f.problem_kind, f.problem = kind, text
    elif nb is not None:
        f.review = suspicious_lines(nb)
        if releases and (f.assignment, f.notebook) in releases:
            f.changes = changed_test_cells(nb, releases[(f.assignment, f.notebook)])


def _timestamp(base: Path, rel: str, f: SubmissionFile) -> None:
    """nbgrader's ``timestamp.txt`` next to ``rel`` (folder layout), read like a notebook: capped, no link."""
    stamp = (PurePosixPath(rel).parent / "timestamp.txt").as_posix()
    try:
        f.timestamp = read_no_follow(base, stamp, 64)[:64].decode("utf-8", "replace").strip()
    except SymlinkFound as exc:
        f.flags.append((EventKind.SYMLINK, f"{stamp}: {exc}; no submission time was read"))
    except UnreadableFile:
        pass  # no timestamp.txt (or not a file): no submission time


def preview_submissions(src: Path, notebooks: dict[str, list[str]], student_pattern: str | None = None,
                        max_members: int = MAX_MEMBERS) -> int:
    """Check, from the names alone and before any set-up work, that ``src`` holds something to grade.

    Lists the folder (or reads the zip's directory, refused as :func:`collect_submissions` refuses it) and
    attributes each file by its name, as :func:`collect_submissions` does, without reading any file.

    Returns:
        How many files were attributed to a student and a lecture notebook (at least one).

    Raises:
        ValueError: ``src`` is missing or not a folder or readable zip; ``student_pattern`` is invalid; or no
            file in it matches a lecture of ``notebooks`` (the message lists a few of the names found and the
            notebook names expected).
    """
    if not Path(src).exists():
        raise ValueError(f"submissions must be an existing folder or .zip file, got {str(src)!r}")
    pattern = compile_pattern(student_pattern)
    src = Path(src).resolve()
    if src.is_file():
        try:
            check_zip_directory(src, max_members)
            with zipfile.ZipFile(src) as zf:
                names = [_member_name(i) for i in zf.infolist() if not i.is_dir()][:max_members]
        except Exception as exc:  # zipfile raises many types for a truncated or corrupt central directory
            reason = str(exc) if isinstance(exc, UnreadableFile) else f"{type(exc).__name__}: {str(exc)[:200]}"
            raise ValueError(f"submissions must be a folder or a readable .zip file, got {str(src)!r} "
                             f"({reason})") from exc
    elif src.is_dir():
        base = src / "submitted" if (src / "submitted").is_dir() and not (src / "submitted").is_symlink() else src
        names = [e.rel for e in _folder_entries(base)[:max_members]]
    else:
        raise ValueError(f"submissions must be a folder or a .zip file, got {str(src)!r}")
    found = 0
    seen: list[str] = []
    for rel in names:
        name = PurePosixPath(rel).name
        if name.startswith(".") or "__MACOSX" in rel or name in _IGNORED_NAMES:
            continue
        seen.append(rel)
        if name.endswith(".ipynb") and not isinstance(
                _attribute(rel, name.rsplit(".", 1)[0], notebooks, pattern, set()), str):
            found += 1
    if not found:
        expected = sorted(f"{nb}.ipynb" for nbs in notebooks.values() for nb in nbs)
        listed = ", ".join(seen[:5]) + (f" and {len(seen) - 5} more" if len(seen) > 5 else "") if seen else "no files"
        raise ValueError(f"submissions must hold at least one notebook of a lecture being graded "
                         f"({', '.join(expected[:8])}{' ...' if len(expected) > 8 else ''}) named after a student"
                         f"{' as --student-pattern says' if pattern else ''}; {str(src)!r} holds {listed}")
    return found


def collect_submissions(src: Path, notebooks: dict[str, list[str]], *, limits: Limits = Limits(),
                        extract_dir: Path | None = None, student_pattern: str | None = None,
                        releases: dict[tuple[str, str], NotebookNode] | None = None,
                        max_members: int = MAX_MEMBERS, max_extracted_bytes: int = MAX_EXTRACTED_BYTES,
                        due: Mapping[str, dt.datetime] | None = None) -> Intake:
    """Find and check every submitted notebook under ``src`` (a folder or a ``.zip``).

    Args:
        src: the submissions: nbgrader's ``submitted/`` folder (or the course folder holding it), a flat
            folder of LMS downloads, nested per-student folders, or a zip of any of these.
        notebooks: ``{assignment: [notebook names]}`` (see :func:`notebook_names`).
        limits: ``limits.max_notebook_mb`` is the size above which a file is not read further.
        extract_dir: where to copy the files that are graded (required for a zip; for a folder, without it
            the files are graded where they are).
        student_pattern: optional regular expression with a named group ``student``, matched against
            the file's path relative to ``src`` (``/``-separated), overriding the built-in rules.
        releases: ``{(assignment, notebook): release notebook}``; when given, deleted, duplicated or edited
            test cells are reported (nbgrader restores them when grading).
        max_members: a folder's files read at most (the others are listed as unmatched); a zip that declares
            or holds more members is refused.
        max_extracted_bytes: bytes extracted from a zip at most; the members past it are marked too large.
        due: ``{assignment: due date, naive UTC}`` (:func:`autograder.intake.deadlines.due_dates`): a file submitted
            after it is flagged late (and a file Canvas marked ``LATE``, with or without a due date).

    Returns:
        An :class:`Intake`; files that could not be attributed to a student and an assignment notebook are
        listed in ``unmatched`` with the reason.

    Raises:
        ValueError: ``src`` does not exist, is neither a folder nor a readable zip, or is a zip refused unread
            (more than ``max_members`` members, declared or found, or an oversized central directory).
    """
    if not Path(src).exists():
        raise ValueError(f"submissions must be an existing folder or .zip file, got {str(src)!r}")
    src = Path(src).resolve()
    pattern = compile_pattern(student_pattern)
    cap = int(limits.max_notebook_mb * 1024 * 1024)
    zf = None
    if src.is_file():
        if extract_dir is None:
            raise ValueError("extract_dir is required to read a zip of submissions")
        try:
            check_zip_directory(src, max_members)   # before zipfile reads the whole central directory
            zf = zipfile.ZipFile(src)
            entries, total = _zip_entries(zf, max_members)
        except Exception as exc:  # zipfile raises many types for a truncated or corrupt central directory
            if zf is not None:
                zf.close()
            reason = str(exc) if isinstance(exc, UnreadableFile) else f"{type(exc).__name__}: {str(exc)[:200]}"
            raise ValueError(f"submissions must be a folder or a readable .zip file, got {str(src)!r} "
                             f"({reason})") from exc
        base, layout_root = Path(extract_dir) / "files", "zip"
    elif src.is_dir():
        base = src / "submitted" if (src / "submitted").is_dir() and not (src / "submitted").is_symlink() else src
        entries, layout_root = _folder_entries(base), "folder"
        total = len(entries)
    else:
        raise ValueError(f"submissions must be a folder or a .zip file, got {str(src)!r}")

    files: list[SubmissionFile] = []
    unmatched: list[tuple[str, str]] = []
    if total > max_members:
        unmatched.append((f"({total - max_members} more files)",
                          f"{total} files in the submissions; only the first {max_members} were read"))
        entries = entries[:max_members]
    layouts: set[str] = set()
    extracted = 0
    try:
        for entry in entries:
            parts = PurePosixPath(entry.rel).parts
            name = parts[-1] if parts else entry.rel
            if name.startswith(".") or "__MACOSX" in parts or name in _IGNORED_NAMES:
                continue
            if _UNSAFE.match(entry.rel) or ".." in parts or "\0" in entry.rel:
                unmatched.append((entry.rel, "unsafe path in the archive"))
                continue
            archive = name.lower().endswith(".zip")
            if entry.link == "folder" or not (name.endswith(".ipynb") or archive):
                why = {"folder": "symbolic link to a folder (not followed)", "file": "symbolic link (not followed)"}
                unmatched.append((entry.rel, why.get(entry.link, "not a .ipynb file")))
                continue
            found = _attribute(entry.rel, name.rsplit(".", 1)[0], notebooks, pattern, layouts)
            if isinstance(found, str):
                unmatched.append((entry.rel, found))
                continue
            f = SubmissionFile("", found[1], found[2], base / entry.rel, entry.rel, entry.size, mtime=entry.mtime,
                               name=found[0])
            files.append(f)
            if entry.link:
                _mark(f, EventKind.SYMLINK, "a symbolic link, not a file (not followed)")
            elif archive:
                _mark(f, EventKind.NOT_A_NOTEBOOK, "a zip archive, not a notebook (archives inside the "
                      "submissions are not opened)")
            elif zf is not None and extracted + min(entry.size, cap) > max_extracted_bytes:
                _mark(f, EventKind.TOO_LARGE, f"the zip's members already extracted reach the limit of "
                      f"{max_extracted_bytes / 2**30:g} GiB; it was not read")
            elif zf is not None and entry.member is not None and entry.size <= cap:
                f.path = base / f"{len(files):05d}.ipynb"
                try:
                    data = read_member(zf, entry.member, cap)
                    extracted += len(data)
                except UnreadableFile as exc:
                    _mark(f, EventKind.UNREADABLE_FILE, str(exc))
                else:
                    base.mkdir(parents=True, exist_ok=True)
                    f.path.write_bytes(data[:cap])
                    if len(data) > cap:
                        _too_large(f, limits, declared=False)
            if zf is None and found[3] == "nbgrader":
                _timestamp(base, entry.rel, f)
            stamp_and_flag(f, found[3], due)
    finally:
        if zf is not None:
            zf.close()

    collisions = assign_ids(files)
    kept, duplicates = _keep_newest(files)

    def read(f: SubmissionFile) -> bytes:
        return read_no_follow(base, f.path.relative_to(base).as_posix(), cap)

    copy_to = Path(extract_dir) / "copies" if extract_dir is not None and zf is None else None
    for i, f in enumerate(kept):
        _check(f, limits, releases, read, copy_to / f"{i:05d}.ipynb" if copy_to is not None else None)
    return Intake(kept, unmatched, duplicates, f"{layout_root}:{'+'.join(sorted(layouts)) or 'none'}", collisions)
