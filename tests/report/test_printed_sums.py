"""What is printed adds up: the overhead terms shown in the short verdict, the full explanation, the run
detail's waterfall, the compare view, the report's table and waterfall figures and the headless lines sum
to the O shown beside them, exactly in hundredths (and a baseline's parts to its T1). One rounding does it,
cockpit.figures.explain.shown_split (largest remainder on signed terms).

Read from the printed text of every row of the recorded store and of a fresh `cockpit demo --headless`."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.commands.progress import explained_line
from cockpit.figures import explain
from cockpit.report import figures, tables
from cockpit.store import StudyStore
from cockpit.tui import compare, explain_panel
from tests.studies import REPO

FIXTURE = REPO / "tests" / "fixtures" / "recorded-store"
NUM = r"[+-]?\d+\.\d\d"
TERM_LABEL = "|".join(re.escape(label) for label in explain.TERM_LABELS.values())


def cents(text: str) -> int:
    return round(float(text) * 100)


# --- the rounding itself -------------------------------------------------------------------------------------

def test_the_issues_examples_add_up():
    # the recorded w128 1x2 c2 run: -0.02 s rest made 0.75 of a 0.76 s overhead
    terms = [("comm", 0.843924263999952), ("other", 0.02991159250018427), ("optimizer", -0.011306245499781653),
             ("compute", -0.0343265244991926), ("data_wait", -0.06753913300121894)]
    o, shown = explain.shown_split(0.7606639534999431, terms)
    assert o == 0.76 and sum(cents(f"{v:.2f}") for _, v in shown) == 76
    short = explain.short_terms(shown)
    assert [f"{v:+.2f}" for _, v in short] == ["+0.84", "-0.07", "-0.01"]


def test_signed_terms_are_rounded_down_then_topped_up_by_largest_remainder():
    # 0.846 + 0.915 + 0.1 = 1.861 -> 1.86 shown: each rounded alone gives 0.85 + 0.92 + 0.10 = 1.87; rounded
    # down they give 1.85, and the hundredth missing goes to the one that lost most (0.846: 0.6 of a hundredth)
    assert explain.split_hundredths(1.861, [0.846, 0.915, 0.1]) == (186, [85, 91, 10])
    # a saving is floored towards minus infinity like a loss: -0.074 starts at -0.08 and gets the hundredth back
    assert explain.split_hundredths(0.766, [0.84, -0.074]) == (77, [84, -7])
    # terms that do not reach the total (sub-millisecond ones left out): the missing hundredth still goes somewhere
    assert sum(explain.split_hundredths(0.5049, [0.25, 0.25])[1]) == 50
    assert explain.split_hundredths(0.0, []) == (0, [])


def test_random_splits_add_up_and_stay_within_a_hundredth():
    rng = random.Random(7)
    for _ in range(2000):
        values = [rng.uniform(-2, 2) for _ in range(rng.randint(1, 6))]
        total = sum(values)
        shown_total, shown = explain.split_hundredths(total, values)
        assert shown_total == cents(f"{total:.2f}") and sum(shown) == shown_total
        assert all(abs(s - v * 100) < 1 + 1e-9 for s, v in zip(shown, values, strict=True))


# --- what is printed -----------------------------------------------------------------------------------------

def short_sum(verdict: str) -> tuple[int, int] | None:
    """(shown O, sum of the shown terms) of a short verdict `lost 42% = 0.76 s: +0.84 s all-reduce, ...`."""
    m = re.fullmatch(rf"lost \d+% = ({NUM}) s: (.*)", verdict)
    if not m:
        return None
    terms = re.findall(rf"(?:^|, )({NUM}) s [^,]+", m.group(2))
    assert len(terms) == m.group(2).count(", ") + 1, verdict
    return cents(m.group(1)), sum(cents(t) for t in terms)


def full_sum(explanation: str) -> tuple[int, int] | None:
    m = re.match(rf"lost \d+% \(({NUM}) s over T1/N = {NUM} s\): (.*?)\. Largest:", explanation)
    if m:
        return cents(m.group(1)), sum(cents(t) for t in re.findall(rf"(?:^|, )({NUM}) s ", m.group(2)))
    m = re.fullmatch(rf"baseline: T1 = ({NUM}) s \((.*)\)", explanation)
    if m:
        return cents(m.group(1)), sum(cents(t) for t in re.findall(rf"({NUM}) s", m.group(2)))
    return None


def waterfall_sum(text: str) -> tuple[int, int]:
    terms = re.findall(rf"^  (?:{TERM_LABEL})\s+({NUM}) s  ", text, re.M)
    (o,) = re.findall(rf"^  = T/work\s+{NUM} s  overhead ({NUM}) s", text, re.M)
    return cents(o), sum(cents(t) for t in terms)


def figure_sums(runs: list[dict]) -> list[tuple[int, int]]:
    """Per run of a report waterfall figure: (O in its last label, sum of its term labels)."""
    out, terms = [], []
    for label, *_ in figures._waterfall_rows(runs):
        if label.startswith("N="):
            terms = []
        elif m := re.fullmatch(rf"= T/work \(O ({NUM}) s\)", label):
            out.append((cents(m.group(1)), sum(terms)))
        else:
            terms.append(cents(re.fullmatch(rf"(?:{TERM_LABEL}) ({NUM}) s", label).group(1)))
    return out


def table_sums(rows: list[dict]) -> list[tuple[int, int]]:
    headers, body = tables.attribution_body(rows)
    o_col = headers.index("O (s)")
    term_cols = [headers.index(f"{explain.TERM_LABELS[t]} (s)") for t in tables.attribution_terms(rows)]
    return [(cents(r[o_col]), sum(cents(r[c]) for c in term_cols if r[c] != "-")) for r in body]


def compare_sum(a: dict) -> tuple[int, int] | None:
    rows = dict(compare.figure_rows(a))
    terms = [v for label, v in rows.items() if label.startswith("Δ ")]
    return (cents(rows["overhead s"]), sum(cents(v) for v in terms)) if terms and rows["overhead s"] != "-" else None


def check_rows(analysis: list[dict], headless: dict[str, str] | None = None) -> int:
    """Every printed split of every row adds up; returns how many splits were checked."""
    checked = 0
    explained = [a for a in analysis if a.get("status") == "completed" and not a.get("baseline")
                 and a.get("overhead_s") == a.get("overhead_s")]
    for a in analysis:
        if a.get("status") != "completed":
            continue
        label = f"{a['config_id']} {a.get('verdict')!r}"
        for got in (short_sum(a["verdict"]), full_sum(a["explanation"]), compare_sum(a)):
            if got is not None:
                assert got[0] == got[1], (label, got)
                checked += 1
        line = (headless or {}).get(a["config_id"]) or explained_line(a["config_id"], a)
        verdict = next((part for part in line.split("; ") if part.startswith("lost ")), None)
        if verdict is not None:
            got = short_sum(verdict)
            assert got is not None and got[0] == got[1], (line, got)
            checked += 1
    for a in explained:
        got = waterfall_sum(explain_panel.waterfall(a).plain)
        assert got[0] == got[1], (a["config_id"], explain_panel.waterfall(a).plain)
        checked += 1
    by_group: dict[str, list[dict]] = {}
    for a in explained:
        by_group.setdefault(a["group_id"], []).append(a)
    for runs in by_group.values():
        for got in figure_sums(runs):
            assert got[0] == got[1], got
            checked += 1
    for got in table_sums(analysis):
        assert got[0] == got[1], got
        checked += 1
    return checked


def analysis_of(store_path: Path, study: str) -> list[dict]:
    store = StudyStore(store_path)
    try:
        return [{**c.analysis, "status": c.analysis.get("status", "completed")}
                for c in store.snapshot(study).configs if c.analysis]
    finally:
        store.close()


def test_every_row_of_the_recorded_store_adds_up_as_printed(tmp_path: Path):
    shutil.copy(FIXTURE / "store.sqlite", tmp_path / "store.sqlite")
    rows = analysis_of(tmp_path / "store.sqlite", "recorded")
    assert sum(1 for r in rows if not r.get("baseline")) == 3
    assert short_sum(next(r["verdict"] for r in rows if r["config_id"] == "3b7253b290")) == (76, 76)
    assert check_rows(rows) >= 3 * 7 + 3 * 2


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One small real `cockpit demo --headless` (4 runs of 20 steps): its store and what it printed."""
    workdir = tmp_path_factory.mktemp("demo")
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "cockpit", "demo", "--headless", "--steps", "20", "--workdir",
                           str(workdir), "--timeout", "500"], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return workdir / "local-demo", proc.stdout


def test_every_row_of_a_fresh_demo_adds_up_as_printed(demo):
    study_dir, out = demo
    store = next(study_dir.glob("*.sqlite"))
    rows = analysis_of(store, "local-demo")
    assert len(rows) == 4
    headless = {}
    from cockpit.study.spec import config_label

    for a in rows:  # the lines the headless run printed, found by the configuration's label
        label = config_label(a)
        headless[a["config_id"]] = next(line for line in out.splitlines() if line.startswith(f"{label}: "))
    assert check_rows(rows, headless) >= 2 * 3 + 2
