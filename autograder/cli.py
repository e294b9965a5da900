"""``dp-course``: the command line of the course kit (release, grade, formgrade, feedback, report, check, demo,
student-copy).

Installed with the package (``pip install -e .`` / ``python3 run.py setup``); also ``python3 run.py course ...``.
Each subcommand has ``--help`` with examples.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from .formgrade import formgrade
from .isolation import isolation
from .course import release
from .check.checking import check_notebooks
from .course.course import SOLUTIONS_DIR, assignments, course_folder
from .intake.deadlines import parse_due
from .demo import run_demo
from .run.feedback_refresh import refresh_feedback
from .run.grading import grade
from .course.limits import Limits
from .run.outputs import refresh
from .course.student_copy import make_student_copy

__all__ = ["main", "build_parser"]

_DEFAULTS = Limits()

_DESCRIPTION = """\
The differential-privacy course kit.

  release       regenerate the student notebooks (notebooks/) from the instructor sources (solutions/)
  grade         grade a folder or zip of submissions: grades.csv, an LMS export, per-student feedback, a report
  formgrade     hand-grade the written answers of a grading run in nbgrader's Formgrader (with mark schemes)
  feedback      after hand grading: regenerate the changed feedback pages (no re-run), then as report
  report        rewrite grades.csv, the LMS export and the report from the gradebook (after hand grading)
  check         check your own notebook against the visible tests, as the grader runs them
  demo          grade a small sample class (including hostile submissions) in a temporary course
  student-copy  write what students receive (notebooks, library, guides; no solutions, no hidden tests)

Relative paths are relative to the folder where you type the command (also through `python3 run.py course`).
"""

_GRADE_EXAMPLES = """\
examples:
  dp-course grade submitted/                       nbgrader layout: submitted/<student>/<lecture>/<lecture>.ipynb
  dp-course grade downloads/ -o grading/           LMS download: <student>_..._<lecture>.ipynb files
  dp-course grade submissions.zip --workers 4      a zip of either layout, 4 parallel graders
  dp-course grade downloads/ --assignment 01_foundations --cell-timeout 30
  dp-course grade downloads/ --student-pattern '^(?P<student>[a-z]+\\d*)-'
  dp-course grade moodle.zip --due 03_simulation_lemma=2026-10-01T23:59+02:00

Student code runs in a sandbox (bubblewrap, installed with the course kit): no network, no view of the
course directory, the solutions or other submissions. Where no sandbox works, grading refuses and says why;
--no-sandbox runs the submissions anyway, unprotected (the course directory is then kept read-only to them;
the report says what protection was in place). `python -m autograder.isolation.isolation` shows what this machine gives.

The instructor sources come from --solutions DIR; by default the course repository's solutions/ (when run
from a checkout) or ./solutions in the current directory.

Re-running with the same output folder grades only new or changed submissions (use --force to re-grade
everything). When a lecture's source changed (an erratum, a kit update), that lecture is updated in place and
exactly its submissions are graded again; a lecture added to the sources is added. Grades, hand marks and
comments are kept (a hand mark whose cell or answer changed is flagged for review); other lectures are not
touched. A step that would discard instructor data (a lecture removed from the sources while graded, a
hand-marked cell removed, an unreadable state.json or gradebook) stops with what would be lost and writes a
backup to course/backups/; --allow-discard lets it go on.

Output folder: grades.csv (one row per student and lecture; blank score = not submitted),
grades_lms.csv (one row per student, a column per lecture, the LMS's id; lms/ holds Canvas's and Moodle's own
import files when their file names were graded), feedback/<student>/<lecture>/<notebook>.html (hidden tests
removed), report.html / report.md / scores.png, and course/ (an nbgrader course directory with the gradebook).
Hand-grade the written answers with `dp-course formgrade OUTPUT`; then `dp-course feedback OUTPUT` brings the
pages up to date (nothing re-run) and rewrites the grades and the report (`dp-course report OUTPUT` does only
the latter).

