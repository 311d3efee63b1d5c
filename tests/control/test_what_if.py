"""Advice with a number and `cockpit plan --what-if`, on the store the real `cockpit demo` recorded
(tests/fixtures/demo-store: 1 and 2 CPU workers, windows 128 and 256, 40 fixed steps, with the trainer's
gradient bytes, buckets and start-up probes).

The predictions are recomputed here from the model's formulas (docs/prediction.md) on the recorded
result.json files, written out by hand, and must equal what the cockpit prints and returns."""

from __future__ import annotations

import math
import shutil
import statistics
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.figures import explain
from cockpit.forecast import advice, interval, prediction, straggler
from cockpit.forecast.advice import options
from cockpit.forecast.analysis import analyse, analysed
from cockpit.forecast.plan import study_spread
from cockpit.forecast.whatif import (
    Inputs,
    WhatIf,
    WhatIfError,
    parse_assignment,
    predict,
    variant_of,
    what_if,
)
from cockpit.forecast.whatif_table import COLUMNS, summary_lines, table_rows
from cockpit.report.source import from_store
from cockpit.run.session import node_cores
from cockpit.study.spec import load_study

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "demo-store"
STORE = Path("local-demo") / "cockpit.sqlite"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A copy of the demo store and its study file; returns the study file."""
    (tmp_path / "local-demo").mkdir()
    shutil.copyfile(FIXTURE / "study.toml", tmp_path / "study.toml")
    shutil.copyfile(FIXTURE / STORE, tmp_path / STORE)
    return tmp_path / "study.toml"


@pytest.fixture
def results(demo: Path) -> list[dict]:
    return from_store(demo.parent / STORE, "local-demo").results


def by_scale(results: list[dict], window: int, workers: int) -> dict:
    return next(r for r in results if r["config"]["window"] == window and r["config"]["gpus_per_node"] == workers)


def predicted(demo: Path, results: list[dict], *arguments: str) -> WhatIf:
    """The what-if of `cockpit plan --what-if ARGUMENTS` (cockpit.forecast.whatif.predict) on the demo's results."""
    return predict(load_study(demo), arguments, Inputs(results)).what_if


def busbw(results: list[dict]) -> float:
    """The median intra-node bus bandwidth of the runs' own start-up probes."""
    return statistics.median(r["comm"]["probe"]["links"]["intra_node"]["busbw_bytes_per_s"]
                             for r in results if (r["comm"].get("probe") or {}).get("links"))


def exposed(base: dict, n: int, buckets: int, bw: float, batch_factor: float = 1.0) -> float:
    """Exposed all-reduce per step: max(t_ar / buckets, t_ar - backward), the ring all-reduce of G bytes; on
    CPU with one core per worker all of t_ar (nothing overlaps)."""
    # the demo's probes predate the latency probe: each bucket's ring steps priced at the documented default
    t_ar = 2 * (n - 1) / n * base["comm"]["grad_bytes"] / bw + 2 * (n - 1) * buckets * prediction.DEFAULT_LATENCY_S
    if base["device"] == "cpu" and base["config"]["cpus_per_task"] == 1:
        return t_ar
    backward = 2 / 3 * base["breakdown_s"]["compute"] / base["timing"]["steps"] * batch_factor
    return max(t_ar / buckets, t_ar - backward)


def slower_rank(base: dict, n: int) -> float:
    """The model's wait for the slower rank per step on n workers: e_n x the baseline's per-step sd, which the store
    works out of its metrics intervals where the demo's result.json predates the field (cockpit.forecast.straggler)."""
    sd = base["timing"].get("step_time_sd_s")
    return straggler.wait_per_step(sd, n) if sd else 0.0


def wait(run: dict) -> float:
    """Rank 0's straggler wait: its exposed all-reduce minus the least any rank waited."""
    return run["breakdown_s"]["comm"] - min(r["comm"] for r in run["breakdown_by_rank"])


def test_bucket_what_if_is_the_models_formula_on_the_recorded_runs(demo, results):
    w = predicted(demo, results, "train.bucket_cap_mb=0.1")
    bw = busbw(results)
    for window in (128, 256):
        base, run = by_scale(results, window, 1), by_scale(results, window, 2)
        k = math.ceil(base["comm"]["grad_bytes"] / (0.1 * 2**20))  # an explicit cap sizes every bucket
        assert k == advice.buckets_for(base["comm"]["grad_bytes"], 0.1) == {128: 5, 256: 6}[window]
        steps = base["timing"]["steps"]  # fixed steps: 2 workers run as many steps, each on its own batch
        ratio = (exposed(base, 2, k, bw) + slower_rank(base, 2)) / \
            (exposed(base, 2, run["comm"]["buckets"], bw) + slower_rank(base, 2))
        expected = run["timing"]["train_time_s"] - (run["breakdown_s"]["comm"] - wait(run)) * (1 - ratio)
        lines = {line.workers: line for line in w.lines if f"w{window} " in line.label}
        two, one = lines[2].predicted, lines[1].predicted
        assert isinstance(two, advice.Forecast) and isinstance(one, advice.Forecast)
        assert two.t_s == pytest.approx(expected, rel=1e-9)
        assert one.t_s == pytest.approx(base["timing"]["train_time_s"], rel=1e-9)  # no all-reduce at N = 1
        assert two.work == 2 and two.speedup == pytest.approx(one.t_s / (two.t_s / 2))
        assert two.efficiency == pytest.approx(two.speedup / 2)
        assert lines[2].recorded.how == "measured" and lines[2].recorded.t_s == run["timing"]["train_time_s"]
        assert steps == 40 and not two.extrapolated and "measured" in two.basis


