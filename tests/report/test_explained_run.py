"""A real local study (1 and 2 gloo workers): every number the headless run prints comes from
cockpit.forecast.analysis, the overhead terms add up to the overhead, and the 2-worker run's verdict names its
largest loss in seconds."""

from __future__ import annotations

import re
from pathlib import Path

from cockpit.cli import main as cli
from cockpit.commands.progress import explained_line
from cockpit.forecast.analysis import analyse
from cockpit.study.spec import load_study
from runcontract.records import read_result

STUDY = """
[study]
name = "explained"
[cluster]
kind = "local"
gpus_per_node = 2
cores_per_node = 2
max_concurrent_jobs = 1
workdir = "{workdir}"
[data.datasets.synthetic]
synthetic = true
records = 2
seconds = 60
[model]
layers = 1
d_model = 32
heads = 2
[train]
steps = 30
batch_size = 8
device = "cpu"
eval = false
[sweep]
window = [64]
gpus_per_node = [1, 2]
cpus_per_task = [1]
"""

TERMS = ("data_wait", "compute", "comm", "optimizer", "other", "unaccounted")


def test_headless_lines_explain_each_run_in_seconds(tmp_path: Path, capsys):
    spec = tmp_path / "study.toml"
    spec.write_text(STUDY.format(workdir=tmp_path / "work"))
    # no preflight: its local probe job is another torch start, and the preflight has tests of its own
    rc = cli(["run", "--headless", "--skip-preflight", str(spec), "--out", str(tmp_path / "report"),
              "--timeout", "240"])
    out = capsys.readouterr().out
    assert rc == 0, out
    study = load_study(spec)
    results = [read_result(study.run_dir(c)) for c in study.runnable()]
    assert all(len(r["breakdown_by_rank"]) == r["world_size"] for r in results)
    rows = {r["workers"]: r for r in analyse(results)}
    two = rows[2]
    assert abs(sum(two[f"loss_{t}_s"] for t in TERMS) - two["overhead_s"]) < 1e-9
    assert two["verdict"].startswith(("lost ", "no loss")) and re.search(r"\d s\b", two["verdict"])  # in seconds
    if two["verdict"].startswith("lost "):  # what the short form shows adds up to O, to its printed precision
        head, terms = two["verdict"].split(": ", 1)
        assert head.endswith(f"= {two['overhead_s']:.2f} s")
        shown = [float(t.split(" s ")[0]) for t in terms.split(", ")]
        assert abs(sum(shown) - two["overhead_s"]) <= 0.005 * (len(shown) + 1)
    for n, row in rows.items():
        line = next(line for line in out.splitlines() if line.startswith(f"synthetic foundation w64 1x{n} "))
        assert line == explained_line(line.split(":")[0], row)
    assert f"S = {two['t1_s']:.2f}/{two['t_same_work_s']:.2f} = {two['speedup']:.2f}x on N = 2" in out

    # the TUI's table over the study's store shows the numbers the report printed
    from cockpit.store import StudyStore, default_store_path
    from cockpit.tui import model
    from tests.report.test_report import markdown_rows

    store = StudyStore(default_store_path(study.name, study.study_dir()))
    try:
        tui = {r.key: r.cells for r in model.scaling_rows(store.snapshot(study.name))}
    finally:
        store.close()
    report = markdown_rows((tmp_path / "report" / "report.md").read_text(), "Scaling per configuration")
    for md, row in zip(report, sorted(rows.values(), key=lambda r: r["workers"]), strict=True):
        cells = tui[row["config_id"]]
        assert md[12] == f"{row['speedup']:.3f}" and cells[11] == f"{row['speedup']:.2f}x"
        assert md[14] == f"{row['overhead_s']:.2f}" and cells[13] == f"{row['overhead_s']:.1f}"
        assert md[17] == cells[15] == row["verdict"]
