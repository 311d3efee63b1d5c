"""bench/label_efficiency.py: its loop flags on each device, and its figures and gains recomputed from the run
directories it wrote on one H200 (tests/fixtures/h200-label-efficiency: each run's result.json and config.json),
equal to what it printed there and to bench/README.md's table of that run."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import label_efficiency as le  # noqa: E402

RECORDED = REPO / "tests" / "fixtures" / "h200-label-efficiency"
RUN_NAME = re.compile(r"(?P<share>[\d.]+)-(?P<start>foundation|random)-seed(?P<seed>\d+)$")
README_SECTION = "### Label efficiency with a foundation of 100 times the tokens"


def runs() -> list[tuple[Path, float, str, int]]:
    """Every recorded fine-tune: its folder, share, start and seed (from the folder name the script gave it)."""
    out = []
    for run in sorted(RECORDED.glob("run*/*/")):
        if m := RUN_NAME.match(run.name):
            out.append((run, float(m["share"]), m["start"], int(m["seed"])))
    return out


def last_value(flags: list[str], name: str) -> str:
    """What argparse keeps of a repeated flag: its last value."""
    return flags[len(flags) - flags[::-1].index(name)]


def test_loop_keeps_the_recipe_and_feeds_a_gpu():
    cpu, cuda = le.loop("cpu"), le.loop("cuda")
    assert last_value(cpu, "--device") == "cpu" and last_value(cpu, "--num-workers") == "0"
    assert last_value(cuda, "--device") == "cuda" and int(last_value(cuda, "--num-workers")) > 0
    for flag in ("--batch-size", "--lr", "--warmup-steps"):  # the recipe's optimisation, unchanged on the GPU
        assert last_value(cuda, flag) == last_value(cpu, flag) == last_value(le.LOOP, flag)


def test_recorded_runs_are_the_gpu_runs_they_claim():
    assert len(runs()) == 12
    foundation = json.loads((RECORDED / "run1" / "foundation" / "result.json").read_text())
    assert foundation["device"] == "cuda" and foundation["mode"] == "foundation"
    assert foundation["timing"]["samples"] == 100 * 300 * 64  # 100 times the CPU foundation's windows
    for run, share, start, seed in runs():
        train = json.loads((run / "config.json").read_text())["train"]
        assert (train["device"], train["seed"], train["label_fraction"]) == ("cuda", seed, share), run
        assert bool(train.get("init_checkpoint")) == (start == "foundation"), run


@pytest.mark.parametrize("batch", ["run1", "run2", "cpu-300"])
def test_printed_figures_come_from_result_json(batch):
    """The script's own table and foundation line, recomputed from the files it wrote; README's figures for each
    foundation among them."""
    printed = (RECORDED / batch / "label_efficiency.txt").read_text()
    foundation = le.read(RECORDED / batch / "foundation" / "result.json")
    assert le.foundation_line(foundation) in printed
    loss, accuracy = foundation["eval"]["masked_loss"], foundation["eval"]["masked_accuracy"]
    assert f"{loss:.3f} nats" in (REPO / "bench" / "README.md").read_text()
    assert f"{accuracy:.3f}" in (REPO / "bench" / "README.md").read_text()
    rows = {f"{share:>4.0%} of the patients, {start}, seed {seed}": le.figures(run)
            for run, share, start, seed in runs() if run.parent.name == batch}
    for line in le.table(rows, le.KEYS, 44)[1:]:
        assert line in printed, line


def readme_rows() -> dict[tuple[float, str, int], list[str]]:
    text = (REPO / "bench" / "README.md").read_text()
    section = text[text.index(README_SECTION):]
    section = section[:section.index("\n### ", 1)]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 9 and cells[0].endswith("%") and cells[1] in le.INITS:
            rows[(float(cells[0].rstrip("%")) / 100, cells[1], int(cells[2]))] = cells[3:]
    return rows


def test_readme_table_and_gains_are_the_recorded_runs():
    rows, gains = readme_rows(), {}
    assert len(rows) == len(runs())
    for run, share, start, seed in runs():
        got = le.figures(run)
        assert rows[(share, start, seed)] == [f"{got[k]:.3f}" for k in le.KEYS], run
        gains.setdefault(share, {}).setdefault(seed, {})[start] = got["macro-F1 NSVF"]
    text = (REPO / "bench" / "README.md").read_text()
    for share, by_seed in gains.items():
        diffs = [g["foundation"] - g["random"] for g in by_seed.values()]
        mean = f"{sum(diffs) / len(diffs):+.3f}"
        assert f"mean {mean} over {len(diffs)} seeds" in text, (share, mean)
