"""`cockpit report STUDY --compare OTHER`: the "Compared with OTHER" section, in Markdown and HTML, carries
what `cockpit compare STUDY OTHER` prints (one function, cockpit.forecast.compare), with each figure's inputs. On the
real stores of tests/fixtures: the demo's (batch 16, 1 core per worker) and the recorded one (batch 8, 1 and
2 cores per worker); and the demo's study file against its own store, where B is predicted from A."""

from __future__ import annotations

import html
import shutil
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.forecast.analysis import analyse
from cockpit.forecast.compare_table import figure_rows, headline, label, prediction_line, unmatched_lines
from cockpit.report.comparison import compare_paths
from cockpit.report.source import load_input

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "fixtures" / "demo-store"


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the demo's study file, its store, the recorded store), copies."""
    (tmp_path / "local-demo").mkdir()
    shutil.copyfile(DEMO / "study.toml", tmp_path / "study.toml")
    shutil.copyfile(DEMO / "local-demo" / "cockpit.sqlite", tmp_path / "local-demo" / "cockpit.sqlite")
    shutil.copyfile(ROOT / "tests" / "fixtures" / "recorded-store" / "store.sqlite", tmp_path / "recorded.sqlite")
    return tmp_path / "study.toml", tmp_path / "local-demo" / "cockpit.sqlite", tmp_path / "recorded.sqlite"


def section(markdown: str, title: str) -> str:
    start = markdown.index(f"## {title}\n")
    end = markdown.index("\n## ", start + 1)
    return markdown[start:end]


def first_table(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in `text`."""
    lines = text[text.index("| figure |"):].split("\n\n", 1)[0].splitlines()
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def report(source: Path, other: Path, out: Path, capsys, monkeypatch) -> tuple[str, str, str]:
    """(report.md, report.html, what `cockpit compare source other` printed)."""
    monkeypatch.setenv("COLUMNS", "250")
    assert cli(["report", str(source), "--out", str(out), "--compare", str(other)]) == 0
    capsys.readouterr()
    assert cli(["compare", str(source), str(other)]) == 0
    return (out / "report.md").read_text(), (out / "report.html").read_text(), capsys.readouterr().out


def test_the_section_lists_matched_and_unmatched_configurations_as_cockpit_compare(demo, tmp_path, capsys,
                                                                                  monkeypatch):
    _, store, recorded = demo
    md, page, printed = report(store, recorded, tmp_path / "out", capsys, monkeypatch)
    c = compare_paths(store, recorded)
    text = section(md, "Compared with recorded")
    assert headline(c) + "." in text and headline(c) in printed
    assert "matched without batch_size (16 in A, 8 in B)." in text
    for pair in c.pairs:
        title = f"{label(pair.a)} vs {label(pair.b)}"
        assert f"### {title}" in text and html.escape(title) in page
        part = text[text.index(f"### {title}"):]
        assert prediction_line(pair) + "." in part and prediction_line(pair) in printed
        assert first_table(part) == [[c.strip() for c in row] for row in figure_rows(pair)]
    for line in unmatched_lines(c):  # listed, not dropped: B's two 2-core configurations
        assert f"- {line}" in text and line in printed and html.escape(line) in page
    assert len(unmatched_lines(c)) == 2
    assert "<h2>Compared with recorded</h2>" in page


def test_b_predicted_from_a_with_the_inputs_to_recompute_it(demo, tmp_path, capsys, monkeypatch):
    study, store, _ = demo
    md, _, printed = report(study, store, tmp_path / "out", capsys, monkeypatch)
    text = section(md, "Compared with local-demo")
    rows = {(r["window"], r["workers"]): r for r in analyse(load_input(store).results)}
    c = compare_paths(study, store)
    assert len(c.pairs) == 4 and not c.only_a and not c.only_b
    for pair in c.pairs:
        assert pair.differs == []  # the same runs on both sides
        line = prediction_line(pair)
        assert line.startswith("B predicted from A: T ") and "error +0.0%" in line and line in printed
        r = rows[(pair.a["window"], pair.a["workers"])]
        part = text[text.index(f"### {label(pair.a)} vs"):]
        figures = {row[0]: row[1:3] for row in first_table(part)}
        assert figures["T s"] == [f"{r['train_time_s']:.2f}"] * 2
        assert figures["work (samples / the baseline's)"] == [f"{r['work_ratio']:g}"] * 2
        assert figures["T1 s (the group's baseline)"] == [f"{r['t1_s']:.2f}"] * 2
        assert figures["N"] == [str(r["workers"])] * 2
        # S = T1 / (T / work), recomputed from the printed inputs' full-precision sources
        assert figures["S = T1/(T/work)"][0] == f"{r['t1_s'] / (r['train_time_s'] / r['work_ratio']):.3f}"


def test_an_unreadable_other_study_is_one_line(demo, tmp_path, capsys):
    _, store, _ = demo
    assert cli(["report", str(store), "--out", str(tmp_path / "out"), "--compare", str(tmp_path / "nope.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "--compare" in err and "nope.sqlite: no such file" in err and len(err.strip().splitlines()) == 1


def test_the_documented_report_compare_example(tmp_path, monkeypatch):
    import re

    text = " ".join((ROOT / "docs" / "tui.md").read_text(encoding="utf-8").split())
    (example,) = [m for m in re.findall(r"`(cockpit [^`]+)`", text)
                  if m.startswith("cockpit report tests/fixtures/") and " --compare " in m]
    args = example.split()[1:]
    args[args.index("--out") + 1] = str(tmp_path / "report")  # the report goes to a scratch directory here
    monkeypatch.chdir(ROOT)  # the example names the fixtures from the repository's root; reading never writes
    assert cli(args) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert "A = local-demo, B = recorded: 4 matched configurations, 0 only in A, 2 only in B." in section(
        md, "Compared with recorded")
