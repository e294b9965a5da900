"""Widget cells run headless without stalls (autograder.isolation.headless; jupyter/nbclient#312).

With nbclient's Output-widget emulation, a cell that prints or plots inside an ``interact`` widget now and
then waits for its whole cell timeout although the kernel has long answered.  It needs busy cores: 60 such
cells took 13 s on an idle machine either way, but 93 s with stock nbclient and 13 s with
``autograder.isolation.headless`` while two other processes kept both cores busy (timeout 20 s; measured
2026-11-26) -- as they are while the test suite runs.  Without the emulation no cell ever waits: the test
fails only if a cell hits its 30 s limit (one stall alone makes the run longer than the 30 s allowed),
which cells of 0.1-0.3 s do not do.
"""

from __future__ import annotations

import time

import nbformat

from autograder.course.course import CONFIG_FILE
from autograder.isolation import headless
from autograder.execute.safe_execute import SafeExecute

N_CELLS = 30
SETUP = "import ipywidgets as widgets\n%matplotlib inline\nimport matplotlib.pyplot as plt"
WIDGET = ("def show(x=1.0):\n    print('x is', x)\n    plt.plot([0, x]); plt.show()\n"
          "widgets.interact(show, x=widgets.FloatSlider(value={v}, min=0, max=5));")


def test_widget_cells_never_wait_for_the_timeout(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP)]
    nb.cells += [nbformat.v4.new_code_cell(WIDGET.format(v=1 + i / N_CELLS)) for i in range(N_CELLS)]
    client = headless.NotebookClient(nb, timeout=30, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    started = time.monotonic()
    client.execute()
    seconds = time.monotonic() - started
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    assert seconds < 30, f"{N_CELLS} widget cells took {seconds:.0f} s: a cell waited for its timeout"
    # the widget's output lands in the cell itself (no client-side Output widget captures it)
    for i, cell in enumerate(nb.cells[1:]):
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert f"x is {1 + i / N_CELLS}" in text, (i, cell.outputs)
        assert any("image/png" in o.get("data", {}) for o in cell.outputs), i


def test_every_executor_of_the_kit_is_headless():
    assert issubclass(SafeExecute, headless.NoOutputWidget)
    assert "autograder.isolation.headless.Execute" in CONFIG_FILE.read_text()
    client = headless.NotebookClient(nbformat.v4.new_notebook())
    assert client.on_comm_open_jupyter_widget({"content": {"data": {"state": {
        "_model_module": "@jupyter-widgets/output", "_model_name": "OutputModel"}}, "comm_id": "x"}}) is None
