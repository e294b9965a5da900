"""Feedback without hidden tests, and the instructor's summary report of a grading run.

nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells carry the full test code
-- hidden tests included (nbgrader restores them from the gradebook before running them).
:class:`StripHiddenTests` runs inside ``generate_feedback`` (see :mod:`autograder.grading`) and removes:

* the hidden-test regions (``BEGIN HIDDEN TESTS`` ... ``END HIDDEN TESTS``, or whatever nbgrader's
  ``ClearHiddenTests.begin_test_delimeter`` / ``end_test_delimeter`` are configured to) from the test cells' source;
* the outputs of test cells that contain hidden tests, except the error name and assertion message;
* any output, anywhere in the notebook, that quotes a line of hidden test code (a submission can print
  what it finds in its caller's frame).

After rendering, :func:`leaked_hidden_lines` checks the HTML itself against :func:`hidden_test_lines` (read with
the delimiters of the course's ``nbgrader_config.py``); if any hidden line is still found there, the grader
replaces the page by a score-only summary (:func:`fallback_feedback`).

:func:`write_report` writes ``report.html`` / ``report.md`` with a per-exercise score-distribution plot
(``scores.png``), the grade table, and every submission that failed or was flagged, and why.
"""

from __future__ import annotations

import datetime as _dt
import html as _html
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Iterable

import nbformat
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Bool
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

if TYPE_CHECKING:  # pragma: no cover
    from .grading import GradeRun

