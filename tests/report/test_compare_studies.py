"""`cockpit compare STUDY_A STUDY_B` on two real small studies trained here (10 steps each, 1 and 2 CPU
workers): configurations matched by their axes, the keys that differ, every figure of A and B with the
change, B as predicted from A, and what only one study has listed rather than dropped."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.forecast import advice, compare_table, interval
from cockpit.forecast import compare as cmp
from cockpit.forecast.analysis import analysed
from cockpit.report.source import from_store, load_input
from tests.studies import write_study

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A: window 64 on 1 and 2 workers. B: the same with [train] bucket_cap_mb = 0.01 and window 32 too."""
    tmp = tmp_path_factory.mktemp("compare")
    a = write_study(tmp / "A.toml", "cmp-a", tmp / "work", cluster={"gpus_per_node": 2, "max_concurrent_jobs": 1})
    b = write_study(tmp / "B.toml", "cmp-b", tmp / "work", cluster={"gpus_per_node": 2, "max_concurrent_jobs": 1},
                    train={"bucket_cap_mb": 0.01, "window": None}, sweep={"gpus_per_node": [1, 2], "window": [64, 32]})
    for path in (a, b):
        assert cli(["run", "--headless", "--skip-preflight", str(path), "--out", str(tmp / f"{path.stem}-report"),
                    "--timeout", "300"]) == 0
    return a, b


def test_configurations_are_matched_by_their_axes_and_the_rest_listed(studies):
    a, b = studies
    ia, ib = load_input(a), load_input(b)
    c = cmp.compare(ia.study, ia.results, ib.study, ib.results)
    assert c.changed_axes == {}
    assert sorted(p.a["workers"] for p in c.pairs) == [1, 2]
    assert all(p.a["window"] == p.b["window"] == 64 for p in c.pairs)
    assert not c.only_a and sorted((r["window"], r["workers"]) for r in c.only_b) == [(32, 1), (32, 2)]
    for pair in c.pairs:
        assert pair.differs == [("train.bucket_cap_mb", None, 0.01)]  # the one key the studies differ in


def test_every_figure_of_both_with_its_change_and_b_predicted_from_a(studies):
    a, b = studies
    ia, ib = load_input(a), load_input(b)
    c = cmp.compare(ia.study, ia.results, ib.study, ib.results)
    two = next(p for p in c.pairs if p.a["workers"] == 2)
    rows = {name.strip(): (va, vb, d) for name, va, vb, d in compare_table.figure_rows(two)}
    assert rows["T s"][:2] == (f"{two.a['train_time_s']:.2f}", f"{two.b['train_time_s']:.2f}")
    assert rows["T1 s (the group's baseline)"][0] == f"{two.a['t1_s']:.2f}" and rows["N"][:2] == ("2", "2")
    assert rows["S = T1/(T/work)"][1] == f"{two.b['speedup']:.3f}"
    # E in percent, its change in percentage points (the CSV keeps the fraction)
    ea, eb = two.a["efficiency"], two.b["efficiency"]
    assert rows["E = S/N"] == (f"{ea * 100:.0f}%", f"{eb * 100:.0f}%", f"{round((eb - ea) * 100):+d} pp"
                               if round((eb - ea) * 100) else "0 pp")
    terms = [k for k in rows if k.endswith(" s") and k not in ("T s", "T/work s", "O = T/work - T1/N s")
             and not k.startswith("T1")]
    assert {"exposed all-reduce s", "compute s", "data wait s"} <= set(terms)
    for col in (0, 1):  # printed, the terms add up to the printed O
        o = round(float(rows["O = T/work - T1/N s"][col]) * 100)
        assert sum(round(float(rows[t][col]) * 100) for t in terms if rows[t][col] != "-") == o
    p = two.predicted
    assert isinstance(p, advice.Forecast), p
    assert p.changes == (("train.bucket_cap_mb", None, 0.01),) and "measured" in p.basis
    line = compare_table.prediction_line(two)
    assert re.search(r"B predicted from A: T \d+\.\d\d s, 90% \d+\.\d\d-\d+\.\d\d s .*measured T \d+\.\d\d s .*"
                     r"error [+-]\d", line), line
    # its interval: A's error model widened by the forecast's own terms, and where B's measured T fell
    iv = interval.interval(p.t_s, interval.for_terms(analysed(ia.results)[1], p.t_s, p.term_sd))
    assert two.t90 is not None and (two.t90.low, two.t90.high) == pytest.approx((iv.low, iv.high))
    where = "inside" if iv.contains(two.b["train_time_s"]) else "outside"
    assert f"{p.t_s:.2f} s, 90% {iv.low:.2f}-{iv.high:.2f} s (" in line and f", {where} its 90% interval; " in line
    assert f"; T 90%: {iv.spread.basis}" in line
    assert "gain T_A - T_B: predicted" in line and "intra_node (measured by 1 run(s) of this study; latency " in line


def test_cockpit_compare_prints_both_with_stores_or_study_files(studies, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    a, b = studies
    store_a = a.parent / "work" / "cmp-a" / "cockpit.sqlite"
    for first in (a, store_a):
        assert cli(["compare", str(first), str(b)]) == 0
        out = capsys.readouterr().out
        assert "A = cmp-a, B = cmp-b: 2 matched configurations, 0 only in A, 2 only in B" in out
        assert "keys that differ: train.bucket_cap_mb unset -> 0.01" in out
        assert out.count("only in B: synthetic foundation w32 ") == 2
        assert out.count("B predicted from A: ") == 2
    assert cli(["compare", str(a), str(a.parent / "missing.toml")]) == 2
    assert "missing.toml: no such file" in capsys.readouterr().err


def test_an_axis_each_study_holds_at_another_single_value_is_matched_across(tmp_path):
    """The demo store against itself with the batch doubled and the steps halved (the advice's change): the
    configurations match across batch sizes, and both keys are listed as differing."""
    store = tmp_path / "cockpit.sqlite"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "demo-store" / "local-demo" / "cockpit.sqlite", store)
    a = from_store(store, "local-demo").results
    b = copy.deepcopy(a)
    for r in b:
        r["config"]["batch_size"], r["config"]["train"]["steps"] = 32, 20
    c = cmp.compare("a", a, "b", b)
    assert c.changed_axes == {"batch_size": (16, 32)} and len(c.pairs) == 4 and not c.only_a and not c.only_b
    assert c.pairs[0].differs == [("batch_size", 16, 32), ("train.steps", 40, 20)]
    p = next(pr for pr in c.pairs if pr.a["workers"] == 2).predicted
    assert isinstance(p, advice.Forecast) and "batch_size 32 scaled from the b16 baseline" in p.extrapolated
