"""`hlm-train ensemble` on real fine-tunes (MIT-BIH 119 trains, DS2's 200 is scored): the mean of the
members' probabilities, scored like a run, and every bad member refused with the file and key named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trainer import rundir
from trainer.cli import main
from trainer.ensemble import ENSEMBLE_FILE


@pytest.fixture(scope="module")
def members(physionet: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from tests.data.conftest import copy_records

    tmp = tmp_path_factory.mktemp("ensemble")
    data = copy_records(physionet / "mitdb", tmp / "db", ["119", "200"], ("hea", "atr", "dat"))
    runs = []
    for seed in (0, 1):
        run_dir = tmp / f"seed{seed}"
        code = main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(tmp / "c"),
                     "--tokenizer", "samples", "--fs", "180", "--context", "rr", "--pool", "centre", "--mode",
                     "finetune", "--window", "64", "--batch-size", "8", "--layers", "1", "--d-model", "16",
                     "--heads", "2", "--steps", "4", "--lr", "1e-2", "--device", "cpu", "--cpus-per-task", "1",
                     "--num-workers", "0", "--seed", str(seed)])
        assert code == 0, rundir.read_exit(run_dir)
        runs.append(run_dir)
    return runs


def _ensemble(out: Path, *members: Path) -> tuple[int, dict | None]:
    code = main(["ensemble", "--out", str(out), *map(str, members), "--device", "cpu"])
    path = out / ENSEMBLE_FILE
    return code, json.loads(path.read_text()) if path.exists() else None


def test_a_run_with_itself_scores_exactly_as_the_run(members: list[Path], tmp_path: Path) -> None:
    code, summary = _ensemble(tmp_path / "same", members[0], members[0])
    assert code == 0
    own = rundir.read_result(members[0])["eval"]
    assert summary["eval"]["confusion"] == own["confusion"] and summary["eval"]["by_record"] == own["by_record"]
    assert summary["eval"]["macro_f1_nsvf"] == own["macro_f1_nsvf"]


def test_two_seeds_average_into_one_scored_classifier(members: list[Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, summary = _ensemble(tmp_path / "two", *members)
    assert code == 0
    ev = summary["eval"]
    results = [rundir.read_result(m) for m in members]
    assert ev["samples"] == results[0]["eval"]["samples"] > 2000  # every beat of record 200
    assert sum(map(sum, ev["by_record"]["200"])) == ev["samples"] and ev["windows_per_s"] > 0
    assert [m["seed"] for m in summary["members"]] == [0, 1]
    assert [m["eval"]["macro_f1"] for m in summary["members"]] == [r["eval"]["macro_f1"] for r in results]
    assert summary["test_records"] == ["200"] and summary["how"] == "mean of the members' class probabilities"
    assert f"2 members, {ev['samples']:,} test windows, macro-F1 {ev['macro_f1']:.3f}" in capsys.readouterr().out


def _copy(src: Path, dst: Path, **config_changes: object) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("tokens"))
    config = json.loads((dst / rundir.CONFIG_FILE).read_text())
    config.update(config_changes)
    (dst / rundir.CONFIG_FILE).write_text(json.dumps(config))
    return dst


def test_bad_members_are_refused_naming_the_file_and_key(members: list[Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    wider = _copy(members[1], tmp_path / "wider", window=128)
    assert _ensemble(tmp_path / "o1", members[0], wider) == (2, None)
    err = capsys.readouterr().err
    assert f"{wider}/config.json: window = 128, but {members[0]}/config.json has 64" in err
    assert "must score the same test windows" in err

    foundation = _copy(members[1], tmp_path / "foundation", mode="foundation")
    assert _ensemble(tmp_path / "o2", members[0], foundation)[0] == 2
    assert f"{foundation}/config.json: mode: expected 'finetune'" in capsys.readouterr().err

    unweighted = _copy(members[1], tmp_path / "no-model")
    (unweighted / rundir.MODEL_FILE).unlink()
    assert _ensemble(tmp_path / "o3", members[0], unweighted)[0] == 2
    assert f"{unweighted}/model.pt: missing" in capsys.readouterr().err

    assert _ensemble(tmp_path / "o4", members[0])[0] == 2
    assert "give at least two run directories" in capsys.readouterr().err
