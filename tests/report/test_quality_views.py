"""A real fine-tune study (MIT-BIH records, 1 and 2 gloo workers, scored on a DS2 record): the quality the
headless line, the report, the scaling table and the run detail show is the trainer's own figure, with
its inputs and the baseline's beside it."""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.commands.progress import explained_line
from cockpit.forecast.analysis import analyse
from cockpit.store import StudyStore, default_store_path
from cockpit.study.spec import load_study
from cockpit.tui import format as fmt
from cockpit.tui import model, quality_panel
from cockpit.tui.app import CockpitApp
from cockpit.tui.compare import figure_rows
from cockpit.tui.controller import store_controller
from cockpit.tui.detail import RunDetailScreen
from cockpit.workloads.hlm.quality import MACRO_F1_NSVF, quality_words
from runcontract.records import read_result
from tests.report.test_report import markdown_rows
from tests.studies import mitdb_data, write_study

# 106 and 119 (DS1, both with V beats) train; 233 (DS2: N, S, V and F beats) is the test split
RECORDS = ("106", "119", "233")


@pytest.fixture(scope="module")
def scored_study(tmp_path_factory: pytest.TempPathFactory, physionet: Path) -> tuple[Path, Path, str]:
    tmp = tmp_path_factory.mktemp("quality")
    spec = write_study(tmp / "study.toml", "quality", tmp / "work", data=mitdb_data(tmp / "tokens", RECORDS, physionet),
                       cluster={"gpus_per_node": 2, "cores_per_node": 2, "max_concurrent_jobs": 1},
                       train={"mode": "finetune", "task": "beat", "steps": 12, "batch_size": 16, "window": 64,
                              "eval": True})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # no preflight: its local probe job is another torch start, and the preflight has tests of its own
        rc = cli(["run", "--headless", "--skip-preflight", str(spec), "--out", str(tmp / "report"),
                  "--timeout", "300"])
    assert rc == 0, out.getvalue()
    return spec, tmp / "report", out.getvalue()


def _rows(spec: Path) -> dict[int, dict]:
    study = load_study(spec)
    return {r["workers"]: r for r in analyse(read_result(study.run_dir(c)) for c in study.runnable())}


def test_headless_lines_and_report_carry_the_trainers_macro_f1(scored_study) -> None:
    spec, report, out = scored_study
    study = load_study(spec)
    results = {r["world_size"]: r for r in (read_result(study.run_dir(c)) for c in study.runnable())}
    rows = _rows(spec)
    for n, row in rows.items():
        ev = results[n]["eval"]
        assert row["quality_metric"] == MACRO_F1_NSVF
        assert row["quality"] == pytest.approx(ev["macro_f1_nsvf"], abs=1e-12)  # the trainer's own figure
        assert row["quality_inputs"] == "mean F1 of " + ", ".join(f"{c} {ev['f1'][c]:.3f}" for c in "NSVF")
        line = next(x for x in out.splitlines() if x.startswith(f"mitdb finetune w64 1x{n} "))
        # the quality words close the figures; an N-worker line's advice follows them
        assert line == explained_line(line.split(":")[0], row) and f"; {quality_words(row)}" in line
    two, one = rows[2], rows[1]
    assert two["quality_1"] == one["quality"] and two["quality_change"] == pytest.approx(two["quality"] - one["quality"])
    assert f"1x1: {one['quality']:.3f}, {two['quality_change']:+.3f} " in out

    table = markdown_rows((report / "report.md").read_text(), "Model quality")
    assert [(r[7], r[8], r[9], r[10]) for r in table] == [
        (str(n), MACRO_F1_NSVF, f"{rows[n]['quality']:.3f}", rows[n]["quality_inputs"]) for n in (1, 2)]
    assert table[1][12] == f"{two['quality_change']:+.3f}" and table[0][12] == "+0.000"  # the baseline itself
    per_class = markdown_rows((report / "report.md").read_text(), "Per class")
    supports = {(r[3], r[7]): int(r[8]) for r in per_class}
    for n in (1, 2):
        for cls, support in results[n]["eval"]["support"].items():
            assert supports[(f"1×{n}", cls)] == support


async def test_scaling_table_and_run_detail_show_the_same_quality(scored_study, tmp_path) -> None:
    spec, _, _ = scored_study
    study = load_study(spec)
    rows = _rows(spec)
    store = StudyStore(default_store_path(study.name, study.study_dir()))
    try:
        snapshot = store.snapshot(study.name)
        layout = model.scaling_layout(snapshot)
        assert "quality" in layout.keys
        assert next(c for c in layout.columns if c.key == "quality").label == f"{MACRO_F1_NSVF} Δ1×1"
        cells = {r.key: dict(zip(layout.keys, r.cells, strict=True)) for r in model.scaling_rows(snapshot, layout=layout)}
        for row in rows.values():
            assert cells[row["config_id"]]["quality"] == fmt.quality(row["quality"], row["quality_change"])
        lower = min(r["quality"] for r in rows.values())  # the filter and sort know the column too
        lowest = {r["config_id"] for r in rows.values() if r["quality"] == lower}
        assert {r.key for r in model.scaling_rows(snapshot, query=f"quality<={lower}", layout=layout)} == lowest
        assert model.scaling_rows(snapshot, sort_key="quality", layout=layout)[0].key in lowest
        app = CockpitApp(store_controller(store, study.name), poll_interval=None, export_dir=tmp_path)
        async with app.run_test(size=(150, 60)) as pilot:
            await pilot.press("e")  # the table's export, at full precision
            await app.workers.wait_for_complete()
            await pilot.pause()
            with app.exports[0].open(newline="") as f:
                exported = {d["config_id"]: d for d in csv.DictReader(f)}
            for row in rows.values():
                got = exported[row["config_id"]]
                assert (got["quality_metric"], float(got["quality"]), float(got["quality_change"])) == (
                    MACRO_F1_NSVF, row["quality"], row["quality_change"])
            app.open_detail(rows[2]["config_id"])
            await pilot.pause()
            assert isinstance(app.screen, RunDetailScreen)
            shown = str(app.screen.query_one("#detail-quality").render())
        expected = quality_panel.panel(snapshot.config(rows[2]["config_id"]).analysis).plain
        assert shown.strip() == expected.strip()
        two = rows[2]
        assert expected.startswith(f"Model quality: {MACRO_F1_NSVF} {two['quality']:.3f} = {two['quality_inputs']}")
        assert f"1×1 baseline: {two['quality_1']:.3f}, change {two['quality_change']:+.3f} " in expected
        assert "records with the most errors" in expected and "     233 " in expected
        compared = dict(figure_rows(two))  # the compare screen's column of the same run
        assert compared[MACRO_F1_NSVF] == f"{two['quality']:.3f}"
        assert compared["  change vs 1×1"] == f"{two['quality_change']:+.3f}"
    finally:
        store.close()