def test_an_axis_value_never_run_is_the_model_alone_and_marked_extrapolated(demo, results):
    w = predicted(demo, results, "sweep.gpus_per_node=[1, 2, 4]", "cluster.gpus_per_node=4")
    bw = busbw(results)
    base = by_scale(results, 256, 1)
    four = next(line for line in w.lines if "w256 1x4" in line.label)
    assert four.recorded is None and isinstance(four.predicted, advice.Forecast)
    steps_1 = base["timing"]["steps"]
    # each part per step x the median over the two 2-worker runs (w128, w256) of what they measured per step over
    # what the model gives them from their baselines (the demo's probes predate the contention probe: x1)
    ratios: dict[str, list[float]] = {}
    for window in (128, 256):
        one, two = by_scale(results, window, 1), by_scale(results, window, 2)
        model = {p: one["breakdown_s"][p] / one["timing"]["steps"] for p in explain.PARTS}
        model["comm"] = exposed(one, 2, two["comm"]["buckets"], bw) + slower_rank(one, 2)
        for p in explain.PARTS:
            ratios.setdefault(p, []).append(two["breakdown_s"][p] / two["timing"]["steps"] / model[p])
    factor = {p: statistics.median(v) for p, v in ratios.items()}
    per_step = sum(base["breakdown_s"][p] / steps_1 * factor[p] for p in explain.PARTS if p != "comm") \
        + (exposed(base, 4, 1, bw) + slower_rank(base, 4)) * factor["comm"]
    # fixed steps and a per-worker batch: 4 workers do 4x the samples in as many steps as the baseline
    assert four.predicted.t_s == pytest.approx(steps_1 * per_step, rel=1e-9)
    assert "gpus_per_node = 4 never ran" in four.predicted.extrapolated
    sd = base["timing"]["step_time_sd_s"]
    assert four.predicted.link == ("intra_node (measured by 2 run(s) of this study; latency 20 us by default "
                                   f"(none measured or in the profile); {straggler.words(sd, 4, straggler.source(base))}"
                                   "; per-step parts x the 2 finished run(s) sharding nothing measured: " + ", ".join(
                                       f"{p} x{factor[p]:.2f}" for p in prediction.REFIT_PARTS) + ")")


def test_a_batch_what_if_scales_each_measured_part_as_the_model_does(demo, results):
    w = predicted(demo, results, "sweep.batch_size=[32]", "train.steps=20")
    bw = busbw(results)
    base, run = by_scale(results, 128, 1), by_scale(results, 128, 2)
    parts = run["breakdown_s"]
    # half the steps, each twice the samples: data wait and compute the same, optimizer and other halved,
    # the all-reduce once per step (backward twice as long to hide it behind)
    ratio_comm = 20 * exposed(base, 2, 1, bw, 2.0) / (40 * exposed(base, 2, 1, bw))
    expected = (parts["data_wait"] + parts["compute"] + 0.5 * (parts["optimizer"] + parts["other"])
                + (parts["comm"] - wait(run)) * ratio_comm + wait(run)
                + run["timing"]["train_time_s"] - sum(parts.values()))
    line = next(line for line in w.lines if "w128 1x2" in line.label)
    assert line.predicted.t_s == pytest.approx(expected, rel=1e-9)
    assert line.recorded is not None and line.recorded.t_s == run["timing"]["train_time_s"]  # against b16
    assert "batch_size 32 scaled from the b16 baseline" in line.predicted.extrapolated
    assert not w.dropped  # each b32 configuration stands against the b16 one it replaces


def test_no_gain_within_the_noise_of_one_unrepeated_run_is_given(results):
    """The demo ran each configuration once, and every gain the model sees is under 10% of T: none is given."""
    rows = [r for r in analyse(results) if not r.get("baseline")]
    items = [i for row in rows for item in row["advice_items"] for i in (item, *item.alternatives)]
    noise = [i for i in items if "within 10% of T" in i.text()]
    assert noise and all(i.predicted is None for i in noise)
    for row in rows:
        for item in row["advice_items"]:
            assert item.predicted is None or item.gain_s > 0.1 * row["train_time_s"], item.text()
        assert "→ predicted T" not in row["advice"]


