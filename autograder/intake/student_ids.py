"""Student ids from the names found in submission file names: Unicode kept, safe as folder names, never merged.

:func:`student_id` turns a name into an id (NFC-normalised, letters of every script kept, case and accents as
written); :func:`assign_ids` gives the files of one intake their ids and, when different names still give one
id, makes those ids distinct and flags each file, so that no student is dropped as another's duplicate.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol

from .events import EventKind

__all__ = ["student_id", "name_of", "prefix_name", "student_from_prefix", "assign_ids", "compile_pattern"]

_ID_MARKS = "_.@-"
_MAX_ID_CHARS = 60  # at most 240 bytes of UTF-8: a file name on every common file system


class _Named(Protocol):
    name: str
    student: str
    flags: list[tuple[EventKind, str]]


def name_of(raw: str) -> str:
    """A name as found, NFC-normalised, its white space collapsed: two spellings of one name compare equal."""
    return " ".join(unicodedata.normalize("NFC", raw).split())


def student_id(name: str) -> str:
    """The student id (a safe folder name) for a name found in a file or folder name.

    NFC, not NFKC: canonical normalisation makes a name typed or stored in two canonically equivalent ways
    (a macOS zip stores ``é`` as ``e`` + combining accent) one id, and changes nothing else; NFKC would also
    fold compatibility characters (full-width letters, ligatures, superscripts) into others, merging names that
    differ.  Letters, marks and digits of every script are kept, case and accents as written (``José`` and
    ``Jose`` are two students); every other run of characters (spaces, ``/``, control characters) becomes one
    ``_``; ``._-`` are stripped from the ends (no hidden or ``..`` folders), and the id is cut at
    60 characters (240 bytes of UTF-8 at most).  Different names can still give one id (``Jane Doe``,
    ``Jane_Doe``): :func:`assign_ids` detects that.
    """
    out: list[str] = []
    for c in unicodedata.normalize("NFC", name):
        if c in _ID_MARKS or unicodedata.category(c)[0] in "LMN":
            out.append(c)
        elif not out or out[-1] != "\0":
            out.append("\0")
    return "".join(out).replace("\0", "_").strip("._-")[:_MAX_ID_CHARS].strip("._-")


def prefix_name(prefix: str) -> str:
    """The student's name in the part of an LMS file name before the notebook name (its first token)."""
    tokens = [t for t in re.split(r"_+", prefix.strip(" _-.")) if t.strip(" -.")]
    return name_of(tokens[0]) if tokens else ""


def student_from_prefix(prefix: str) -> str:
    """Student id from the part of an LMS file name before the notebook name: its first ``_``-separated token.

    ``alice_`` -> ``alice``; ``alice_resubmission_`` -> ``alice``; Canvas ``doejane_late_123456_7890123_``
    -> ``doejane``; Moodle ``Jane Doe_123456_assignsubmission_file_`` -> ``Jane_Doe``.  Ids that contain
    ``_`` need ``student_pattern``.  The result is :func:`student_id` of that token.
    """
    return student_id(prefix_name(prefix))


def assign_ids(files: Sequence[_Named]) -> list[tuple[str, list[str]]]:
    """Give each file its student id; different names with one id get distinct ids and a flag. The collisions."""
    names: dict[str, set[str]] = {}
    for f in files:
        names.setdefault(student_id(f.name), set()).add(f.name)
    for f in files:
        sid = student_id(f.name)
        f.student = sid
        if len(names[sid]) > 1:
            f.student = f"{sid}-{hashlib.sha256(f.name.encode()).hexdigest()[:6]}"
            f.flags.append((EventKind.ID_COLLISION, f"the names {sorted(names[sid])} all give the id {sid!r}; "
                            f"{f.name!r} was graded as {f.student!r}"))
    return [(sid, sorted(n)) for sid, n in sorted(names.items()) if len(n) > 1]


def compile_pattern(student_pattern: str | None) -> re.Pattern[str] | None:
    """``student_pattern`` compiled, or ``None`` when not given.

    Raises:
        ValueError: not a regular expression, or without a ``(?P<student>...)`` group; the message names
            ``--student-pattern`` and the value given.
    """
    if not student_pattern:
        return None
    try:
        pattern = re.compile(student_pattern)
    except re.error as exc:
        raise ValueError(f"student_pattern must be a regular expression (--student-pattern) with a named group "
                         f"(?P<student>...), got {student_pattern!r}, which is not valid: {exc}") from None
    if "student" not in pattern.groupindex:
        raise ValueError(f"student_pattern must contain a named group (?P<student>...) (--student-pattern), "
                         f"got {student_pattern!r}")
    return pattern