Due dates (--due, repeatable) are kept in the gradebook: later runs flag late work without repeating them. A
submission's time is nbgrader's timestamp.txt, else the LMS's: a zip member's date or a file's modification
time (unzip keeps the LMS's times; a plain copy does not). Canvas's LATE marker is flagged as well. Two files
of one student and lecture: the newer is graded; at equal times the copy "x (1).ipynb" / "x-1.ipynb" wins.
"""

_FEEDBACK_EXAMPLES = """\
examples:
  dp-course feedback grading/          regenerate the pages whose grades or comments changed
  dp-course feedback grading/ --all    regenerate every page

After dp-course grade, mark the written answers and add comments with nbgrader's Formgrader (they are stored in
OUTPUT/course/gradebook.db). This command then regenerates the feedback page of every submission whose grades
or comments changed since its page was written, from the notebooks already graded: nothing is executed again.
Each page shows the hand marks and comments, no hidden test (a page that would show one is replaced by a
score-only summary and flagged in the report), says which written answers are still to be marked by hand, and
renders its maths offline (MathJax is copied into OUTPUT/feedback/_static/). Then, as `dp-course report`, it
prints the grade table and rewrites grades.csv, the LMS exports and the report from the gradebook.
Pages: OUTPUT/feedback/<student>/<lecture>/<notebook>.html.
"""

_REPORT_EXAMPLES = """\
examples:
  dp-course report grading/         print the grade table; rewrite grades.csv, grades_lms.csv, lms/, report.*

Reads the scores from the gradebook (grading/course/gradebook.db), so hand marks given in Formgrader since
the last run appear in the console, grades.csv, the LMS files and the report alike. Nothing is graded.
"""

_STUDENT_COPY_EXAMPLES = """\
examples:
  dp-course student-copy ~/dp-course-students      then zip it, or push it to the students' repository

What students receive: notebooks/, the dp_course library, pyproject.toml, run.py, environment.yml, postBuild,
the student JupyterLab settings, the student guide, the errata and a README for students. Not copied:
solutions/, autograder/, tests/, the instructor guide, .git. `python3 run.py lab` works in the copy (it
installs the library only; the dp-course command is not in it). DIR must be new or empty.
"""

_FORMGRADE_EXAMPLES = """\
examples:
  dp-course formgrade grading/                    open the Formgrader on the run graded into grading/
  dp-course formgrade grading/ --headless --port 8890
  dp-course formgrade grading/ -- --ServerApp.token=secret   options after -- go to JupyterLab

