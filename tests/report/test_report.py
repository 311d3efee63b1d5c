"""The headless report: every number comes from cockpit.forecast.analysis on the same results."""

from __future__ import annotations

import re
import shutil
import statistics
from pathlib import Path

import pandas as pd
import pytest

from cockpit.cli import main as cli
from cockpit.forecast.analysis import analyse
from cockpit.report.source import ReportError, from_run_dirs, load_input
from cockpit.report.write import write_report
from cockpit.store import StudyStore
from runcontract.records import write_result

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


def fmt(value: float, spec: str) -> str:
    return "-" if value != value else format(value, spec)


def pct(value: float) -> str:
    """An efficiency as the report prints it: a whole percent."""
    return "-" if value != value else f"{value * 100:.0f}%"


def test_report_from_store_matches_analysis(store_copy: Path, results: list[dict], tmp_path: Path):
    out = tmp_path / "report"
    files = write_report(load_input(store_copy), out)
    expected = analyse(results)
    assert files.configurations == len(expected) == 6

    # CSV: the analysis rows themselves, full precision, one column per overhead term.
    csv = pd.read_csv(files.csv)
    for col in ("train_time_s", "work_ratio", "t_same_work_s", "t1_s", "speedup", "efficiency", "overhead_s",
                "karp_flatt", "loss_compute_s", "loss_comm_s", "loss_data_wait_s"):
        assert list(csv[col].round(9).fillna(-1)) == [round(e[col], 9) if e[col] == e[col] else -1 for e in expected]

    # Markdown: the same numbers, formatted, with the inputs of each ratio beside it.
    md = files.markdown.read_text()
    rows = markdown_rows(md, "Scaling per configuration")
    assert len(rows) == len(expected)
    for row, exp in zip(rows, expected, strict=True):
        assert row[2] == str(exp["window"]) and row[3] == f"{exp['nodes']}×{exp['gpus_per_node']}"
        assert row[7] == str(exp["workers"])
        assert row[8] == f"{exp['train_time_s']:.2f}" and row[10] == fmt(exp["t_same_work_s"], ".2f")
        assert row[11] == fmt(exp["t1_s"], ".2f")
        assert row[12] == fmt(exp["speedup"], ".3f") and row[13] == pct(exp["efficiency"])
        assert row[14] == fmt(exp["overhead_s"], ".2f") and row[15] == fmt(exp["karp_flatt"], ".3f")
        assert row[17].startswith(exp["verdict"])
        if exp["speedup"] == exp["speedup"]:  # S = T1 / (T/work), checkable from the printed inputs
            assert float(row[12]) == pytest.approx(float(row[11]) / float(row[10]), abs=2e-3 * float(row[12]))
    # Headline: each median beside the per-group values it is the median of, which are the table's own.
    headline = markdown_rows(md, "Headline")
    assert [r[0] for r in headline] == sorted({r[7] for r in rows}, key=int)
    for n, groups, s, e, o, each_s, each_o in headline:
        table_s = sorted(r[12] for r in rows if r[7] == n and r[12] != "-")
        table_o = sorted(r[14] for r in rows if r[7] == n and r[14] != "-")
        assert sorted(each_s.split(", ")) == table_s and sorted(each_o.split(", ")) == table_o
        assert groups.startswith(f"{len(table_s)} of ")
        assert float(s) == pytest.approx(statistics.median(map(float, table_s)), abs=1e-3)
        assert e.endswith("%") and int(e[:-1]) == pytest.approx(float(s) / int(n) * 100, abs=0.51)
        assert float(o) == pytest.approx(statistics.median(map(float, table_o)), abs=1e-2)
    attribution = markdown_rows(md, "Where the efficiency went")
    explained = [e for e in expected if not e["baseline"] and e["overhead_s"] == e["overhead_s"]]
    assert len(attribution) == len(explained) > 0
    for row, exp in zip(attribution, explained, strict=True):
        terms = [float(c) for c in row[11:17]]
        assert sum(terms) == pytest.approx(float(row[10]), abs=0.03)  # the printed terms add up to O
        assert row[-1] == exp["explanation"]
    breakdown = markdown_rows(md, "Time breakdown and fixed costs")
    assert len(breakdown) == len(expected)
    for row, exp in zip(breakdown, expected, strict=True):
        assert row[9] == f"{exp['compute_s']:.2f}"

    # Jobs without a result (the recorded store has one running, one pending) are not failures, but counted.
    assert "Jobs without a result" not in md
    assert "results: 6 completed; 2 configurations without a result yet" in md

    # Figures: real PNGs, linked from the Markdown and embedded in the HTML (self-contained).
    four = {"time_vs_cpus", "time_bars", "efficiency", "overhead"}
    assert four <= set(files.figures)
    waterfalls = set(files.figures) - four
    assert waterfalls == {f"waterfall_{e['group_id']}" for e in explained}
    html = files.html.read_text()
    for fig in files.figures.values():
        assert fig.path.read_bytes().startswith(PNG)
        assert f"({fig.path.name})" in md
    assert html.count("data:image/png;base64,") == len(files.figures)
    assert not re.search(r'src="(?!data:)', html)
    assert f"{expected[1]['speedup']:.3f}" in html and f">{pct(expected[1]['efficiency'])}</td>" in html


def test_report_from_local_run_directories(results: list[dict], tmp_path: Path):
    runs = tmp_path / "runs"
    for res in results:
        write_result(runs / res["config_id"], {k: v for k, v in res.items() if k not in ("schema_version", "kind")})
    inp = from_run_dirs(runs, "recorded", "local")
    files = write_report(inp, tmp_path / "out")
    rows = markdown_rows(files.markdown.read_text(), "Scaling per configuration")
    assert [r[12] for r in rows] == [fmt(e["speedup"], ".3f") for e in analyse(results)]


def test_scored_foundation_runs_get_model_quality_and_no_per_class_section(results: list[dict], tmp_path: Path):
    runs = tmp_path / "runs"
    for k, res in enumerate(results):
        res = {k: v for k, v in res.items() if k not in ("schema_version", "kind")}
        res["eval"] = {"split": "test", "masked_loss": 4.0 + k / 10, "masked_accuracy": 0.05, "masked_tokens": 1000}
        write_result(runs / res["config_id"], res)
    md = write_report(from_run_dirs(runs, "recorded", "local"), tmp_path / "out").markdown.read_text()
    quality = markdown_rows(md, "Model quality")
    assert len(quality) == len(results) and {r[8] for r in quality} == {"masked loss"}
    assert "## Per class" not in md  # a foundation run has no classes: no section that would stay empty


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
    assert files.figures == {} and "_No figure yet: no run has finished beside its group's baseline._" in \
        files.markdown.read_text()


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


def test_a_report_with_no_result_names_the_workers_as_the_study_file_does(store_copy: Path, tmp_path: Path):
    """The recorded study runs on CPU workers: before any result its report says "workers", as it does after."""
    shutil.copy(FIXTURE / "study.toml", store_copy.parent / "study.toml")  # the study file the store names
    with_results = load_input(store_copy)
    nothing = load_input(store_copy)
    assert with_results.device == "cpu"
    nothing.results = []
    texts = [write_report(inp, tmp_path / name).markdown.read_text()
             for name, inp in (("results", with_results), ("nothing", nothing))]
    for text in texts:
        assert "per number of workers N" in text and "N is the number of workers" in text
        assert "GPUs N" not in text and "number of GPUs" not in text
