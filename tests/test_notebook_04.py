"""notebooks/04_approximate_oracle.ipynb runs from top to bottom (nbclient) and its checks hold."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "04_approximate_oracle.ipynb"


@pytest.mark.slow  # the sweep over 17 noise levels: about 70 s of CPU
def test_notebook_04_executes_and_its_checks_hold(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:  # run from a clean slate, not from the committed outputs
        if cell.cell_type == "code":
            cell.outputs = []
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError if a cell (e.g. an assert) fails
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "all checks hold" in text
    assert "refused" in text and "recovered" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the log-log figure was drawn
