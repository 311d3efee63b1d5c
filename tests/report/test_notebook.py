"""cockpit.notebook: examples/analysis.ipynb runs in a real Jupyter kernel and its scaling tables are the
report's scaling.csv; every code block of docs/notebook.md runs; nothing is written to the stores."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from cockpit.notebook import TEXT_COLUMNS, open_study
from cockpit.report.source import load_input
from cockpit.report.write import write_report

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
STORES = {"recorded": FIXTURES / "recorded-store" / "store.sqlite", "demo": FIXTURES / "demo-store" / "study.toml"}


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def report_csv(source: Path, out: Path) -> pd.DataFrame:
    """`cockpit report`'s scaling.csv, read as the notebook API reads it."""
    return pd.read_csv(write_report(load_input(source), out).csv, dtype=TEXT_COLUMNS)


def test_the_api_gives_the_report(tmp_path: Path):
    before = digest(FIXTURES)
    study = open_study(STORES["recorded"])
    pd.testing.assert_frame_equal(study.scaling(), report_csv(STORES["recorded"], tmp_path))
    two = study.config_ids[1]
    terms = study.attribution(study.labels[two])  # by label as by id
    assert list(terms.label) == ["exposed all-reduce", "other loop time", "optimizer", "data wait", "compute"]
    assert list(terms.seconds) == [0.94, 0.07, -0.11, -0.19, -0.33] and terms.attrs["overhead_s"] == 0.38
    assert study.attribution(study.config_ids[0]).empty  # a baseline
    metrics = study.metrics(two)
    assert sorted(set(metrics["rank"])) == [0, 1] and len(study.metrics(two, rank=0)) < len(metrics)
    assert study.gpu(two).empty and list(study.gpu(two).columns)[:3] == ["t", "host", "gpu"]
    figures = study.figures()
    assert list(figures) == ["time_vs_cpus", "time_bars", "efficiency", "overhead"]
    assert figures["efficiency"].axes[0].get_title()
    with pytest.raises(KeyError, match="no configuration"):
        study.metrics("nope")
    study.close()
    assert digest(FIXTURES) == before


def test_the_example_notebook_runs_and_shows_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    before = digest(FIXTURES)
    notebook = nbformat.read(ROOT / "examples" / "analysis.ipynb", as_version=4)
    tables = {name: tmp_path / f"{name}.pkl" for name in STORES}
    # the test's own last cell: the tables the notebook showed, as it holds them
    notebook.cells.append(nbformat.v4.new_code_cell(
        f"recorded.scaling().to_pickle({str(tables['recorded'])!r}); demo_table.to_pickle({str(tables['demo'])!r})"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT / "examples")}})
    client.execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 6  # curves and the report's figures
    assert any("<table" in o.get("data", {}).get("text/html", "") for o in outputs)  # the scaling table, shown
    for name, source in STORES.items():
        pd.testing.assert_frame_equal(pd.read_pickle(tables[name]), report_csv(source, tmp_path / name))
    assert digest(FIXTURES) == before


def test_every_example_of_the_doc_runs(monkeypatch: pytest.MonkeyPatch):
    import matplotlib

    matplotlib.use("Agg")
    text = (ROOT / "docs" / "notebook.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    monkeypatch.chdir(ROOT)
    before = digest(FIXTURES)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/notebook.md", "exec"), namespace)  # noqa: S102 - the doc's own examples
    assert digest(FIXTURES) == before
