"""Link every "ERRATA n" mention in the lectures to item n of the errata page (issue 22 item 13).

    .venv/bin/python tools/link_errata.py [--check] [ROOT]

* ``docs/errata.md``: each item in full (a paragraph opening ``**n. ``) gets the anchor ``<a id="erratum-n"></a>``
  in front of it, once.
* ``solutions/<lecture>/<lecture>.ipynb``: in Markdown cells, every mention – ``ERRATA 5``, ``ERRATA item 4``,
  ``ERRATA 5 and 6``, ``ERRATA 6, 7, 8``, ```ERRATA.md` items 12 and 13`` – becomes links to
  ``../../docs/errata.md#erratum-n`` (the page sits two folders up from a lecture in the repository and in the
  student copy), the text kept: ``[ERRATA 5](…#erratum-5) and [6](…#erratum-6)``.  Code cells are left alone.

Idempotent: the tool first removes the links it writes and then links again, so a second run changes nothing
and a mention an author added since is linked on the next run.  ``--check`` only reports (exit 1 when something
would change); ``tests/test_student_view.py`` runs it and checks every anchor exists.  Afterwards regenerate the
student versions (``dp-course release``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from notebook_rewrite import of_type, parse_args, rewrite_cells, run_over_lectures  # noqa: E402 - a sibling

URL = "../../docs/errata.md#erratum-{n}"
MENTION = re.compile(r"`?ERRATA(?:\.md`)?\s+(?:items?\s+)?(\d+)((?:(?:,\s*|,?\s+and\s+)\d+)*)")
OUR_LINK = re.compile(r"\[([^\[\]]*)\]\(\.\./\.\./docs/errata\.md#erratum-\d+\)")
ITEM = re.compile(r"^(?:<a id=\"erratum-\d+\"></a>)?\*\*(\d+)\. ", re.MULTILINE)


def _link(match: re.Match[str]) -> str:
    first = match.group(0)[:match.end(1) - match.start(0)]
    out = f"[{first}]({URL.format(n=match.group(1))})"
    rest = match.group(2)
    pos = 0
    for number in re.finditer(r"\d+", rest):
        out += rest[pos:number.start()] + f"[{number.group(0)}]({URL.format(n=number.group(0))})"
        pos = number.end()
    return out + rest[pos:]


def link_mentions(text: str) -> str:
    """``text`` with every ERRATA mention linked (links this tool wrote before are rewritten, not doubled)."""
    plain = OUR_LINK.sub(lambda m: m.group(1), text)
    return MENTION.sub(_link, plain)


def linked_items(text: str) -> set[int]:
    """The item numbers that ``text``'s links point to."""
    return {int(n) for n in re.findall(r"\(\.\./\.\./docs/errata\.md#erratum-(\d+)\)", text)}


def anchor_items(errata: str) -> str:
    """``docs/errata.md`` with the anchor ``erratum-n`` in front of each item in full."""
    return ITEM.sub(lambda m: f'<a id="erratum-{m.group(1)}"></a>**{m.group(1)}. ', errata)


def anchors(errata: str) -> set[int]:
    """The item numbers that have an anchor on the errata page."""
    return {int(n) for n in re.findall(r'<a id="erratum-(\d+)"></a>', errata)}


def update_notebook(path: Path, *, write: bool) -> bool:
    """Link the mentions of one lecture; whether it changed (or, with ``write=False``, would change)."""
    return rewrite_cells(path, link_mentions, of_type("markdown"), write=write) > 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv, "only report; exit 1 if something would change")
    state = "not linked yet" if args.check else "linked"
    errata = args.root / "docs" / "errata.md"
    text = errata.read_text(encoding="utf-8")
    stale_page = anchor_items(text) != text
    if stale_page:
        print(f"{errata.relative_to(args.root)}: {state}")
        if not args.check:
            errata.write_text(anchor_items(text), encoding="utf-8")
    stale = run_over_lectures(args.root, lambda path, write: update_notebook(path, write=write), check=args.check,
                              report=lambda _, n: state)
    return 1 if args.check and (stale_page or stale) else 0


if __name__ == "__main__":
    raise SystemExit(main())
