"""`hlm-train ensemble` on real fine-tunes (MIT-BIH 119 trains, DS2's 200 is scored): the mean of the
members' probabilities, scored like a run, and every bad member refused with the file and key named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runcontract.contract import CONFIG_FILE, RESULT_FILE
from runcontract.records import read_exit, read_result
from trainer import rundir
from trainer.commands.cli import main
from trainer.rundir import ENSEMBLE_FILE


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
        assert code == 0, read_exit(run_dir)
        runs.append(run_dir)
    return runs


def _ensemble(out: Path, *members: Path) -> tuple[int, dict | None]:
    code = main(["ensemble", "--out", str(out), *map(str, members), "--device", "cpu"])
    path = out / ENSEMBLE_FILE
    return code, json.loads(path.read_text()) if path.exists() else None


def test_a_run_with_itself_scores_exactly_as_the_run(members: list[Path], tmp_path: Path) -> None:
    code, summary = _ensemble(tmp_path / "same", members[0], members[0])
    assert code == 0
    own = read_result(members[0])["eval"]
    assert summary["eval"]["confusion"] == own["confusion"] and summary["eval"]["by_record"] == own["by_record"]
    assert summary["eval"]["macro_f1_nsvf"] == own["macro_f1_nsvf"]


def test_two_seeds_average_into_one_scored_classifier(members: list[Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, summary = _ensemble(tmp_path / "two", *members)
    assert code == 0
    ev = summary["eval"]
    results = [read_result(m) for m in members]
    assert ev["samples"] == results[0]["eval"]["samples"] > 2000  # every beat of record 200
    assert sum(map(sum, ev["by_record"]["200"])) == ev["samples"] and ev["windows_per_s"] > 0
    assert [m["seed"] for m in summary["members"]] == [0, 1]
    assert [m["eval"]["macro_f1"] for m in summary["members"]] == [r["eval"]["macro_f1"] for r in results]
    assert summary["test_records"] == ["200"] and summary["how"] == "mean of the members' class probabilities"
    assert f"2 members, {ev['samples']:,} test windows, macro-F1 {ev['macro_f1']:.3f}" in capsys.readouterr().out


def _copy(src: Path, dst: Path, **config_changes: object) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("tokens"))
    config = json.loads((dst / CONFIG_FILE).read_text())
    config.update(config_changes)
    (dst / CONFIG_FILE).write_text(json.dumps(config))
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


def test_cockpit_scores_prints_the_ensemble_and_each_member_as_the_trainer_scored_them(
        members: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cockpit.cli import main as cockpit

    code, summary = _ensemble(tmp_path / "ens", *members)
    assert code == 0
    capsys.readouterr()
    assert cockpit(["scores", str(tmp_path / "ens"), str(members[0] / RESULT_FILE)]) == 0
    out = capsys.readouterr().out
    ev, own = summary["eval"], read_result(members[0])["eval"]
    figure = "macro-F1 (N,S,V,F)" if ev["macro_f1_nsvf"] is not None else "macro-F1"
    key = "macro_f1_nsvf" if ev["macro_f1_nsvf"] is not None else "macro_f1"
    ensemble_part, member_part = out.split(f"\n\n{members[0] / RESULT_FILE}\n")
    assert ensemble_part.startswith(f"{tmp_path / 'ens' / ENSEMBLE_FILE}\nModel quality: {figure} {ev[key]:.3f} = ")
    assert f"; accuracy {ev['accuracy']:.3f})" in ensemble_part
    for name, row in zip(ev["classes"], ev["confusion"], strict=True):  # the matrix, row by row
        assert f"  {name:>6}" + "".join(f"{v:>8,}" for v in row) in ensemble_part
    for m, run_dir in zip(summary["members"], members, strict=True):  # each member, recomputed from its result
        assert f"seed {m['seed']}   {figure} {m['eval'][key]:.3f} = mean F1 of " in ensemble_part
        assert str(run_dir) in ensemble_part
    assert member_part.startswith(f"Model quality: {figure} {own[key]:.3f} = ")


def test_cockpit_scores_names_what_it_cannot_read(members: list[Path], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from cockpit.cli import main as cockpit

    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / ENSEMBLE_FILE).write_text('{"eval": {"confusion": [[1, 2')  # a truncated file
    unscored = tmp_path / "unscored.json"
    unscored.write_text(json.dumps({"status": "completed"}))
    assert cockpit(["scores", str(tmp_path / "cut"), str(tmp_path), str(unscored), str(members[1])]) == 2
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert err[0].startswith(f"cockpit: {tmp_path / 'cut' / ENSEMBLE_FILE}: not valid JSON")
    assert err[1] == (f"cockpit: {tmp_path}: expected result.json (a run), ensemble.json (an ensemble) or "
                      "evaluation.json (a database scored by `hlm-train evaluate`), found none")
    assert err[2] == f"cockpit: {unscored}: no `eval` (the run was not scored: train.eval = false)"
    assert captured.out.startswith(f"{members[1] / RESULT_FILE}\nModel quality: ")  # the good one still printed

    # an ensemble whose member has moved: the ensemble is printed, the member's line says what is missing
    code, summary = _ensemble(tmp_path / "ens", *members)
    moved = tmp_path / "moved"
    summary["members"][1]["run_dir"] = str(moved)
    (tmp_path / "ens" / ENSEMBLE_FILE).write_text(json.dumps(summary))
    assert code == 0 and cockpit(["scores", str(tmp_path / "ens")]) == 0
    assert f"    seed 1   {moved / RESULT_FILE}: missing" in capsys.readouterr().out.splitlines()
