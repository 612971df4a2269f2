"""The example notebook (analyses/example.ipynb) runs top to bottom in a real kernel (nbclient),
shows every figure inline, and prints nothing it was not asked to."""
from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")

NOTEBOOK = Path(__file__).resolve().parents[2] / "analyses" / "example.ipynb"


@pytest.mark.slow
def test_example_notebook_executes_with_figures_inline(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    setup = nb.cells[1]
    assert "N_QUESTIONS, N_SAMPLES = 100, 64" in setup.source and "EMBEDDER = None" in setup.source
    # the study at a test's size, with the model-free embedder
    setup.source = (setup.source.replace("N_QUESTIONS, N_SAMPLES = 100, 64", "N_QUESTIONS, N_SAMPLES = 12, 8")
                    .replace("EMBEDDER = None", 'EMBEDDER = "hashing-256"'))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    figure_cells = [c for c in nb.cells if c.cell_type == "code" and "mx.plots." in c.source
                    and c.source.rstrip().endswith(";")]
    assert len(figure_cells) >= 7
    for cell in figure_cells:
        assert any("image/png" in out.get("data", {}) for out in cell.outputs), cell.source
    summaries = [c for c in nb.cells if c.cell_type == "code" and c.source.strip().endswith(".summary()")]
    for cell in summaries:  # a summary renders as HTML in the notebook
        assert any("text/html" in out.get("data", {}) for out in cell.outputs), cell.source
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
            assert not [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"], cell.source
    latex = [o["text"] for c in nb.cells if c.cell_type == "code" and "to_latex" in c.source for o in c.outputs
             if o.output_type == "stream"]
    assert latex and r"\begin{tabular}" in latex[0]