__all__ = ["StripHiddenTests", "test_delimiters", "hidden_test_lines", "leaked_hidden_lines", "fallback_feedback",
           "write_report", "exercise_table"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_MIN_CHARS = 10  # hidden lines shorter than this (without blanks) carry too little to check reliably


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _hidden_regions(source: str, begin: str, end: str) -> list[str]:
    """The non-blank lines between the ``begin`` and ``end`` delimiters (nbgrader's rule: a line containing one)."""
    lines, inside, out = source.split("\n"), False, []
    for line in lines:
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside and line.strip():
            out.append(line.strip())
    return out


def test_delimiters(course: Path) -> tuple[str, str]:
    """nbgrader's ``(begin_test_delimeter, end_test_delimeter)`` as configured in ``course/nbgrader_config.py``."""
    config = Config()
    if (Path(course) / "nbgrader_config.py").is_file():
        config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    configured = ClearHiddenTests(config=config)
    return configured.begin_test_delimeter, configured.end_test_delimeter


def hidden_test_lines(course: Path) -> dict[str, dict[str, list[str]]]:
    """``{assignment: {notebook: [hidden test lines]}}`` from the course's source notebooks.

    The regions are found with the course's configured delimiters (:func:`test_delimiters`).  Lines that also
    appear anywhere in the student (release) version are left out: they are not secret.
    """
    course = Path(course)
    begin, end = test_delimiters(course)
    out: dict[str, dict[str, list[str]]] = {}
    for src in sorted((course / "source").glob("*/*.ipynb")):
        assignment, nb_name = src.parent.name, src.stem
        nb = nbformat.read(src, as_version=4)
        lines: list[str] = []
        for cell in nb.cells:
            lines += _hidden_regions(str(cell.source), begin, end)
        release = course / "release" / assignment / src.name
        visible: set[str] = set()
        if release.is_file():
            rel = nbformat.read(release, as_version=4)
            for cell in rel.cells:
                visible |= {_norm(x) for x in str(cell.source).splitlines()}
        out.setdefault(assignment, {})[nb_name] = [x for x in dict.fromkeys(lines) if _norm(x) not in visible]
    return out


def _output_text(output: dict[str, Any]) -> str:
    parts = [str(output.get("text", "")), str(output.get("evalue", ""))]
    parts += [str(x) for x in output.get("traceback", []) or []]
    for v in (output.get("data") or {}).values():
        parts.append(v if isinstance(v, str) else json.dumps(v))
    return _ANSI.sub("", "\n".join(parts))


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for s in secrets:
        if s and s in text:
            text = text.replace(s, "[hidden test code removed]")
    return text


class StripHiddenTests(ClearHiddenTests):
    """Remove hidden tests -- their source, their outputs, and any quotation of them -- from feedback."""

    enforce_metadata = Bool(False).tag(config=True)

    def preprocess(self, nb, resources):
        secrets: list[str] = []
        for cell in nb.cells:
            secrets += _hidden_regions(str(cell.source), self.begin_test_delimeter, self.end_test_delimeter)
        self._secrets = sorted({s for s in secrets if len(_norm(s)) >= 4}, key=len, reverse=True)
        self._secrets_norm = [(_norm(s)) for s in self._secrets if len(_norm(s)) >= _MIN_CHARS]
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        had_hidden = self.begin_test_delimeter in str(cell.source)
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if had_hidden:
            cell.source = cell.source.rstrip("\n") + "\n# (hidden tests are not shown)"
        if cell.cell_type != "code":
            return cell, resources
        new_outputs = []
        for out in cell.get("outputs", []):
            if had_hidden:
                if out.get("output_type") == "error":
                    evalue = _scrub(_ANSI.sub("", str(out.get("evalue", ""))), self._secrets)
                    out["evalue"] = evalue
                    out["traceback"] = [f"{out.get('ename', 'Error')}: {evalue}"]
                    new_outputs.append(out)
                continue
            text = _norm(_output_text(out))
            if any(s in text for s in self._secrets_norm):
                new_outputs.append(nbformat.v4.new_output(
                    "stream", name="stdout", text="[output removed: it quoted hidden test code]\n"))
            else:
                new_outputs.append(out)
        if had_hidden and len(new_outputs) < len(cell.get("outputs", [])):
            new_outputs.insert(0, nbformat.v4.new_output(
                "stream", name="stdout", text="(the output of hidden tests is not shown)\n"))
        cell.outputs = new_outputs
        return cell, resources


def leaked_hidden_lines(html_text: str, hidden_lines: Iterable[str]) -> list[str]:
    """Hidden test lines (of at least 10 non-blank characters) that occur in the rendered page's text."""
    text = re.sub(r"<[^>]*>", "", html_text)
    text = _norm(_html.unescape(text))
    return [line for line in hidden_lines if len(_norm(line)) >= _MIN_CHARS and _norm(line) in text]


def _esc(x: Any) -> str:
    return _html.escape(str(x))


def fallback_feedback(student: str, assignment: str, notebook: str, exercises: dict[str, tuple[float, float]],
                      events: list[dict[str, Any]]) -> str:
    """A score-only feedback page, used when the notebook could not be rendered safely."""
    from .grading import EVENT_KINDS

    rows = "".join(f"<tr><td>{_esc(k)}</td><td>{'to be graded by hand' if v[0] is None else f'{v[0]:g}'}</td>"
                   f"<td>{v[1]:g}</td></tr>" for k, v in exercises.items())
    notes = "".join(f"<li><b>{_esc(EVENT_KINDS.get(e['kind'], ('', e['kind']))[1])}</b>: {_esc(e['detail'])}</li>"
                    for e in events if e["kind"] not in ("suspicious_code", "sandbox_off"))
    total = sum(v[0] or 0.0 for v in exercises.values()), sum(v[1] for v in exercises.values())
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Feedback: {_esc(notebook)}</title>"
            f"</head><body><h1>Feedback for {_esc(student)}: {_esc(assignment)} / {_esc(notebook)}</h1>"
            f"<p>Score: <b>{total[0]:g} / {total[1]:g}</b></p>"
            f"<table border='1' cellpadding='4'><tr><th>cell</th><th>score</th><th>max</th></tr>{rows}</table>"
            f"<h2>Notes from the grader</h2><ul>{notes or '<li>none</li>'}</ul></body></html>")


# ----------------------------------------------------------------------------------------------------
# The instructor's report


def exercise_table(run: GradeRun) -> dict[str, dict[str, list[tuple[float | None, float]]]]:
    """``{assignment: {exercise: [(score or None if hand-grading is pending, max) per submission]}}``."""
    table: dict[str, dict[str, list[tuple[float | None, float]]]] = {}
    for r in run.results:
        for ex, (s, m) in r.exercises.items():
            table.setdefault(r.assignment, {}).setdefault(ex, []).append((s, m))
    return table


