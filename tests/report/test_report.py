"""The headless report: every number comes from cockpit.analysis on the same results."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from cockpit.analysis import results_frame, scaling_table
from cockpit.cli import main as cli
from cockpit.report.source import ReportError, from_run_dirs, load_input
from cockpit.report.write import write_report
from cockpit.store import StudyStore
from trainer.rundir import write_result

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded-store"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def store_copy(tmp_path: Path) -> Path:
    shutil.copy(FIXTURE / "store.sqlite", tmp_path / "store.sqlite")
    return tmp_path / "store.sqlite"


@pytest.fixture
def results(store_copy: Path) -> list[dict]:
    store = StudyStore(store_copy)
    try:
        return list(store.results(store.study_key("recorded")).values())
    finally:
        store.close()


def markdown_rows(text: str, section: str) -> list[list[str]]:
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in body.splitlines() if ln.startswith("| ")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines[1:]]


def test_report_from_store_matches_analysis(store_copy: Path, results: list[dict], tmp_path: Path):
    out = tmp_path / "report"
    files = write_report(load_input(store_copy), out)
    expected = scaling_table(results_frame(results))
    assert files.configurations == len(expected) == 6

    # CSV: the analysis table itself, full precision.
    csv = pd.read_csv(files.csv)
    for col in ("train_time_s", "speedup", "efficiency", "overhead_s", "karp_flatt"):
        assert list(csv[col].round(9).fillna(-1)) == list(expected[col].astype(float).round(9).fillna(-1))

    # Markdown: the same numbers, formatted, one row per configuration in the analysis order.
    md = files.markdown.read_text()
    rows = markdown_rows(md, "Scaling per configuration")
    assert len(rows) == len(expected)
    for row, (_, exp) in zip(rows, expected.iterrows(), strict=True):
        assert row[2] == str(exp["window"]) and row[3] == f"{exp['nodes']}×{exp['gpus_per_node']}"
        assert row[7] == f"{exp['train_time_s']:.2f}"
        assert row[8] == f"{exp['speedup']:.3f}"
        assert row[9] == f"{exp['efficiency']:.3f}"
        assert row[10] == f"{exp['overhead_s']:.2f}"
        kf = exp["karp_flatt"]
        assert row[11] == ("-" if math.isnan(kf) else f"{kf:.3f}")
        assert row[13].startswith(exp["verdict"])
    breakdown = markdown_rows(md, "Time breakdown")
    assert len(breakdown) == len(expected)
    for row, (_, exp) in zip(breakdown, expected.iterrows(), strict=True):
        assert row[6] == f"{100 * exp['compute_share']:.1f}%"

    # Jobs without a result (the recorded store has one running, one pending) are not failures.
    assert "Jobs without a result" not in md

    # Figures: real PNGs, linked from the Markdown and embedded in the HTML (self-contained).
    assert set(files.figures) == {"time_vs_cpus", "time_bars", "efficiency", "overhead"}
    html = files.html.read_text()
    for path in files.figures.values():
        assert path.read_bytes().startswith(PNG)
        assert f"({path.name})" in md
    assert html.count("data:image/png;base64,") == 4
    assert not re.search(r'src="(?!data:)', html)
    assert f"{expected['speedup'].iloc[1]:.3f}" in html


def test_report_from_local_run_directories(results: list[dict], tmp_path: Path):
    runs = tmp_path / "runs"
    for res in results:
        write_result(runs / res["config_id"], {k: v for k, v in res.items() if k not in ("schema_version", "kind")})
    inp = from_run_dirs(runs, "recorded", "local")
    files = write_report(inp, tmp_path / "out")
    expected = scaling_table(results_frame(results))
    rows = markdown_rows(files.markdown.read_text(), "Scaling per configuration")
    assert [r[8] for r in rows] == [f"{s:.3f}" for s in expected["speedup"]]


def test_report_command(store_copy: Path, tmp_path: Path, capsys):
    assert cli(["report", str(store_copy), "--out", str(tmp_path / "r")]) == 0
    assert "recorded: 6 results, 6 configurations" in capsys.readouterr().out
    assert (tmp_path / "r" / "report.html").exists()


def test_empty_store_gives_empty_report(tmp_path: Path):
    store = StudyStore(tmp_path / "empty.sqlite")
    store.ensure_study("nothing-yet", "abcd1234", cluster="local")
    store.close()
    files = write_report(load_input(tmp_path / "empty.sqlite"), tmp_path / "out")
    assert files.configurations == 0
    assert "_none yet_" in files.markdown.read_text()
    assert all(p.read_bytes().startswith(PNG) for p in files.figures.values())


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.toml", None, "no such file"),
        ("results.json", "{}", "expected a study file (.toml) or a cockpit store (.sqlite), got .json"),
        ("bad.toml", "[study\n", "not valid TOML"),
        ("broken.sqlite", "this is not sqlite", "not a usable cockpit store"),
    ],
)
def test_bad_inputs_are_named(tmp_path: Path, name: str, content: str | None, message: str):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(ReportError, match=re.escape(message)) as err:
        load_input(path)
    assert name in str(err.value)


def test_store_with_other_study_is_refused(store_copy: Path, tmp_path: Path, capsys):
    with pytest.raises(ReportError, match="no study 'other'; it holds recorded"):
        load_input(store_copy, "other")
    assert cli(["report", str(store_copy), "--study", "other", "--out", str(tmp_path)]) == 2
    assert "no study 'other'" in capsys.readouterr().err
