"""What an LMS download's file names say besides the student: the LMS's own user id, a late marker, a copy number.

Moodle and Canvas name the files of an assignment download after the participant:

* **Moodle** ("Download all submissions"): a folder or a file prefix ``Full Name_12345_assignsubmission_file_``
  -- ``12345`` is Moodle's *participant id* of the student in that assignment (the ``Identifier`` column of
  Moodle's grading worksheet, written ``Participant 12345``);
* **Canvas** ("Download submissions"): ``doejane_12345_67890_<original name>`` or, when submitted after the due
  date, ``doejane_LATE_12345_67890_<original name>`` -- ``12345`` is Canvas's *user id* (the ``ID`` column of
  Canvas's gradebook export), ``67890`` the attachment; a resubmission of the same file name gets ``-1``, ``-2``
  ... before the extension.

:func:`lms_info` reads these from a file's path (relative to the submissions folder or inside the zip);
:func:`copy_number` reads the ``x (1).ipynb`` / ``x-1.ipynb`` suffix that browsers and Canvas add to a second copy
of a file, the tie-break when two copies have the same time.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import PurePosixPath

__all__ = ["LmsInfo", "lms_info", "copy_number"]

_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assign(?:submission|feedback)_[a-z]+(?:_|$)")
_CANVAS = re.compile(r"^(?P<name>[^_]+)_(?:(?P<late>late)_)?(?P<id>\d+)_(?P<attachment>\d+)_", re.IGNORECASE)
_COPY = re.compile(r"(?: \((?P<paren>\d{1,4})\)|-(?P<dash>\d{1,4}))$")


@dataclasses.dataclass(frozen=True)
class LmsInfo:
    """What the file name says: ``system`` (``"moodle"``, ``"canvas"`` or ``""``), the LMS's ``user_id``
    (``""`` if none) and whether the LMS marked the submission ``late`` (Canvas's ``LATE``)."""

    system: str = ""
    user_id: str = ""
    late: bool = False


def lms_info(rel: str, notebook: str = "") -> LmsInfo:
    """The LMS id and late marker in a submission's path ``rel`` (``/``-separated): the file name first, then
    the folders it is in (Moodle's one folder per participant).  With ``notebook`` (the notebook's name), only
    the part of the file name before it is read, so a name that starts with digits (``03_...``) is never taken
    for an id.

    >>> lms_info("Zoë Ñúñez_12345_assignsubmission_file_/03_simulation_lemma.ipynb")
    LmsInfo(system='moodle', user_id='12345', late=False)
    >>> lms_info("nunezzoe_LATE_4321_998877_03_simulation_lemma-1.ipynb")
    LmsInfo(system='canvas', user_id='4321', late=True)
    """
    parts = list(PurePosixPath(rel).parts)
    if parts and notebook:
        at = parts[-1].lower().rfind(notebook.lower())
        parts[-1] = parts[-1][:at] if at >= 0 else parts[-1]
    for part in reversed(parts):
        m = _MOODLE.match(part)
        if m:
            return LmsInfo("moodle", m.group("id"))
        m = _CANVAS.match(part)
        if m:
            return LmsInfo("canvas", m.group("id"), bool(m.group("late")))
    return LmsInfo()


def copy_number(rel: str, notebook: str) -> int:
    """The copy number of a file: 1 for ``x (1).ipynb`` or ``x-1.ipynb`` (2 for ``(2)`` ...), 0 for ``x.ipynb``.

    Only a suffix after the notebook's own name counts (a notebook whose name ends in ``-2`` is not a copy).
    """
    stem = PurePosixPath(rel).name.rsplit(".", 1)[0]
    if stem.lower().endswith(notebook.lower()):
        return 0
    m = _COPY.search(stem)
    if not m or not stem[:m.start()].lower().endswith(notebook.lower()):
        return 0
    return int(m.group("paren") or m.group("dash"))
