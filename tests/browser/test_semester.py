"""The instructor's semester, executed: the walk-through of ``docs/instructor-guide.md`` ("A semester, step by
step"), end to end, with the real lectures 03 and 04, the real ``dp-course`` commands and, for hand grading,
nbgrader's Formgrader in Debian's chromium.

A class of four downloads its work from Moodle (zips named as Moodle names them, one folder per participant):

* Zoë Ñúñez hands in full solutions of both lectures, on time;
* Ada Byron hands in both lectures, one autograded answer of each left out;
* Bo Li hands in lecture 03 untouched and never hands in lecture 04;
* Cy Young hands in a full lecture 03 on time, then a resubmission with a changed written answer after the due
  date.

The steps, each a command of the guide's walk-through (the test checks that the guide shows each one): the
student copy; grading week 3 and week 4 into one folder with due dates; hand marks (one typed into the
Formgrader in the browser, the others saved through nbgrader's gradebook API as Formgrader saves them);
``feedback``; an erratum fixed in a third lecture's text and the class graded again; the late resubmission;
``feedback`` again and ``report``.  At the end every hand mark and comment is still in the gradebook (the one on
the changed answer flagged for review), no feedback page holds a hidden-test line, and ``grades.csv``, the LMS
export, ``report.md`` and the console show the same scores.

Without chromium the module skips with the reason (a failure with ``DP_COURSE_CI=1``).
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from _browser_lab import (ARTIFACTS, CHROMIUM, CHROMIUM_NEEDED, PLAYWRIGHT_NEEDED, Console, formgrader_students,
                          launch, mark, open_formgrader, open_submission, require)
from _lab_server import FormgradeServer
from autograder.course import cells
from autograder.course.course import NOTEBOOKS_DIR, REPO_ROOT, SOLUTIONS_DIR
from autograder.feedback.feedback import hidden_test_lines
from autograder.feedback.strip_hidden_tests import MIN_CHARS, normalise

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser-semester")]

GUIDE = REPO_ROOT / "docs" / "instructor-guide.md"
L3, L4, L5 = "03_simulation_lemma", "04_strong_composition", "05_renyi_zcdp"
DUE3, DUE4 = "2026-10-07T23:59+00:00", "2026-10-14T23:59+00:00"
ON_TIME3, ON_TIME4, LATE3 = (2026, 10, 6, 12, 0, 0), (2026, 10, 13, 12, 0, 0), (2026, 10, 9, 9, 30, 0)
PEOPLE = {"zoe": ("Zoë Ñúñez", "12345"), "ada": ("Ada Byron", "23456"), "bo": ("Bo Li", "34567"),
          "cy": ("Cy Young", "45678")}
BROWSER_COMMENT = "Clear and complete (typed in the Formgrader by the semester test)."
CY_NEW_ANSWER = "RESUBMITTED: the map pushes U onto V; I rewrote this after the deadline."

# (student, lecture, written answer) -> (score, comment); Zoë's ex2c_proof is typed into the browser
HAND_MARKS = {
    ("zoe", L3, "ex2c_proof"): (2.0, BROWSER_COMMENT),
    ("zoe", L3, "ex3c_proof"): (2.0, "Correct."),
    ("zoe", L4, "ex1_proof"): (2.0, "Good."),
    ("zoe", L4, "ex2d_proof"): (3.0, "Tight and well argued."),
    ("ada", L3, "ex2c_proof"): (1.0, "Half of the argument."),
    ("ada", L3, "ex3c_proof"): (2.0, ""),
    ("ada", L4, "ex1_proof"): (1.5, "Missing the last step."),
    ("ada", L4, "ex2d_proof"): (3.0, ""),
    ("bo", L3, "ex2c_proof"): (0.0, "Not answered."),
    ("bo", L3, "ex3c_proof"): (0.0, ""),
    ("cy", L3, "ex2c_proof"): (1.0, "Incomplete before the resubmission."),
    ("cy", L3, "ex3c_proof"): (2.0, "Correct."),
}




def _student_id(key: str) -> str:
    """The id the grader gives a Moodle participant: the name as Moodle writes it, spaces as underscores."""
    return PEOPLE[key][0].replace(" ", "_")


def _notebooks(lecture: str) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """(release, full solution) of a lecture."""
    release = nbformat.read(NOTEBOOKS_DIR / lecture / f"{lecture}.ipynb", as_version=4)
    source = nbformat.read(SOLUTIONS_DIR / lecture / f"{lecture}.ipynb", as_version=4)
    return release, cells.full_solution(release, source)


def _without(nb: nbformat.NotebookNode, release: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    """``nb`` with the answer ``grade_id`` back as the release has it (left out)."""
    stub = next(c.source for c in release.cells if cells.grade_id(c) == grade_id)
    return cells.set_answer(nb, grade_id, stub)


def _moodle_zip(path: Path, lecture: str, files: dict[str, tuple[nbformat.NotebookNode, tuple[int, ...]]]) -> Path:
    """A Moodle "Download all submissions" zip: one folder per participant, the member dated as uploaded."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for key, (nb, when) in files.items():
            name, pid = PEOPLE[key]
            info = zipfile.ZipInfo(f"{name}_{pid}_assignsubmission_file_/{lecture}.ipynb", date_time=when)
            z.writestr(info, nbformat.writes(nb))
    return path


