"""The sizing table of ``docs/cluster.md``: hours to grade a large class on N workers, from measured numbers.

    python benchmarks/capacity.py            # print the table (Markdown) from the committed measurements
    python benchmarks/capacity.py --write    # also put it into docs/cluster.md, between its capacity markers

Inputs, all from ``benchmarks/results/notebook_cost.json`` (written by ``benchmarks/bench_notebook_cost.py``):

* the **busy core-seconds per notebook** of each lecture (the worker side: worker, trusted kernel, the sandboxed
  student kernel, the feedback page), measured with one worker;
* the **merge step per notebook** (the main process, the only writer of the gradebook, the state file and the
  report): the median CPU time of merging one finished notebook.  CPU time, because the measuring machine is
  shared (a load average of about 20 on 2 cores during the committed run) and the step's wall time there is
  mostly waiting for a core; the wall time is printed beside it, as the ceiling of a head node that busy.
  TODO(integrator): when the Dask branch
  (issue 24, items 1-4) records its own "merge step per notebook" in ``benchmarks/results/grading.md``, pass
  it here with ``--merge-seconds`` (or read it from ``grading.json``) and run ``--write`` again.

The model, stated so it can be checked:

* N workers, one per core, grade N notebooks at a time; a notebook of lecture L occupies a core for
  ``busy(L) x headroom`` seconds (``--headroom``, default 1.25: the measured figure is CPU time, and a real
  run also waits -- kernel start-up, disk, the scheduler's round trip; the factor is an allowance, not a
  measurement).  Worker throughput: ``N / (busy(L) x headroom)`` notebooks per second.
* The main process merges one notebook at a time, concurrently with the workers: at most
  ``1 / merge`` notebooks per second whatever N is (the merge-step ceiling).
* A deadline of ``students`` notebooks of one lecture takes ``students / min(worker throughput, ceiling)``;
  a term is the sum of its lectures' deadlines.  Start-up (a worker and its trusted kernel, seconds, once per
  worker) and the per-run steps (course set-up, the report) are left out: minutes at most.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "notebook_cost.json"
DOC = ROOT / "docs" / "cluster.md"
BEGIN = "<!-- capacity-table: begin (python benchmarks/capacity.py --write) -->"
END = "<!-- capacity-table: end -->"
WORKERS = (2, 8, 32, 128)
STUDENTS = 10_000
HEADROOM = 1.25


@dataclass(frozen=True)
class Inputs:
    """The measured numbers the table is computed from."""

    busy: Mapping[str, float]      # {lecture: busy core-seconds per notebook}
    merge_seconds: float           # the main process's merge step per notebook (CPU time)
    source: str                    # where the numbers come from, for the table's caption
    merge_wall_seconds: float | None = None  # its wall time on the measuring machine, if known


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def load(path: Path = RESULTS, merge_seconds: float | None = None) -> Inputs:
    """The inputs from ``notebook_cost.json`` (``merge_seconds``, if given, replaces the measured merge step)."""
    data = json.loads(Path(path).read_text())
    per = data["summary"]["per_lecture"]
    busy = {lecture: _positive(f"busy core-seconds of {lecture}", float(v["busy_core_seconds"]))
            for lecture, v in per.items()}
    if not busy:
        raise ValueError(f"{path} must hold at least one lecture's busy core-seconds, got none")
    measured = data["summary"]["merge"]
    merge = _positive("merge_seconds", merge_seconds if merge_seconds is not None else float(measured["cpu_median"]))
    wall = float(measured["wall_median"]) if merge_seconds is None and measured.get("wall_median") else None
    source = f"`{Path(path).relative_to(ROOT) if Path(path).is_relative_to(ROOT) else path}`"
    if merge_seconds is not None:
        source += f", merge step given as {merge_seconds:g} s"
    return Inputs(busy, merge, source, wall)


def deadline_hours(busy: float, merge_seconds: float, workers: int, students: int = STUDENTS,
                   headroom: float = HEADROOM) -> tuple[float, str]:
    """Hours to grade ``students`` notebooks of one lecture on ``workers`` workers, and what bounds it.

    Raises:
        ValueError: ``workers`` or ``students`` not an integer >= 1, or ``busy``, ``merge_seconds`` or
            ``headroom`` not a finite number > 0 (``headroom`` >= 1).
    """
    for name, n in (("workers", workers), ("students", students)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {n!r}")
    _positive("busy", busy)
    _positive("merge_seconds", merge_seconds)
    if _positive("headroom", headroom) < 1:
        raise ValueError(f"headroom must be a number >= 1, got {headroom!r}")
    per_second_workers = workers / (busy * headroom)
    per_second_merge = 1 / merge_seconds
    rate = min(per_second_workers, per_second_merge)
    return students / rate / 3600, ("workers" if per_second_workers <= per_second_merge else "merge step")


def ceiling_per_hour(merge_seconds: float) -> float:
    """Notebooks per hour the single writer can merge."""
    return 3600 / _positive("merge_seconds", merge_seconds)


def _hours(h: float) -> str:
    return f"{h:.2f} h" if h < 10 else f"{h:.1f} h"


def table(inputs: Inputs, workers: Sequence[int] = WORKERS, students: int = STUDENTS,
          headroom: float = HEADROOM) -> str:
    """The Markdown table (and its caption) for ``students`` students x every lecture in ``inputs``."""
    busy = inputs.busy
    n_lectures = len(busy)
    mean = sum(busy.values()) / n_lectures
    worst_name = max(busy, key=lambda k: busy[k])
    worst = busy[worst_name]
    ceiling = ceiling_per_hour(inputs.merge_seconds)
    crossover = mean * headroom / inputs.merge_seconds
    lines = [
        f"Computed by `benchmarks/capacity.py` from {inputs.source}: {students:,} students x {n_lectures} "
        f"lectures; busy core-seconds per notebook {mean:.2f} on average over the lectures "
        f"(from {min(busy.values()):.2f} to {worst:.2f}, `{worst_name}`), x {headroom:g} headroom; merge step "
        f"{inputs.merge_seconds:.3f} s of CPU time per notebook in the main process.",
        "",
        f"| workers (cores) | one deadline: {students:,} notebooks, average lecture | one deadline: "
        f"{students:,} notebooks of `{worst_name}` | a term: {students * n_lectures:,} notebooks | bound by |",
        "| ---: | ---: | ---: | ---: | --- |",
    ]
    for n in workers:
        avg_h, avg_bound = deadline_hours(mean, inputs.merge_seconds, n, students, headroom)
        worst_h, worst_bound = deadline_hours(worst, inputs.merge_seconds, n, students, headroom)
        term = [deadline_hours(b, inputs.merge_seconds, n, students, headroom) for b in busy.values()]
        term_h = sum(h for h, _ in term)
        bounds = {avg_bound, worst_bound, *(b for _, b in term)}
        bound = "merge step" if bounds == {"merge step"} else ("workers" if bounds == {"workers"} else
                                                               "workers / merge step")
        lines.append(f"| {n} | {_hours(avg_h)} | {_hours(worst_h)} | {_hours(term_h)} | {bound} |")
    core_hours = students * sum(busy.values()) * headroom / 3600
    lines += [
        "",
        f"A term costs {core_hours:,.0f} core-hours on the worker side ({students:,} x the sum over the lectures "
        f"of busy core-seconds x headroom), however many workers share it.",
        "",
        f"Merge-step ceiling: the single writer takes at most {ceiling:,.0f} notebooks per hour "
        f"({students:,} notebooks in no less than {_hours(students / ceiling)}), whatever the number of "
        f"workers; past about {crossover:,.0f} workers on the average lecture, more workers stop helping.",
    ]
    if inputs.merge_wall_seconds:
        slow = ceiling_per_hour(inputs.merge_wall_seconds)
        lines[-1] += (f" The merge step's wall time on the measuring machine was {inputs.merge_wall_seconds:.2f} s "
                      f"(its cores shared by many jobs): a head node that busy merges only {slow:,.0f} notebooks "
                      f"per hour, so give the main process a core of its own and the output folder a local disk.")
    return "\n".join(lines)


def embed(doc_text: str, rendered: str) -> str:
    """``doc_text`` with the block between the capacity markers replaced by ``rendered``."""
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?\n" + re.escape(END), re.DOTALL)
    if not pattern.search(doc_text):
        raise ValueError(f"the document must contain the markers {BEGIN!r} and {END!r}, got neither pair")
    return pattern.sub(lambda _m: f"{BEGIN}\n{rendered}\n{END}", doc_text, count=1)


def embedded(doc_text: str) -> str:
    """The block between the capacity markers of ``doc_text``."""
    m = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), doc_text, re.DOTALL)
    if not m:
        raise ValueError(f"the document must contain the markers {BEGIN!r} and {END!r}, got neither pair")
    return m.group(1)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="the measurements (default: %(default)s)")
    ap.add_argument("--merge-seconds", type=float, default=None,
                    help="the merge step per notebook in seconds (default: the measured median)")
    ap.add_argument("--students", type=int, default=STUDENTS, help="notebooks per deadline (default %(default)s)")
    ap.add_argument("--headroom", type=float, default=HEADROOM,
                    help="factor on the busy core-seconds for waiting (default %(default)s, >= 1)")
    ap.add_argument("--write", action="store_true", help=f"put the table into {DOC.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    try:
        rendered = table(load(args.results, args.merge_seconds), students=args.students, headroom=args.headroom)
    except ValueError as e:
        print(f"capacity: {e}", file=sys.stderr)
        return 2
    print(rendered)
    if args.write:
        DOC.write_text(embed(DOC.read_text(), rendered))
        print(f"wrote the table into {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