def _buckets(vals: list[tuple[float | None, float]]) -> tuple[int, int, int, int]:
    """(full marks, partial, zero, pending hand-grading) counts."""
    full = sum(1 for s, m in vals if s is not None and m > 0 and s >= m - 1e-9)
    zero = sum(1 for s, _ in vals if s is not None and s <= 1e-9)
    pend = sum(1 for s, _ in vals if s is None)
    return full, len(vals) - full - zero - pend, zero, pend


def _plot(run: GradeRun, path: Path) -> Path | None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = exercise_table(run)
    rows = [(a, ex, vals) for a in sorted(table) for ex, vals in table[a].items()]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8.5, 0.42 * len(rows) + 1.4))
    labels, full, part, zero, pend = [], [], [], [], []
    for a, ex, vals in rows:
        n = len(vals)
        f, p, z, q = (x / n for x in _buckets(vals))
        labels.append(f"{a} · {ex}" if len(table) > 1 else ex)
        full.append(f)
        part.append(p)
        zero.append(z)
        pend.append(q)
    y = list(range(len(rows)))[::-1]
    left = [0.0] * len(rows)
    for vals_, color, label in ((full, "#2a9d8f", "full marks"), (part, "#e9c46a", "partial"),
                                (zero, "#e76f51", "zero"), (pend, "#bbbbbb", "to grade by hand")):
        ax.barh(y, vals_, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, vals_, strict=True)]
    for yi, (_, _, vals) in zip(y, rows, strict=True):
        done = [s for s, _ in vals if s is not None]
        text = f"mean {sum(done) / len(done):.2g}/{vals[0][1]:g}" if done else "pending"
        ax.text(1.01, yi, text, va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction of submissions")
    ax.set_title(f"Score distribution per exercise ({len(run.results)} submissions)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 if len(rows) > 3 else -0.25), ncol=4,
              fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _problems(run: GradeRun) -> list[tuple[Any, list[dict[str, Any]]]]:
    from .grading import EVENT_KINDS

    out = []
    for r in sorted(run.results, key=lambda r: (r.assignment, r.student)):
        evs = [e for e in r.events if EVENT_KINDS.get(e["kind"], ("info",))[0] in ("error", "flag")
               and e["kind"] != "sandbox_off"]
        if evs:
            out.append((r, evs))
    return out


def write_report(run: GradeRun, course: Path) -> tuple[Path, Path]:
    """Write ``report.md``, ``report.html`` and ``scores.png`` into the run's output folder."""
    from .grading import EVENT_KINDS

    out = Path(run.output_dir)
    png = _plot(run, out / "scores.png")
    table = exercise_table(run)
    now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    n_nb = max(1, run.notebooks_graded)
    graded_seconds = sum(r.seconds for r in run.results if r.regraded)
    md: list[str] = [f"# Grading report ({now})", ""]
    if run.sandbox_warning:
        md += ["> **WARNING: student code was not sandboxed.**", ">"]
        md += [f"> {line.strip('! ')}" for line in run.sandbox_warning.splitlines()
               if line.strip("! ").strip()]
        md += [""]
    md += [f"- submissions: {len(run.results)} ({run.graded_now} graded in this run, {run.skipped} unchanged)",
           f"- layout detected: `{run.layout}`; grades: `{run.grades_csv.name}`; feedback: `feedback/<student>/"
           "<assignment>/`",
           f"- time: {run.seconds:.1f} s in total with {run.workers} worker(s); "
           + (f"{graded_seconds / n_nb:.1f} s of worker time per notebook" if run.graded_now else
              "nothing needed grading"),
           *(["- phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in run.timings.items())]
             if run.timings else []),
           "", "```", run.sandbox, "```", "", "## Grades", "", "| student | assignment | score | max | manual "
           "grading pending |", "| --- | --- | ---: | ---: | --- |"]
    for r in sorted(run.results, key=lambda r: (r.assignment, r.student)):
        md.append(f"| {r.student} | {r.assignment} | {r.score:g} | {r.max_score:g} | "
                  f"{'yes' if r.needs_manual_grade else ''} |")
    md += ["", "## Score distribution per exercise", ""]
    if png:
        md += [f"![score distribution]({png.name})", ""]
    md += ["| assignment | exercise | points | mean | full marks | partial | zero | to grade by hand |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for a in sorted(table):
        for ex, vals in table[a].items():
            n = len(vals)
            done = [s for s, _ in vals if s is not None]
            f, p, z, q = _buckets(vals)
            mean = f"{sum(done) / len(done):.2f}" if done else "-"
            md.append(f"| {a} | {ex} | {vals[0][1]:g} | {mean} | {f}/{n} | {p}/{n} | {z}/{n} | {q}/{n} |")
    md += ["", "## Submissions that failed or were flagged", ""]
    problems = _problems(run)
    if not problems:
        md.append("None.")
    for r, evs in problems:
        md.append(f"### {r.student} / {r.assignment}: {r.score:g} / {r.max_score:g}")
        md.append("")
        for e in evs:
            sev, title = EVENT_KINDS.get(e["kind"], ("flag", e["kind"]))
            where = " ".join(x for x in (e.get("notebook") or "", f"[{e['cell']}]" if e.get("cell") else "") if x)
            detail = " ".join(str(e["detail"]).split())[:600]
            md.append(f"- **{title}** ({sev}){' in ' + where if where else ''}: {detail}")
        md.append("")
    if run.unmatched:
        md += ["## Files that were not graded", "", "| file | reason |", "| --- | --- |"]
        md += [f"| `{p}` | {why} |" for p, why in run.unmatched]
        md.append("")
    if run.duplicates:
        md += ["## Duplicate files (the newest was graded)", ""]
        md += [f"- ignored `{old}`, graded `{new}`" for old, new in run.duplicates]
        md.append("")
    md_text = "\n".join(md) + "\n"
    md_path = out / "report.md"
    md_path.write_text(md_text)
    html_path = out / "report.html"
    html_path.write_text(_md_to_html(md_text, title="Grading report"))
    run.report_md, run.report_html = md_path, html_path
    (out / "results.json").write_text(json.dumps({
        "results": [dict(r.__dict__) for r in run.results], "unmatched": run.unmatched,
        "duplicates": run.duplicates, "layout": run.layout, "workers": run.workers,
        "seconds": run.seconds, "graded_now": run.graded_now, "skipped": run.skipped,
        "sandbox": run.sandbox}, indent=1, default=str))
    return md_path, html_path


def _inline(text: str) -> str:
    text = _esc(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"!\[([^\]]*)\]\(([^)]+)\)", r"<img alt='\1' src='\2' style='max-width:100%'>", text)
    return text


def _md_to_html(md: str, title: str) -> str:
    """Render the small Markdown subset the report uses (headings, lists, tables, code, quotes)."""
    out, lines, i = [], md.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append("<pre>" + _esc("\n".join(lines[i + 1:j])) + "</pre>")
            i = j + 1
            continue
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            head, body = rows[0], [r for r in rows[1:] if not all(set(c) <= set("-: ") for c in r)]
            out.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</table>")
            continue
        m = re.match(r"(#+) (.*)", line)
        if m:
            n = len(m.group(1))
            out.append(f"<h{n}>{_inline(m.group(2))}</h{n}>")
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.startswith(">"):
            quote = []
            while i < len(lines) and lines[i].startswith(">"):
                quote.append(_inline(lines[i].lstrip("> ")))
                i += 1
            out.append("<div class='warn'>" + "<br>".join(quote) + "</div>")
            continue
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    css = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
           "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.2em .6em;"
           "font-size:.9em}pre{background:#f4f4f4;padding:.6em}.warn{background:#fde2e1;border:2px solid"
           " #c0392b;padding:.6em;font-weight:bold}code{background:#f4f4f4}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_esc(title)}</title>"
            f"<style>{css}</style></head><body>" + "\n".join(out) + "</body></html>\n")
