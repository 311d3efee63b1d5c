"""bench/README.md's tables of the tries at the seeds whose model is short (twice the steps, hidden RR tokens, the
sinus interval; svdb's 865 as a validation patient): every row recomputed from the run files bench/quality.py and
bench/gate_oracle.py wrote on this CPU (tests/fixtures/cpu-seed-trials: each fine-tune's result.json and
config.json, and gate_oracle's JSON)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from seeds import member_row, misses  # noqa: E402  (a bench script)

RECORDED = REPO / "tests" / "fixtures" / "cpu-seed-trials"
DS1_FOUR = ["108", "116", "201", "209"]
RECIPE_SECTION = "### The recipe's five seeds, with their files kept"
THREE_TRIES = "### Twice the steps, hidden RR tokens, the sinus interval"
SECTIONS = {"r": RECIPE_SECTION, "v": "### Who holds record 232's kind of S beats", "s": THREE_TRIES,
            "x": THREE_TRIES}  # by the fixture's first letter
TRIES = sorted(p.name for p in RECORDED.iterdir() if p.is_dir()) if RECORDED.is_dir() else []


def table_row(run: Path) -> str:
    """The row bench/README.md shows for one recorded fine-tune."""
    r = member_row(run)
    oracle = json.loads((run / "oracle.json").read_text())[0]
    best = oracle["best_ppv_at_se_floor"]
    calibration = json.loads((run / "result.json").read_text())["validation"]["calibration"]
    gate = calibration.get("gate") or {}
    decision = f"{calibration['share']:g}, " + (f"ev >= {gate['threshold']:.3f}" if gate.get("threshold") else "none")
    return (f"| {r['seed']} | {r['steps']} | {r['context']} | {r['hidden']:g} | {r['val F1']:.3f} ({r['kept step']}) | "
            f"{decision} | {r['accuracy']:.3f} | {r['S Se']:.3f} | {r['S +P']:.3f} | {r['232 found']:,} | "
            f"{r['V Se']:.3f} | {r['macro-F1 NSVF']:.3f} | {len(oracle['meeting_goal'])} of {oracle['tried']} | "
            + (f"{best['S +P']:.3f} |" if best else "none |"))


def section(name: str) -> str:
    """The bench/README.md section whose table shows the recorded try `name`."""
    text = (REPO / "bench" / "README.md").read_text()
    start = text.index(SECTIONS[name[0]])
    return text[start:text.index("\n### ", start + 1)]


def test_the_recorded_tries_are_the_runs_the_section_names():
    assert TRIES == ["r0", "r1", "r2", "r3", "r4", "s1-2400", "s1-cd5", "s4-2400", "v1-865", "v4-865", "x0-sinus",
                     "x1-sinus", "x2-sinus", "x3-sinus", "x4-sinus"]
    for name in TRIES:
        config = json.loads((RECORDED / name / "result.json").read_text())["config"]  # what ran
        validation = [*DS1_FOUR, "svdb/865"] if name.endswith("865") else DS1_FOUR
        assert config["train"]["val_records"] == validation and config["train"]["calibrate"], name
        assert config["train"]["steps"] == (2400 if name.endswith("2400") else 1200), name
        if name[0] == "r":  # the recipe itself, seed by seed
            assert config["train"]["seed"] == int(name[1]) and config["model"]["context"] == "rr_af_lock", name
        assert (config["model"]["context"] == "rr_af_lock_sinus") == name.endswith("sinus"), name
        assert config["train"].get("context_dropout", 0.0) == (0.5 if name.endswith("cd5") else 0.0), name


@pytest.mark.parametrize("name", TRIES)
def test_each_row_is_recomputed_from_its_run_files(name):
    assert table_row(RECORDED / name) in section(name)


def recipe_summary() -> tuple[dict[str, float], dict[str, float], dict]:
    """Over the recipe's five seeds: the mean of each DS2 figure, the worst of each, and the worst seed (the one
    missing the most of the goal's figures; of those, the lowest S sensitivity)."""
    rows = [member_row(RECORDED / f"r{seed}") for seed in range(5)]
    keys = ("accuracy", "S Se", "S +P", "232 found", "V Se", "macro-F1 NSVF")
    mean = {k: sum(r[k] for r in rows) / len(rows) for k in keys}
    worst = {k: min(r[k] for r in rows) for k in keys}
    return mean, worst, max(rows, key=lambda r: (len(misses(r)), -r["S Se"]))


def test_the_recipes_mean_and_worst_are_the_runs_in_bench_readme_and_readme():
    mean, worst, seed = recipe_summary()
    figures = ("accuracy", "S Se", "S +P", "V Se", "macro-F1 NSVF")
    for name, row in (("mean", mean), ("worst of each", worst)):
        assert (f"| {name} | | | | | | {row['accuracy']:.3f} | {row['S Se']:.3f} | {row['S +P']:.3f} | "
                f"{row['232 found']:,.0f} | {row['V Se']:.3f} | {row['macro-F1 NSVF']:.3f} | | |") in section("r0")
    assert f"The worst seed, {seed['seed']}, misses {len(misses(seed))} of the goal's figures" in section("r0")
    readme = (REPO / "README.md").read_text()
    assert "| mean of five seeds | " + " | ".join(f"{mean[k]:.3f}" for k in figures) + " |" in readme
    assert "| worst of each figure | " + " | ".join(f"{worst[k]:.3f}" for k in figures) + " |" in readme
    assert f"| worst seed ({seed['seed']}) | " + " | ".join(f"{seed[k]:.3f}" for k in figures) + " |" in readme