def test_advice_names_a_key_and_a_figure_for_every_loss_the_model_covers(results, monkeypatch):
    monkeypatch.setattr(options, "UNREPEATED_NOISE", 0.0)  # every predicted gain given, whatever its size
    every, spread = analysed(results)
    rows = [r for r in every if not r.get("baseline")]
    assert len(rows) == 2
    covered = {t for e in advice.key_effects().values() if e.model == "formula" for t in e.terms}
    assert covered == {"comm", "optimizer", "other"}
    for row in rows:
        _, shown = explain.shown_terms(row)
        losses = [t for t, v in shown if v > 0]
        assert [a.term for a in row["advice_items"]] == losses  # one advice per loss, largest first
        for item in row["advice_items"]:
            assert item.keys, item
            if item.term in covered:
                assert item.predicted is not None and item.gain_s == item.gain_s, item.text()
                assert "→ predicted T" in item.text() and f"E {row['efficiency'] * 100:.0f}% → " in item.text()
                # its 90% interval: the study's error model widened by the forecast's own terms, by hand
                iv = interval.interval(item.predicted.t_s, interval.for_terms(spread, item.predicted.t_s,
                                                                              item.predicted.term_sd))
                assert item.t90 == pytest.approx((iv.low, iv.high)) and iv.low < item.predicted.t_s < iv.high
                assert f"{item.predicted.t_s:.2f} s (90% {iv.low:.2f}-{iv.high:.2f} s), E " in item.text()
            else:  # CPU workers: cores per task, which the model cannot price without a baseline at that value
                assert item.predicted is None and "not predicted" in item.text()
        assert row["advice"] == advice.advice_text(row["advice_items"])
        assert "→ predicted T" in row["advice"]  # the demo's every N-worker row has a predicted gain


def test_the_advices_keys_are_what_if_arguments_the_study_accepts(demo, results):
    study = load_study(demo)
    for row in analyse(results):
        for item in row.get("advice_items") or []:
            for option in (item, *item.alternatives):
                variant = variant_of(study, [parse_assignment(a) for a in option.what_if])
                assert variant.name == study.name


def test_without_gradient_bytes_the_advice_names_the_key_and_says_why_not(tmp_path):
    rec = from_store(ROOT / "tests" / "fixtures" / "recorded-store" / "store.sqlite", "recorded").results
    rows = [r for r in analyse(rec) if not r.get("baseline")]
    for row in rows:
        first = row["advice_items"][0]
        assert first.term == "comm" and first.keys[0][0] == "train.bucket_cap_mb"
        assert first.predicted is None and "no comm.grad_bytes" in first.reason