Starts JupyterLab on OUTPUT/course (the run's nbgrader course: gradebook, sources, autograded notebooks),
listening on 127.0.0.1 only, and opens nbgrader's Formgrader there: Manual Grading lists the submissions;
each written answer is shown with its mark scheme from the instructor's source notebook (never part of
students' feedback). Scores and comments are saved into OUTPUT/course/gradebook.db as you type.
Do not use the Formgrader's own Autograde button: grade (and re-grade) with dp-course grade, which sandboxes
the submissions. Also: python3 run.py lab --instructor OUTPUT.
"""

_CHECK_EXAMPLES = """\
examples:
  dp-course check 01_foundations.ipynb
  dp-course check ~/Downloads/my_copy.ipynb --assignment 01_foundations
  dp-course check a.ipynb b.ipynb    several notebooks in one go (one start-up, each in its own kernel)

Runs the notebook top to bottom in a fresh kernel (as the grader does) and reports, per exercise, which
visible tests pass and the points at stake. Hidden tests are not available here; they count when the
instructor grades. The released notebooks come from --notebooks DIR; by default the course repository's
notebooks/ or ./notebooks. Exit status: 0 if every visible test passes, 1 if not, 2 on error (also when the
notebook could not be run at all).
"""

_DEMO_EXAMPLES = """\
examples:
  dp-course demo                    grade a sample class on the first lecture
  dp-course demo --synthetic        use the tiny built-in assignment (fastest)
  dp-course demo --dir /tmp/demo    keep everything in /tmp/demo

The sample class: a full solution, an untouched notebook, a half-done one, a file that is not a notebook,
and hostile submissions (a loop that ignores interrupts, a fork bomb, a memory bomb, one that snoops for
the solutions and monkeypatches math.isclose, one that kills its kernel).
"""

_RELEASE_EXAMPLES = """\
examples:
  dp-course release                  regenerate every lecture
  dp-course release 01_foundations   regenerate one lecture
  dp-course release --check          exit 1 if notebooks/ is out of date
"""


def _add_limits(p: argparse.ArgumentParser, *, sandbox: bool = True) -> None:
    g = p.add_argument_group("limits")
    g.add_argument("--cell-timeout", type=float, default=_DEFAULTS.cell_timeout, metavar="S",
                   help=f"seconds one cell may run (default {_DEFAULTS.cell_timeout:g})")
    g.add_argument("--notebook-timeout", type=float, default=_DEFAULTS.notebook_timeout, metavar="S",
                   help=f"seconds a whole notebook may run (default {_DEFAULTS.notebook_timeout:g})")
    g.add_argument("--memory-mb", type=int, default=_DEFAULTS.memory_mb, metavar="MB",
                   help=f"memory limit of each kernel process and of its whole process tree "
                        f"(default {_DEFAULTS.memory_mb})")
    g.add_argument("--max-notebook-mb", type=float, default=_DEFAULTS.max_notebook_mb, metavar="MB",
                   help=f"larger notebook files are not opened (default {_DEFAULTS.max_notebook_mb:g})")
    if sandbox:
        g.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                       help="auto: the sandbox if it works here, else limits only (with a note); "
                            "bwrap: refuse to run without it; none: limits only")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dp-course", description=_DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    fmt = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser("release", help="regenerate notebooks/ from solutions/", epilog=_RELEASE_EXAMPLES,
                       formatter_class=fmt, description="Regenerate the student notebooks from the sources.")
    p.add_argument("lectures", nargs="*", metavar="LECTURE", help="lectures to regenerate (default: all)")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 if notebooks/ is out of date")

    p = sub.add_parser("grade", help="grade submissions (folder or zip)", epilog=_GRADE_EXAMPLES,
                       formatter_class=fmt,
                       description="Autograde every submission with nbgrader, in parallel, sandboxed.")
    p.add_argument("submissions", type=Path, metavar="SUBMISSIONS", help="folder or .zip of submissions")
    p.add_argument("-o", "--output", type=Path, default=Path("grading"), metavar="DIR",
                   help="output folder (default: ./grading); keep it to make re-runs incremental")
    p.add_argument("--assignment", action="append", metavar="LECTURE",
                   help="grade only this lecture (repeatable; default: every lecture in solutions/)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="parallel graders (default: number of CPU cores)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="grade on the workers of this Dask scheduler instead of local processes (one thread per "
                        "worker; the submissions and the output folder on a file system they share)")
    p.add_argument("--force", action="store_true", help="re-grade unchanged submissions too")
    p.add_argument("--student-pattern", metavar="REGEX",
                   help="regular expression with (?P<student>...) applied to each file's relative path")
    p.add_argument("--solutions", type=Path, default=None, metavar="DIR",
                   help="the instructor sources: <lecture>/<lecture>.ipynb with solutions and hidden tests "
                        "(default: the course repository's solutions/, else ./solutions)")
    p.add_argument("--due", action="append", metavar="LECTURE=WHEN", type=_due, default=None,
                   help="due date of a lecture, e.g. 03_simulation_lemma=2026-10-01T23:59+02:00 (local time without "
                        "an offset; repeatable; kept in the gradebook for later runs)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-feedback", action="store_true",
                   help="skip the per-student HTML feedback (faster; grades and report only)")
    _add_limits(p, sandbox=False)
    p.add_argument("--allow-discard", action="store_true",
                   help="let the course update discard instructor data it otherwise refuses to (grades of a lecture "
                        "removed from the sources, hand marks on a removed cell, an unreadable state.json or "
                        "gradebook); a dated backup of the gradebook is written to course/backups/ first")
    g = p.add_argument_group("safety")
    g.add_argument("--no-sandbox", action="store_true",
                   help="UNSAFE: run the submissions even where no sandbox works (they can then read your files "
                        "and use the network); grading refuses without this flag")
    g.add_argument("--single-kernel", action="store_true",
                   help="run the test cells in the student's own kernel, as plain nbgrader does (fallback and "
                        "benchmark comparison; a submission can then tamper with its tests). Default: tests run "
                        "in a separate trusted kernel that decides the verdicts")

    p = sub.add_parser("feedback", help="regenerate feedback after hand grading (no re-execution)",
                       epilog=_FEEDBACK_EXAMPLES, formatter_class=fmt,
                       description="Bring the feedback pages, grades.csv, the LMS exports and the report of a grading "
                       "output folder up to date with its gradebook (hand marks, comments), without running any "
                       "notebook.")
    p.add_argument("output", type=Path, metavar="OUTPUT", help="the output folder of dp-course grade (./grading)")
    p.add_argument("--all", action="store_true", dest="everything",
                   help="regenerate every page, not only those whose grades or comments changed")

    p = sub.add_parser("report", help="rewrite grades and report from the gradebook (after hand grading)",
                       epilog=_REPORT_EXAMPLES, formatter_class=fmt,
                       description="Print the grade table and rewrite grades.csv, the LMS exports and the report "
                       "from the gradebook of a grading output folder, without grading.")
    p.add_argument("output", type=Path, metavar="OUTPUT", help="the grading output folder (grade -o DIR)")

    p = sub.add_parser("student-copy", help="write what students receive into a new folder",
                       epilog=_STUDENT_COPY_EXAMPLES, formatter_class=fmt,
                       description="Copy the student notebooks, the library and the student guides into DIR.")
    p.add_argument("dir", type=Path, metavar="DIR", help="a new or empty folder")
    p = sub.add_parser("formgrade", help="hand-grade a grading run in nbgrader's Formgrader",
                       epilog=_FORMGRADE_EXAMPLES, formatter_class=fmt,
                       description="Open nbgrader's Formgrader on a grading run, with the mark schemes.")
    p.add_argument("output", type=Path, metavar="OUTPUT",
                   help="the output folder of a grading run (what you passed to dp-course grade -o)")
    p.add_argument("--port", type=int, default=formgrade.DEFAULT_PORT, metavar="P",
                   help=f"port on 127.0.0.1 (default {formgrade.DEFAULT_PORT}; the next free one if taken)")
    p.add_argument("--headless", action="store_true", help="do not open a browser; print the address")

    p = sub.add_parser("check", help="check your notebook against the visible tests", epilog=_CHECK_EXAMPLES,
                       formatter_class=fmt, description="Run the visible tests on your notebook, as the "
                       "grader does.")
    p.add_argument("notebook", type=Path, nargs="+", metavar="NOTEBOOK",
                   help="your .ipynb file (several: each is checked on its own, one report after the other)")
    p.add_argument("--assignment", metavar="LECTURE", help="the lecture (default: recognised automatically)")
    p.add_argument("--notebooks", type=Path, default=None, metavar="DIR",
                   help="the released student notebooks (default: the course repository's notebooks/, "
                        "else ./notebooks)")
    _add_limits(p)

    p = sub.add_parser("demo", help="grade a sample class in a temporary course", epilog=_DEMO_EXAMPLES,
                       formatter_class=fmt, description="The end-to-end example: build a course, make "
                       "sample submissions, grade them, show the results.")
    p.add_argument("--synthetic", action="store_true", help="use the tiny built-in assignment")
    p.add_argument("--assignment", metavar="LECTURE", help="lecture to use (default: the first one)")
    p.add_argument("--dir", type=Path, default=None, metavar="DIR",
                   help="where to build it (default: a new temporary folder)")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="parallel graders")
    p.add_argument("--cell-timeout", type=float, default=10.0, metavar="S",
                   help="seconds per cell (default 10; the hostile loops run into it)")
    p.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto", help="sandbox mode")
    return parser


def _due(text: str) -> tuple[str, dt.datetime]:
    """argparse type of ``--due``: a bad value stops the command at once (exit 2, message naming --due)."""
    try:
        return parse_due(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                  memory_mb=args.memory_mb, max_notebook_mb=args.max_notebook_mb)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dp-course``; returns the exit status.

    While it runs, the kit's status lines (the ``autograder`` logger, INFO and up) go to stderr.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    # everything after a lone `--` is for JupyterLab (dp-course formgrade); argparse would take it as OUTPUT
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = build_parser()
    args = parser.parse_args(argv[:cut])
    args.jupyter_args = argv[cut + 1:]
    if args.jupyter_args and args.command != "formgrade":
        parser.error(f"options after -- are for dp-course formgrade only, got {' '.join(args.jupyter_args)!r}")
    logger = logging.getLogger("autograder")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        return _run(args)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "release":
            if not assignments(SOLUTIONS_DIR):
                raise ValueError("release regenerates notebooks/ from solutions/ in the course repository, and "
                                 f"{SOLUTIONS_DIR} holds no lecture: run it from a checkout "
                                 "(python3 run.py course release)")
            return release.main([*args.lectures, *(["--check"] if args.check else [])])
        if args.command == "grade":
            run = grade(args.submissions, args.output, solutions_dir=course_folder("solutions", args.solutions),
                        assignments=args.assignment, workers=args.workers, limits=_limits(args),
                        sandbox_mode="none" if args.no_sandbox else "bwrap", force=args.force,
                        progress=not args.no_progress, student_pattern=args.student_pattern,
                        feedback=not args.no_feedback, trusted=not args.single_kernel,
                        allow_discard=args.allow_discard, due=dict(args.due or []), scheduler=args.scheduler)
            print(run.table())
            print()
            print(f"grades:   {run.grades_csv}")
            if not args.no_feedback:
                print(f"feedback: {run.output_dir / 'feedback'}")
            print(f"report:   {run.report_html}")
            for path in run.lms_exports:
                print(f"LMS:      {path}")
            print("protection: " + "; ".join(line.strip() for line in run.sandbox.splitlines()[:3]))
            if run.unmatched:
                print(f"note: {len(run.unmatched)} file(s) could not be matched to a student and a lecture; "
                      "see the report")
            return 0
        if args.command == "feedback":
            done = refresh_feedback(args.output, everything=args.everything)
            print(done.describe())
            return 0
        if args.command == "report":
            run = refresh(args.output)
            print(run.table())
            print()
            print(f"grades:   {run.grades_csv}")
            for path in run.lms_exports:
                print(f"LMS:      {path}")
            print(f"report:   {run.report_html}")
            return 0
        if args.command == "student-copy":
            dest = make_student_copy(args.dir)
            print(f"student copy: {dest} (notebooks/, dp_course/, guides; no solutions, no hidden tests); "
                  f"students run `python3 run.py lab` in it")
            return 0
        if args.command == "formgrade":
            return formgrade.serve(args.output, port=args.port, headless=args.headless,
                                   jupyter_args=args.jupyter_args)
        if args.command == "check":
            notebooks = course_folder("notebooks", args.notebooks)
            info = isolation.probe(args.sandbox)
            if not info.isolated and args.sandbox != "none":
                print("note: no sandbox on this machine, so your notebook runs as your user with time limits only "
                      f"(fine for your own code). Why: {'; '.join(info.problems)}", file=sys.stderr)
            results = check_notebooks(args.notebook, assignment=args.assignment, notebooks_dir=notebooks,
                                      limits=_limits(args), sandbox_mode=args.sandbox)
            print("\n\n".join(result.render() for result in results))
            if any(result.kernel_failed for result in results):
                return 2
            return 0 if all(result.all_passed for result in results) else 1
        if args.command == "demo":
            run_demo(workdir=args.dir, synthetic=args.synthetic, assignment=args.assignment,
                     workers=args.workers, cell_timeout=args.cell_timeout, sandbox_mode=args.sandbox)
            return 0
    except (ValueError, RuntimeError) as exc:
        print(f"dp-course {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"dp-course {args.command}: interrupted", file=sys.stderr)
        return 130
    return 2  # pragma: no cover


if __name__ == "__main__":
    raise SystemExit(main())