def _dp_course(*args: str, cwd: Path) -> str:
    """Run ``dp-course ARGS`` as the instructor types it (in ``cwd``); its standard output."""
    exe = Path(sys.executable).with_name("dp-course")
    env = dict(os.environ, PATH=str(exe.parent) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"dp-course {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _guide_commands() -> str:
    """The fenced shell block of the guide's "A semester, step by step" section."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## A semester, step by step", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


def _as_in_guide(args: tuple[str, ...]) -> str:
    """A command as the guide writes it: the test's own options (its copy of the sources, its worker count,
    no progress bar) left out."""
    shown, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("--solutions", "--workers"):
            skip = True
            continue
        if a != "--no-progress":
            shown.append(a)
    return "dp-course " + " ".join(shown)


class Semester:
    """The instructor's folder: the sources (a copy, to fix an erratum in), the downloads and ``grading/``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.solutions = home / "solutions"
        shutil.copytree(SOLUTIONS_DIR, self.solutions, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        self.output = home / "grading"
        self.commands: list[str] = []
        self.guide = _guide_commands()

    def run(self, *args: str) -> str:
        assert _as_in_guide(args) in self.guide, f"the guide's walk-through does not show `{_as_in_guide(args)}`"
        self.commands.append(_as_in_guide(args))
        started = time.monotonic()
        out = _dp_course(*args, cwd=self.home)
        print(f"[{time.monotonic() - started:6.1f} s] {_as_in_guide(args)}")
        return out

    def grade(self, download: str, *extra: str) -> str:
        return self.run("grade", download, "-o", "grading", "--solutions", str(self.solutions), "--workers", "2",
                        "--no-progress", *extra)

    def gradebook(self) -> Gradebook:
        return Gradebook(f"sqlite:///{self.output / 'course' / 'gradebook.db'}")


def _save_marks(semester: Semester, skip: tuple[str, str, str]) -> None:
    """Every hand mark but ``skip``, saved as Formgrader saves them (manual score and manual comment)."""
    with semester.gradebook() as gb:
        for (key, lecture, gid), (score, comment) in HAND_MARKS.items():
            if (key, lecture, gid) == skip:
                continue
            grade = gb.find_grade(gid, lecture, lecture, _student_id(key))
            grade.manual_score = score
            grade.needs_manual_grade = False
            gb.find_comment(gid, lecture, lecture, _student_id(key)).manual_comment = comment or None
        gb.db.commit()


def _mark_in_browser(semester: Semester, work: Path) -> None:
    """Zoë's first written answer of lecture 03, typed into the Formgrader opened by ``dp-course formgrade``."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - optional dev dependency, checked first

    assert _as_in_guide(("formgrade", "grading")) in semester.guide
    work.mkdir(parents=True, exist_ok=True)
    server = FormgradeServer(root_dir=semester.output / "course", work=work)
    server.start_formgrade(semester.output)
    try:
        with sync_playwright() as pw:
            context = launch(pw, work / "profile")
            console = Console()
            console.attach(context, server.base)
            page = context.new_page()
            page.set_default_timeout(60_000)
            open_formgrader(page, server)
            listed = formgrader_students(page, server, L3, L3)
            # the Formgrader shows "Last, First" from the names the LMS file names gave
            shown = {k: ", ".join(reversed(PEOPLE[k][0].split(" ", 1))) for k in PEOPLE}
            assert listed == sorted(shown.values()), listed
            open_submission(page, shown["zoe"])
            page.locator(".dpc-mark-scheme[data-grade-id='ex2c_proof']").wait_for()
            score, comment = HAND_MARKS[("zoe", L3, "ex2c_proof")]
            mark(page, "ex2c_proof", score, comment)
            page.screenshot(path=ARTIFACTS / "semester-formgrade.png", full_page=False)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with semester.gradebook() as gb:
                    grade = gb.find_grade("ex2c_proof", L3, L3, _student_id("zoe"))
                    saved = gb.find_comment("ex2c_proof", L3, L3, _student_id("zoe")).manual_comment
                    if grade.manual_score is not None and saved:
                        break
                time.sleep(0.5)
            context.close()
        _, external = console.take()
        assert not external, f"requests beyond the loopback (aborted): {external[:5]}"
    finally:
        server.stop()


def _marks(semester: Semester) -> dict[tuple[str, str, str], tuple[float | None, str, bool]]:
    out = {}
    with semester.gradebook() as gb:
        for key, lecture, gid in HAND_MARKS:
            grade = gb.find_grade(gid, lecture, lecture, _student_id(key))
            comment = gb.find_comment(gid, lecture, lecture, _student_id(key)).manual_comment or ""
            out[(key, lecture, gid)] = (grade.manual_score, comment, bool(grade.needs_manual_grade))
    return out


def _grades_csv(semester: Semester) -> dict[tuple[str, str], str]:
    with open(semester.output / "grades.csv", newline="", encoding="utf-8") as f:
        return {(r["student_id"], r["assignment"]): r["score"] for r in csv.DictReader(f)}


def _pages_with_hidden_lines(semester: Semester) -> list[str]:
    hidden = hidden_test_lines(semester.output / "course")
    found = []
    for page in sorted((semester.output / "feedback").glob("*/*/*.html")):
        text = normalise(page.read_text(errors="replace"))
        lines = hidden.get(page.parent.name, {}).get(page.stem, [])
        found += [f"{page}: {x}" for x in lines if len(normalise(x)) >= MIN_CHARS and normalise(x) in text]
    return found


def _score_cells(text: str, student: str, lecture: str) -> list[str]:
    """The lines of a table (console or report) that show ``student``'s row of ``lecture``."""
    return [line for line in text.splitlines() if student in line and lecture in line]


def test_a_semester_as_the_guide_walks_it(tmp_path):
    require(CHROMIUM_NEEDED, CHROMIUM.exists())
    try:
        import playwright.sync_api  # noqa: F401, PLC0415 - optional dev dependency
    except ImportError:
        require(PLAYWRIGHT_NEEDED, False)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    semester = Semester(tmp_path / "instructor")
    home = semester.home
    rel3, full3 = _notebooks(L3)
    rel4, full4 = _notebooks(L4)

    # before the term: what the students receive
    semester.run("student-copy", "students")
    assert (home / "students" / "notebooks" / L3 / f"{L3}.ipynb").is_file()
    assert not (home / "students" / "solutions").exists()

    # week 3 and week 4: Moodle downloads, graded into one folder, each with its due date
    _moodle_zip(home / "week03.zip", L3, {"zoe": (full3, ON_TIME3), "ada": (_without(full3, rel3, "ex1a_pmfs"),
                                                                            ON_TIME3),
                                          "bo": (rel3, ON_TIME3), "cy": (full3, ON_TIME3)})
    _moodle_zip(home / "week04.zip", L4, {"zoe": (full4, ON_TIME4), "ada": (_without(full4, rel4, "ex2c_exact"),
                                                                            ON_TIME4)})
    semester.grade("week03.zip", "--due", f"{L3}={DUE3}")
    semester.grade("week04.zip", "--due", f"{L4}={DUE4}")
    before = _grades_csv(semester)
    zoe = _student_id("zoe")
    ada, bo = _student_id("ada"), _student_id("bo")
    # autograded points only so far: 14 of lecture 03's 18 and 13 of lecture 04's 18 (the rest is hand-marked);
    # Ada's left-out answers cost the one point of the test each has
    expected = {(zoe, L3): 14.0, (zoe, L4): 13.0, (ada, L3): 13.0, (ada, L4): 12.0, (bo, L3): 0.0}
    assert {k: float(before[k]) for k in expected} == expected, before
    assert before[(bo, L4)] == "", "a lecture not handed in must be blank, not 0"

    # hand grading: one answer in the browser, the others as Formgrader saves them
    _mark_in_browser(semester, tmp_path / "browser")
    _save_marks(semester, skip=("zoe", L3, "ex2c_proof"))
    semester.run("feedback", "grading")
    page = (semester.output / "feedback" / zoe / L3 / f"{L3}.html").read_text()
    assert BROWSER_COMMENT in page and "Tight and well argued." in (
        semester.output / "feedback" / zoe / L4 / f"{L4}.html").read_text()
    marked = _marks(semester)

    # an erratum fixed in lecture 05's text (nobody has handed it in yet): the class graded again keeps everything
    src5 = semester.solutions / L5 / f"{L5}.ipynb"
    nb5 = nbformat.read(src5, as_version=4)
    first_md = next(c for c in nb5.cells if c.cell_type == "markdown")
    first_md.source += "\n\n*Erratum (week 5): a corrected sentence.*"
    nbformat.write(nb5, src5)
    semester.grade("week04.zip")
    assert _marks(semester) == marked, "an erratum in another lecture changed hand marks"

    # Cy resubmits lecture 03 after the due date, with a changed written answer
    late = cells.set_answer(full3, "ex2c_proof", CY_NEW_ANSWER)
    _moodle_zip(home / "week03-late.zip", L3, {"cy": (late, LATE3)})
    semester.grade("week03-late.zip")
    after = _marks(semester)
    cy_changed = ("cy", L3, "ex2c_proof")
    for key, (score, comment, review) in marked.items():
        assert after[key][:2] == (score, comment), f"hand mark {key} lost: {marked[key]} -> {after[key]}"
        if key == cy_changed:
            assert after[key][2], "a hand mark on an answer the student changed must be flagged for review"
        elif key[:2] != ("cy", L3):
            assert after[key][2] == review, f"{key}: review flag changed without a change"

    semester.run("feedback", "grading")
    console = semester.run("report", "grading")

    # no hidden test anywhere; the console, grades.csv, the LMS export and the report agree
    assert _pages_with_hidden_lines(semester) == []
    grades = _grades_csv(semester)
    report = (semester.output / "report.md").read_text(encoding="utf-8")
    for (student, lecture), score in grades.items():
        if not score:
            continue
        for where, text in (("console", console), ("report.md", report)):
            rows = _score_cells(text, student, lecture)
            assert rows and any(re.search(rf"(?<![\d.]){re.escape(f'{float(score):g}')}(?![\d.])", r) for r in rows), \
                f"{where} does not show {student} {lecture} = {score}: {rows}"
    with open(semester.output / "grades_lms.csv", newline="", encoding="utf-8") as f:
        lms = {r["student_id"]: r for r in csv.DictReader(f)}
    assert lms[_student_id("bo")][L4] == "", "not submitted must be blank in the LMS export"
    assert lms[zoe]["lms_user_id"] == PEOPLE["zoe"][1]
    with open(semester.output / "grades.csv", newline="", encoding="utf-8") as f:
        late_rows = [r for r in csv.DictReader(f) if r["student_id"] == _student_id("cy") and r["assignment"] == L3]
    assert late_rows and late_rows[0]["late"], "Cy's resubmission after the due date must be flagged late"
    print("\n".join(semester.commands))
    print(f"finished at {dt.datetime.now():%H:%M:%S}")
