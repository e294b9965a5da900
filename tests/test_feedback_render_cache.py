"""The feedback exporter's remembered fragments (``MemoisedHTMLExporter``) never change a page.

``autograder.feedback.feedback_render.MemoisedHTMLExporter`` keeps the Pygments, Markdown and clean-HTML results of
the cells every page repeats.  These tests render notebooks that share sources but differ in what each key must
tell apart (the notebook's lexer, a cell's ``magics_language``, a Markdown cell's attachments, the notebook's
folder) with it and with nbconvert's own ``HTMLExporter``, in an order that reuses the fragments, and require the
same bytes.  No kernel runs.  (The pages of a graded class against ``generate_feedback``'s are compared in
``tests/test_feedback_refresh.py``.)
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbconvert.exporters import HTMLExporter

from autograder.feedback import feedback_render
from autograder.feedback.feedback_render import MemoisedHTMLExporter

CODE = "echo = [i ** 2 for i in range(3)]  # squares\nprint('hello', echo)"  # no %%magic (nbconvert sets its language)
TEXT = "## Exercise 1\n\nCompute $\\varepsilon$ for *each* query: <b>bold</b> <script>alert(1)</script>"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def _notebook(lexer: str, attachment: bool = False) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["language_info"] = {"name": lexer, "pygments_lexer": lexer}
    shown = TEXT + ("\n\n![pic](attachment:pic.png)" if attachment else "")
    nb.cells = [nbformat.v4.new_markdown_cell(shown), nbformat.v4.new_code_cell(CODE),
                nbformat.v4.new_code_cell(CODE, metadata={"magics_language": "bash"}),
                nbformat.v4.new_markdown_cell(TEXT), nbformat.v4.new_code_cell(CODE),
                nbformat.v4.new_markdown_cell(shown)]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"   # fixed: the page shows the ids
        if attachment and cell.cell_type == "markdown" and cell.source == shown:
            cell["attachments"] = {"pic.png": {"image/png": PNG}}
    return nb


def _html(exporter: HTMLExporter, nb: nbformat.NotebookNode, path: str) -> str:
    body: str = exporter.from_notebook_node(nb, resources={"metadata": {"path": path}})[0]
    return body


def test_remembered_fragments_give_nbconverts_bytes() -> None:
    memo = MemoisedHTMLExporter()
    order: list[tuple[str, bool, str]] = [("ipython3", False, "a"), ("r", False, "a"), ("ipython3", True, "a"),
                                          ("ipython3", False, "b"), ("r", False, "a"), ("ipython3", False, "a")]
    sizes = []
    for lexer, attachment, path in order:
        nb = _notebook(lexer, attachment)
        assert _html(memo, nb, path) == _html(HTMLExporter(), nb, path), (lexer, attachment, path)
        sizes.append((len(memo.highlighted), len(memo.markdown), len(memo.cleaned)))
    # the repeated notebooks were served from what the first ones left (nothing new to render) ...
    assert sizes[4] == sizes[3] and sizes[5] == sizes[4], sizes
    # ... and the keys told apart the lexers (2 code fragments per lexer: with and without the magic)
    assert sizes[0][0] == 2 and sizes[1][0] == 4, sizes
    # another student's folder reuses the Markdown (the folder is read only to embed images); a cell with
    # attachments is never remembered
    assert sizes[3][1] == sizes[2][1] == sizes[1][1] == 1, sizes


def test_with_embedded_images_the_folder_is_in_the_key(tmp_path: Any) -> None:
    """``embed_images`` reads the picture from the notebook's folder: each folder's page is its own."""
    for folder, colour in (("a", b"GIF89a-red"), ("b", b"GIF89a-blue")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pic.gif").write_bytes(colour)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("![pic](pic.gif)")])
    memo = MemoisedHTMLExporter(embed_images=True)
    pages = [_html(memo, nb, str(tmp_path / folder)) for folder in ("a", "b")]
    assert pages == [_html(HTMLExporter(embed_images=True), nb, str(tmp_path / folder)) for folder in ("a", "b")]
    assert pages[0] != pages[1] and len(memo.markdown) == 2


def test_the_pygments_lexer_of_each_notebook_is_used() -> None:
    """The same code is highlighted with each notebook's own lexer (the key holds it)."""
    memo = MemoisedHTMLExporter()
    py = _html(memo, _notebook("ipython3"), "a")
    r = _html(memo, _notebook("r"), "a")
    assert "hl-ipython3" in py and "hl-r" in r and "hl-r" not in py


def test_the_caches_are_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(feedback_render, "CACHE_LIMIT", 2)
    memo = MemoisedHTMLExporter()
    for i in range(5):
        nb = _notebook("ipython3")
        nb.cells[1].source = f"y = {i}"
        assert _html(memo, nb, "a") == _html(HTMLExporter(), nb, "a")
        assert len(memo.highlighted) <= 2 and len(memo.markdown) <= 2 and len(memo.cleaned) <= 2