def test_cockpit_plan_what_if_prints_the_prediction_and_the_links_used(demo, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert cli(["plan", str(demo), "--what-if", "train.bucket_cap_mb=0.1"]) == 0
    out = capsys.readouterr().out
    assert "what-if: [train] bucket_cap_mb unset -> 0.1" in out
    assert "link figures: intra_node 0.322 GB/s: measured by 2 run(s) of this study" in out
    assert "4 of 4 configurations predicted" in out and "m+Δ" in out
    assert cli(["plan", str(demo), "--what-if", "sweep.gpus_per_node=[1, 2, 4]", "cluster.gpus_per_node=4"]) == 0
    fits = node_cores(load_study(demo)) >= 4  # 4 one-core workers on this machine, else too big as the plan says
    assert ("extrapolated (2): gpus_per_node = 4 never ran" if fits else "too big (2): more cores than a node's") \
        in capsys.readouterr().out


def test_what_if_refuses_unknown_keys_in_the_specs_own_words(demo, capsys):
    assert cli(["plan", str(demo), "--what-if", "train.bucket_cap_mbb=1"]) == 2
    assert "[train].bucket_cap_mbb is not a known key (did you mean 'bucket_cap_mb'?); expected one of" in capsys.readouterr().err
    assert cli(["plan", str(demo), "--what-if", "sweep.gpus_per_node=[1, 4]"]) == 2
    assert "[sweep].gpus_per_node contains 4 but [cluster].gpus_per_node is 2" in capsys.readouterr().err
    with pytest.raises(WhatIfError, match="is not a TOML value"):
        parse_assignment("train.lr=1e-")
    assert parse_assignment("train.device=cpu") == ("train.device", "cpu")  # what a shell leaves of "cpu"
    with pytest.raises(WhatIfError, match="a section and a key"):
        parse_assignment("steps=10")
    assert parse_assignment('train.device="cpu"') == ("train.device", "cpu")


def test_a_key_given_twice_is_refused_naming_both(demo, capsys):
    assert cli(["plan", str(demo), "--what-if", "train.lr=0.01", "train.lr=0.02"]) == 2
    assert capsys.readouterr().err == \
        "cockpit: --what-if train.lr=0.01 train.lr=0.02: train.lr is given twice; give it once\n"


@pytest.mark.parametrize(("argument", "words"), [
    ("study.name=other", "[study] keys name the study and change no run"),
    ("cluster.ssh_host=elsewhere", "cluster.ssh_host changes no run that a what-if predicts"),
])
def test_a_key_that_changes_no_run_is_refused(demo, capsys, argument, words):
    assert cli(["plan", str(demo), "--what-if", argument]) == 2
    assert capsys.readouterr().err == (
        f"cockpit: --what-if {argument}: {words}; a what-if changes [model], [train], [data], [sweep] keys and "
        "[cluster] gpus_per_node, cores_per_node, site, node_hour_budget, expected_minutes, time_limit\n")


def test_results_from_baselines_are_counted_as_such_with_or_without_a_store(demo, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    runs = ROOT / "tests" / "fixtures" / "h200-runs"
    given = len(list(runs.rglob("result.json")))
    assert cli(["plan", str(demo), "--what-if", "train.lr=0.01", "--baselines", str(runs)]) == 0
    assert f"from {given + 4} recorded result(s) ({given} from --baselines, 4 in {demo.parent / STORE})" in \
        capsys.readouterr().out
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(demo, alone / "study.toml")
    assert cli(["plan", str(alone / "study.toml"), "--what-if", "train.lr=0.01", "--baselines", str(runs)]) == 0
    assert f"from {given} recorded result(s) ({given} from --baselines, no store yet)" in capsys.readouterr().out


def test_a_key_the_model_has_no_formula_for_is_not_predicted(demo, results):
    study = load_study(demo)
    assignments = [parse_assignment("model.d_model=128")]
    variant = variant_of(study, assignments)
    w = what_if(study, variant, results, prediction.Links(), assignments)
    for line in w.lines:
        assert isinstance(line.predicted, prediction.NoPrediction)
        assert "the model has no formula for model.d_model (64 -> 128)" in line.predicted.reason


def test_the_demos_report_gives_every_n_worker_row_advice_with_a_key_a_value_and_a_gain(demo, tmp_path,
                                                                                        monkeypatch):
    monkeypatch.setattr(options, "UNREPEATED_NOISE", 0.0)  # every predicted gain given, whatever its size
    from cockpit.report.write import write_report
    from tests.report.test_report import markdown_rows

    files = write_report(from_store(demo.parent / STORE, "local-demo"), tmp_path / "report")
    text = files.markdown.read_text()
    header = next(line for line in text.split("## Advice", 1)[1].splitlines() if line.startswith("| "))
    column = {name.strip(): i for i, name in enumerate(header.split("|")[1:-1])}
    rows = markdown_rows(text, "Advice")
    change, gain = column["change → predicted T and E"], column["predicted gain (s of T)"]
    windows = {r[column["window"]] for r in rows if "→ predicted T" in r[change] and r[gain].startswith("+")}
    assert windows == {"128", "256"}  # both 2-worker rows: a key, a value and a positive predicted gain
    assert all(r[column["N"]] == "2" for r in rows)


def test_every_predicted_what_if_carries_the_plans_interval(demo, results):
    """A what-if's T has the 90% interval the study's plan gives its predictions (one error model:
    cockpit.forecast.plan.study_spread), in the table's last column and its basis under it."""
    study = load_study(demo)
    outcome = predict(study, ["train.bucket_cap_mb=0.1"], Inputs(results))
    w = outcome.what_if
    assert w.spread == study_spread(study, results) and w.spread is not None
    rows = table_rows(outcome)
    assert COLUMNS[-1] == "T 90%" and len(rows) == len(w.lines) == 4
    for line, row in zip(w.lines, rows, strict=True):
        iv = w.interval(line)
        if line.workers == 1:  # no all-reduce: the bucket cap leaves the run as measured, with no interval
            assert iv is None and line.predicted.basis.startswith("measured (") and row[-1] == "-"
            continue
        assert iv is not None and iv.low < line.predicted.t_s < iv.high
        assert row[-1] == f"{iv.low:.2f}-{iv.high:.2f}"
        own = interval.for_terms(w.spread, line.predicted.t_s, line.predicted.term_sd)
        assert own.half >= w.spread.half and iv.high / line.predicted.t_s == pytest.approx(math.exp(own.centre + own.half))
    assert sum(1 for line in w.lines if w.interval(line)) == 2  # the two 2-worker configurations
    assert f"T 90%: {interval.legend(w.spread)}; S, E and node-hours scale with it as in the plan" in summary_lines(outcome)
