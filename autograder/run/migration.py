"""Bring a grading run's course directory up to date with the instructor's sources, losing nothing.

The course directory (``<output>/course``) and its gradebook are the record of a semester: every grade,
every hand mark and comment given in Formgrader.  They are never removed.  When sources change, each
assignment is *migrated*, not reset (:func:`prepare_course`, called by :func:`autograder.run.grading.grade` before
any grading work):

* an assignment new in the sources is added (``nbgrader generate_assignment`` for that one);
* an assignment whose source folder changed (its fingerprint differs from the one ``state.json`` recorded) is
  updated **in place**: its notebooks and cells in the gradebook are made those of the new source (cells
  added or removed; nbgrader itself refuses to do that once there are submissions), the new source is copied
  in and ``nbgrader generate_assignment NAME --force`` updates the cells' points, sources and checksums.
  nbgrader leaves submissions and their grades alone; the grader then re-grades exactly the submissions of
  that assignment (those in this run's input, and the others from their kept copies in ``course/submitted``),
  and the merge keeps every hand mark (:func:`autograder.run.gradebook.merge_submission`).  A hand mark on a cell
  whose source (or points) changed is kept and flagged for review;
* an unchanged assignment, and every assignment not being graded, is not touched.

**Refuse, name, back up.**  A step that would discard instructor data -- a lecture removed from the sources
whose gradebook rows hold graded submissions, a notebook (with submissions) or a hand-marked cell removed
from a source, an unreadable ``state.json`` or gradebook -- raises :class:`DiscardRefused` naming what would
be lost and the option that allows it (:data:`ALLOW_OPTION`), after writing a dated backup of the gradebook
(``course/backups/gradebook-YYYYmmdd-HHMMSS.db``, sqlite's backup API).  A backup is also written before
every migration.  With the option, an unreadable file is moved aside (``state.json.unreadable-<time>``,
``gradebook.db.damaged-<time>``), never deleted.

**Interruptions.**  Each step can be repeated: the source is swapped in by renames, the gradebook writes are
transactions or idempotent, and an assignment's fingerprint is recorded in ``state.json`` only once its
migration has completed, so a run killed at any moment is completed by the next one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import logging
import os
import shutil
from collections.abc import Collection
from pathlib import Path

import nbformat
from nbgrader import utils as nbutils

from . import gradebook
from ..isolation import protect
from ..course.cells import grade_id
from ..course.course import CONFIG_FILE, assignments, drop_header, fingerprint_dir, make_course, nbgrader
from ..intake.events import Event, EventKind
from ..intake.intake import SubmissionFile
from .state import GradingState, OutputFolder, StateError, assignment_fingerprint

__all__ = ["ALLOW_OPTION", "DiscardRefused", "Change", "source_cells", "prepare_course", "kept_submissions",
           "keep_submission", "answers_changed", "marks_to_flag", "review_events", "refresh_config"]

log = logging.getLogger(__name__)

ALLOW_OPTION = "--allow-discard"
"""The command-line option that lets a run discard what :func:`prepare_course` would otherwise refuse to."""


class DiscardRefused(RuntimeError):
    """Going on would discard instructor data; the message names it, the backup and :data:`ALLOW_OPTION`."""


@dataclasses.dataclass
class Change:
    """What the sources did to one assignment since the course directory was last brought up to date."""

    name: str
    fingerprint: str
    action: str                                   # "new", "changed", "adopt" (older state, same source), "same"
    wanted: dict[str, gradebook.CellSets] = dataclasses.field(default_factory=dict)
    structural: bool = False                      # notebooks or nbgrader cells added or removed
    review: set[tuple[str, str]] = dataclasses.field(default_factory=set)  # (notebook, cell) whose source changed
    losses: list[str] = dataclasses.field(default_factory=list)


def source_cells(path: Path) -> gradebook.CellSets:
    """The nbgrader cells of a source notebook, by kind, with the attributes ``generate_assignment`` records
    (the same classification as nbgrader's ``SaveCells``)."""
    out: gradebook.CellSets = {"grade": {}, "solution": {}, "task": {}, "source": {}}
    for cell in nbformat.read(path, as_version=4).cells:
        name = grade_id(cell)
        if not name:
            continue
        graded = {"max_score": float(cell.metadata.nbgrader.get("points", 0) or 0), "cell_type": cell.cell_type}
        if nbutils.is_grade(cell):
            out["grade"][name] = graded
        if nbutils.is_solution(cell):
            out["solution"][name] = {}
        if nbutils.is_task(cell):
            out["task"][name] = graded
        if nbutils.is_grade(cell) or nbutils.is_solution(cell) or nbutils.is_locked(cell) or nbutils.is_task(cell):
            out["source"][name] = {"cell_type": cell.cell_type, "locked": bool(nbutils.is_locked(cell)),
                                   "source": cell.source}
    return out


def _graded_sources(path: Path) -> dict[str, tuple[str, float]]:
    """``{cell: (source, points)}`` of the graded cells of a source notebook (``{}`` if there is none)."""
    if not path.is_file():
        return {}
    nb = nbformat.read(path, as_version=4)
    return {str(grade_id(c)): (c.source, float(c.metadata.nbgrader.get("points", 0) or 0))
            for c in nb.cells if grade_id(c) and (nbutils.is_grade(c) or nbutils.is_task(c))}


def _plan(course: Path, state: GradingState, solutions_dir: Path, name: str, notebooks: list[str],
          held: dict[str, tuple[int, int]]) -> Change:
    fp = assignment_fingerprint(solutions_dir, name)
    if name not in held:
        return Change(name, fp, "new")
    recorded = state.fingerprint(name)
    if recorded == fp:
        return Change(name, fp, "same")
    released = all((course / "release" / name / f"{nb}.ipynb").is_file() for nb in notebooks)
    if recorded is None and released and fingerprint_dir(course / "source" / name) == fp:
        return Change(name, fp, "adopt")
    db = course / "gradebook.db"
    change = Change(name, fp, "changed", {nb: source_cells(solutions_dir / name / f"{nb}.ipynb") for nb in notebooks})
    have = gradebook.structure(db, name)
    change.structural = {nb: {k: set(v) for k, v in cells.items()} for nb, cells in have.items()} != \
        {nb: {k: set(v) for k, v in cells.items()} for nb, cells in change.wanted.items()}
    for nb in sorted(set(have) - set(change.wanted)):
        if held[name][0]:
            change.losses.append(f"notebook {nb}.ipynb of {name} was removed from the source; its graded "
                                 f"submissions ({held[name][0]}) would be deleted")
    lost: dict[tuple[str, str], int] = {}
    for _student, nb, cell in gradebook.hand_marks(db, name):
        kept = change.wanted.get(nb, {})
        if not any(cell in kept.get(kind, {}) for kind in ("grade", "solution", "task")):
            lost[nb, cell] = lost.get((nb, cell), 0) + 1
    change.losses += [f"cell {cell} of {name}/{nb}.ipynb was removed from the source; its {n} hand mark(s) "
                      "would be deleted" for (nb, cell), n in sorted(lost.items())]
    for nb in notebooks:  # hand marks on cells whose source or points changed: kept, flagged for review
        old = _graded_sources(course / "source" / name / f"{nb}.ipynb")
        new = _graded_sources(solutions_dir / name / f"{nb}.ipynb")
        change.review |= {(nb, cell) for cell in old.keys() & new.keys() if old[cell] != new[cell]}
    return change


def _stamp() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def refresh_config(course: Path) -> Path | None:
    """Bring the course folder's ``nbgrader_config.py`` (a copy of the kit's, made when the folder was built) in
    line with the kit's current one – an older copy may name modules the kit has since moved.  A copy that differs
    is kept first in ``backups/`` (it could hold an instructor's edit); returns that backup, or None."""
    target = course / "nbgrader_config.py"
    if not target.is_file() or target.read_bytes() == CONFIG_FILE.read_bytes():
        return None
    backup = course / "backups" / f"nbgrader_config.py.{_stamp()}"
    backup.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(target, backup)
    shutil.copyfile(CONFIG_FILE, target)
    log.warning("grade: %s was an older copy of the kit's configuration; kept in %s and replaced", target, backup)
    return backup


def _refuse(db: Path, course: Path, what: list[str]) -> DiscardRefused:
    saved = f"A backup of the gradebook was written to {gradebook.backup(db, course / 'backups')}. " \
        if db.is_file() else ""
    lines = "\n".join(f"  - {w}" for w in what)
    return DiscardRefused(f"grading would discard instructor data, so nothing was changed:\n{lines}\n{saved}Restore "
                          f"what is missing (e.g. the lecture's folder in the sources), or run again with "
                          f"{ALLOW_OPTION} to go on and discard it.")


def _load_state(folder: OutputFolder, problems: list[str]) -> GradingState | None:
    try:
        return GradingState.load(folder.state_file)
    except StateError as exc:
        problems.append(f"{exc}: the results it records (the report's rows of submissions not in this run, "
                        "which submissions are already graded) would be lost")
        return None


def prepare_course(folder: OutputFolder, solutions_dir: Path, nbs: dict[str, list[str]], *,
                   allow_discard: bool = False) -> GradingState:
    """Bring ``folder``'s course directory up to date with the sources of the assignments ``nbs`` (see the
    module's docstring); returns the grading state.

    Raises:
        DiscardRefused: a step would discard instructor data and ``allow_discard`` is false (nothing has been
            changed then, and a backup of the gradebook was written).
    """
    course, solutions_dir = folder.course, Path(solutions_dir)
    db = course / "gradebook.db"
    protect.unseal(course)  # an earlier run without a sandbox may have stopped with it sealed
    refresh_config(course)
    problems: list[str] = []
    loaded = _load_state(folder, problems)
    state = loaded or GradingState(folder.state_file, {})
    damage = gradebook.check(db) if db.is_file() else None
    if damage:
        problems.append(f"the gradebook {db} cannot be used ({damage}): every grade, hand mark and comment in it "
                        "would be set aside and the submissions graded again")
    if problems and not allow_discard:
        raise _refuse(db, course, problems)
    if problems:
        stamp = _stamp()
        if db.is_file():
            log.warning("grade: gradebook backed up to %s", gradebook.backup(db, course / "backups"))
        if damage:
            os.replace(db, db.with_name(f"gradebook.db.damaged-{stamp}"))
        if loaded is None:
            os.replace(folder.state_file, folder.state_file.with_name(f"state.json.unreadable-{stamp}"))
    if not db.is_file():
        state = GradingState(folder.state_file, {})  # nothing graded is on record any more
        make_course(course, sorted(nbs), solutions_dir=solutions_dir)
        for name in sorted(nbs):
            state.set_fingerprint(name, assignment_fingerprint(solutions_dir, name))
        _make_private(folder)
        return state
    held = gradebook.assignments_held(db)
    sources = set(assignments(solutions_dir))
    removed = sorted(a for a in held if a not in sources)
    changes = [_plan(course, state, solutions_dir, name, nbs[name], held) for name in sorted(nbs)]
    losses = [f"lecture {a} is no longer in {solutions_dir}; the gradebook holds {held[a][0]} graded submission(s) "
              f"and {held[a][1]} hand mark(s) of it" for a in removed if held[a][0]]
    losses += [loss for c in changes for loss in c.losses]
    if losses and not allow_discard:
        raise _refuse(db, course, losses)
    if removed or any(c.action == "changed" for c in changes):
        log.info("grade: gradebook backed up to %s before updating it", gradebook.backup(db, course / "backups"))
    for name in removed:
        _discard_assignment(folder, state, name, held[name][0])
    for change in changes:
        _apply(folder, state, solutions_dir, change)
    _make_private(folder)
    return state


def _make_private(folder: OutputFolder) -> None:
    for private in (folder.course, folder.work):  # kernels without a sandbox must not even read these
        protect.make_private(private)


def _discard_assignment(folder: OutputFolder, state: GradingState, name: str, graded: int) -> None:
    if graded:
        log.warning("grade: lecture %s is no longer in the sources: removing it and its %d graded submission(s) "
                    "(%s given)", name, graded, ALLOW_OPTION)
    gradebook.remove_assignment(folder.course / "gradebook.db", name)
    state.forget(name)
    for sub in ("source", "release"):
        protect.remove_tree(folder.course / sub / name)
    for sub in ("submitted", "autograded", "feedback"):
        for d in (folder.course / sub).glob(f"*/{name}"):
            protect.remove_tree(d)
    for d in folder.feedback.glob(f"*/{name}"):
        protect.remove_tree(d)


def _apply(folder: OutputFolder, state: GradingState, solutions_dir: Path, change: Change) -> None:
    course, name = folder.course, change.name
    db = course / "gradebook.db"
    if change.action == "new":
        log.info("grade: adding %s to the course", name)
        make_course(course, [name], solutions_dir=solutions_dir)
    elif change.action == "changed":
        log.info("grade: %s changed; updating it in place (grades and hand marks kept, its submissions re-graded)",
                 name)
        flagged = gradebook.flag_for_review(db, name, change.review)
        if flagged:
            log.info("grade: %d hand mark(s) of %s flagged for review (the cell's source changed)", flagged, name)
        if change.structural:
            gradebook.sync_structure(db, name, change.wanted)
        _replace_source(course, solutions_dir, name)
        nbgrader(["generate_assignment", name, "--force", "--create"], cwd=course)
    if change.action != "same":
        state.set_fingerprint(name, change.fingerprint, adopt=change.action == "adopt")


def _replace_source(course: Path, solutions_dir: Path, name: str) -> None:
    """Copy ``solutions_dir/name`` over ``course/source/name`` by renames (never a half-copied source)."""
    dst = course / "source" / name
    new, old = dst.with_name(f".{name}.new"), dst.with_name(f".{name}.old")
    for leftover in (new, old):
        protect.remove_tree(leftover)
    shutil.copytree(solutions_dir / name, new, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    for nb in new.glob("*.ipynb"):
        drop_header(nb)
    if dst.exists():
        os.replace(dst, old)
    os.replace(new, dst)
    protect.remove_tree(old)


# ----------------------------------------------------------------------------------------------------
# Submissions: kept copies, changed answers, marks to review


def keep_submission(course: Path, files: Collection[SubmissionFile], timestamp: str | None) -> None:
    """Keep a copy of a graded submission's files in ``course/submitted/<student>/<assignment>/`` (nbgrader's
    layout), so that a later change of the assignment can re-grade it without the original input."""
    files = [f for f in files if not f.problem]
    if not files:
        return
    dst = course / "submitted" / files[0].student / files[0].assignment
    if any(Path(f.path).resolve().parent == dst.resolve() for f in files):
        return  # graded from this very copy
    protect.remove_tree(dst)
    dst.mkdir(parents=True)
    for f in files:
        shutil.copyfile(f.path, dst / f"{f.notebook}.ipynb")
    if timestamp:
        (dst / "timestamp.txt").write_text(timestamp)


def kept_submissions(folder: OutputFolder, state: GradingState, nbs: dict[str, list[str]],
                     present: Collection[tuple[str, str]]) -> dict[tuple[str, str], list[SubmissionFile]]:
    """The submissions not in this run's input that were graded against an earlier version of their assignment,
    or that ``state.json`` does not know (it was set aside): their kept copies (``course/submitted``, else the
    autograded notebooks of an output folder from before copies were kept), to be graded again."""
    out: dict[tuple[str, str], list[SubmissionFile]] = {}
    for name, notebooks in sorted(nbs.items()):
        fp = state.fingerprint(name)
        unknown = {f"{d.parent.name}/{name}" for d in (folder.course / "submitted").glob(f"*/{name}") if d.is_dir()}
        for key in sorted(set(state.stale(name, fp or "")) | (unknown - set(state.keys(name)))):
            student = key.rsplit("/", 1)[0]
            if (student, name) in present:
                continue
            files = []
            for sub in ("submitted", "autograded"):
                d = folder.course / sub / student / name
                files = [_kept_file(d / f"{nb}.ipynb", student, name, nb, folder.root) for nb in notebooks
                         if (d / f"{nb}.ipynb").is_file()]
                if files:
                    break
            if files:
                out[student, name] = files
            else:
                log.warning("grade: %s changed, but no copy of %s's submission is kept: its grades stay as they "
                            "were; grade it again from the original files", name, student)
    return out


def _kept_file(path: Path, student: str, assignment: str, notebook: str, root: Path) -> SubmissionFile:
    ts = path.with_name("timestamp.txt")
    return SubmissionFile(student, assignment, notebook, path, f"{path.relative_to(root)} (kept from an earlier run)",
                          path.stat().st_size, _sha256(path),
                          timestamp=ts.read_text().strip() if ts.is_file() else None)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def answers_changed(old: Path, new: Path, cells: Collection[str]) -> set[str]:
    """Which of ``cells`` (grade ids) differ between two notebooks of one student (submitted or autograded): the
    student changed the answer since it was hand-marked.  Nothing when either notebook is missing; all of them when one
    cannot be read (e.g. left half-copied by an interrupted run): the marks are then flagged, to be safe."""
    if not (old.is_file() and new.is_file() and cells):
        return set()
    try:
        before, after = ({grade_id(c): c.source for c in nbformat.read(p, as_version=4).cells if grade_id(c)}
                         for p in (old, new))
    except Exception:  # a student's file: whatever is wrong with it must not stop the run
        return set(cells)
    return {cell for cell in cells if before.get(cell) != after.get(cell)}


def marks_to_flag(course: Path, files: Collection[SubmissionFile]) -> set[tuple[str, str]]:
    """``(notebook, cell)`` of the student's hand marks whose answer differs between the submission being
    graded (``files``) and the one graded before (its kept copy in ``course/submitted``; for an output folder
    from before copies were kept, the autograded notebook)."""
    files = [f for f in files if not f.problem]
    if not files:
        return set()
    student, assignment = files[0].student, files[0].assignment
    marked: dict[str, set[str]] = {}
    for _, nb, cell in gradebook.hand_marks(course / "gradebook.db", assignment, student):
        marked.setdefault(nb, set()).add(cell)
    out = set()
    for f in files:
        old = course / "submitted" / student / assignment / f"{f.notebook}.ipynb"
        if not old.is_file():
            old = course / "autograded" / student / assignment / f"{f.notebook}.ipynb"
        out |= {(f.notebook, cell) for cell in answers_changed(old, Path(f.path), marked.get(f.notebook, set()))}
    return out


def review_events(main_db: Path, assignment: str, student: str) -> list[Event]:
    """An event for each hand mark of the submission that is flagged for review."""
    return [Event(EventKind.HAND_MARK_TO_REVIEW, f"{cell}: the hand mark is kept, but the question or the answer "
                  "changed since it was given; review it (Formgrader) and save it again", cell=cell, notebook=nb)
            for nb, cell in gradebook.marks_to_review(main_db, assignment, student)]
