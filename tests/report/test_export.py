"""`cockpit export`: a study in TensorBoard and W&B, read back with the trackers' own readers, carries the
numbers of `cockpit report`'s scaling.csv and the store's curves, and re-exporting duplicates nothing."""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cockpit.cli import main as cli
from cockpit.notebook import TEXT_COLUMNS
from cockpit.report.source import load_input
from cockpit.report.study_data import HEADLINE, HPARAMS, label, load_study_data, run_name
from cockpit.report.trackers import (
    WANDB_HEADER,
    wait_for_offline_log,
    wandb_log_records,
    wandb_record_type,
    wandb_run_id,
)
from cockpit.report.write import write_report
from cockpit.store import StudyStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED = FIXTURES / "recorded-store" / "store.sqlite"
DEMO = FIXTURES / "demo-store" / "study.toml"
SOURCES = {"recorded": RECORDED, "demo": DEMO}

pytest.importorskip("tensorboard")
pytest.importorskip("wandb")


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    """`cockpit report`'s scaling.csv of each fixture, indexed by configuration."""
    out = {}
    for name, path in SOURCES.items():
        files = write_report(load_input(path), tmp_path_factory.mktemp(f"report-{name}"))
        out[name] = pd.read_csv(files.csv, dtype=TEXT_COLUMNS).set_index("config_id")
    return out


# -- TensorBoard, read back with its EventAccumulator ----------------------------------------------------

def accumulator(path: Path) -> Any:
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(str(path), size_guidance={ea.TENSORS: 0, ea.SCALARS: 0})
    acc.Reload()
    return acc


def series(acc: Any, tag: str) -> list[tuple[int, float]]:
    from tensorboard.util import tensor_util

    return [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors(tag)]


@pytest.mark.parametrize("name", SOURCES)
def test_tensorboard_carries_the_report_and_the_curves(name: str, reports, tmp_path: Path, capsys):
    from tensorboard.plugins.hparams import metadata

    fixture = SOURCES[name].parent
    before = digest(fixture)
    out = tmp_path / "tb"
    assert cli(["export", str(SOURCES[name]), "--tensorboard", str(out)]) == 0
    assert "TensorBoard runs" in capsys.readouterr().out
    data = load_study_data(SOURCES[name])
    csv = reports[name]
    root = out / data.name
    runs = sorted(p for p in root.iterdir() if p.is_dir())
    assert [p.name for p in runs] == sorted(run_name(r) for r in data.rows) and len(runs) == len(csv)

    # The HParams experiment: the axes with the values of the matrix, T/S/E/O/Karp-Flatt/quality as metrics.
    experiment = metadata.parse_experiment_plugin_data(
        accumulator(root).PluginTagToContent(metadata.PLUGIN_NAME)[metadata.EXPERIMENT_TAG])
    assert [m.name.tag for m in experiment.metric_infos] == [f"scaling/{m}" for m in HEADLINE]
    domains = {h.name: {v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind")) for v in h.domain_discrete.values}
               for h in experiment.hparam_infos}
    assert domains["window"] == {float(w) for w in csv["window"]}

    for row in data.rows:
        cid = row["config_id"]
        acc = accumulator(root / run_name(row))
        # the session: this configuration's axes
        start = metadata.parse_session_start_info_plugin_data(
            acc.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.SESSION_START_INFO_TAG])
        hp = {k: getattr(v, v.WhichOneof("kind")) for k, v in start.hparams.items()}
        assert hp == {k: (csv.loc[cid, k] if isinstance(csv.loc[cid, k], str) else float(csv.loc[cid, k]))
                      for k in HPARAMS}
        # the figures: scaling.csv's numbers, as TensorBoard keeps a scalar (float32); NaN cells are left out
        for col in ("train_time_s", "t_same_work_s", "t1_s", "work_ratio", "speedup", "efficiency", "overhead_s",
                    "karp_flatt", "quality"):
            want = csv.loc[cid, col]
            got = series(acc, f"scaling/{col}") if f"scaling/{col}" in acc.Tags()["tensors"] else []
            assert [v for _, v in got] == ([] if math.isnan(want) else [float(np.float32(want))]), col
        # the curves: every rank-0 metrics record of the store, at its step
        points = data.metrics(cid, rank=0)
        assert points, cid
        assert series(acc, "train/loss") == [(p.step, float(np.float32(p.loss))) for p in points if p.loss is not None]
        assert [s for s, _ in series(acc, "time/comm_s")] == [p.step for p in points if p.comm_s is not None]
    data.close()
    assert digest(fixture) == before  # read-only: the fixture is byte for byte as it was

    # Re-exporting replaces the event files: one per run, the same points, none twice.
    assert cli(["export", str(SOURCES[name]), "--tensorboard", str(out)]) == 0
    for run in [root, *runs]:
        assert len(list(run.glob("events.out.tfevents.*"))) == 1
    again = accumulator(runs[0])
    assert len(again.Tensors("train/loss")) == len(series(accumulator(runs[0]), "train/loss")) > 0
    assert len(again.Tensors("scaling/train_time_s")) == 1


@pytest.fixture
def store_with_gpus(tmp_path: Path) -> tuple[Path, str, list[dict]]:
    """A copy of the demo store with NVML samples for one configuration (the fixtures ran on CPUs)."""
    store_path = tmp_path / "gpu-store.sqlite"
    shutil.copy(DEMO.parent / "local-demo" / "cockpit.sqlite", store_path)
    store = StudyStore(store_path)
    try:
        key = store.study_key("local-demo")
        cid = store.configs(key)[-1]["config_id"]
        samples = [{"v": 1, "t": 1000.0 + i, "host": "mel2001", "gpu": g, "util_pct": 50.0 + i + g,
                    "mem_used_bytes": 1e9 * (i + 1), "mem_total_bytes": 4e10, "power_w": 300.0, "temp_c": 60.0}
                   for i in range(5) for g in (0, 1)]
        store.add_gpu_samples(key, cid, [{"v": 1, "t": 999.0, "host": "mel2001", "nvml": "unavailable"}, *samples])
    finally:
        store.close()
    return store_path, cid, samples


def test_gpu_samples_become_curves(store_with_gpus, tmp_path: Path):
    store_path, cid, samples = store_with_gpus
    out = tmp_path / "tb"
    assert cli(["export", str(store_path), "--tensorboard", str(out), "--wandb", "--out", str(tmp_path)]) == 0
    data = load_study_data(store_path)
    acc = accumulator(out / "local-demo" / run_name(data.row(cid)))
    for g in (0, 1):
        mine = [s for s in samples if s["gpu"] == g]
        assert series(acc, f"gpu/mel2001/{g}/util_pct") == [(i, s["util_pct"]) for i, s in enumerate(mine)]
        assert [v for _, v in series(acc, f"gpu/mel2001/{g}/mem_used_bytes")] == [
            float(np.float32(s["mem_used_bytes"])) for s in mine]
    history = wandb_log(one_offline_run(tmp_path, wandb_run_id(data.study_id, cid)))["history"]
    gpu_rows = [h for h in history if "gpu/time_s" in h]
    assert [h["gpu/mel2001/0/util_pct"] for h in gpu_rows if "gpu/mel2001/0/util_pct" in h] == [
        s["util_pct"] for s in samples if s["gpu"] == 0]
    assert [h["_timestamp"] for h in history] == sorted(h["_timestamp"] for h in history)
    data.close()


# -- W&B offline, read back from the run's own transaction log (.wandb) --------------------------------

def wandb_records(path: Path) -> Iterator[Any]:
    """The records of a .wandb file, parsed with wandb's own protobuf types; a chunk failing its checksum or
    cut short fails the test (trackers.LogCut)."""
    record = wandb_record_type()
    for raw in wandb_log_records(path.read_bytes()):
        yield record.FromString(raw)


def wandb_log(run_dir: Path) -> dict[str, Any]:
    """run record, config, summary (as `run.summary` ends) and history rows of an offline run."""
    (log,) = run_dir.glob("*.wandb")
    out: dict[str, Any] = {"run": None, "config": {}, "summary": {}, "history": []}
    for rec in wandb_records(log):
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            out["run"] = rec.run
            out["config"].update({c.key: json.loads(c.value_json) for c in rec.run.config.update})
        elif kind == "config":
            out["config"].update({c.key: json.loads(c.value_json) for c in rec.config.update})
        elif kind == "summary":
            for u in rec.summary.update:
                out["summary"][u.key or "/".join(u.nested_key)] = json.loads(u.value_json)
        elif kind == "history":
            out["history"].append({(h.key or "/".join(h.nested_key)): json.loads(h.value_json)
                                   for h in rec.history.item})
    return out


def one_offline_run(out: Path, run_id: str) -> Path:
    (run_dir,) = (out / "wandb").glob(f"offline-run-*-{run_id}")
    return run_dir


@pytest.mark.parametrize("name", SOURCES)
def test_wandb_offline_carries_the_report_and_the_curves(name: str, reports, tmp_path: Path, capsys):
    assert cli(["export", str(SOURCES[name]), "--wandb", "--out", str(tmp_path)]) == 0
    assert "offline" in capsys.readouterr().out
    data = load_study_data(SOURCES[name])
    csv = reports[name]
    assert len(list((tmp_path / "wandb").glob("offline-run-*"))) == len(data.rows) == len(csv)
    first = {}
    for row in data.rows:
        cid = row["config_id"]
        run_id = wandb_run_id(data.study_id, cid)
        run_dir = one_offline_run(tmp_path, run_id)
        first[cid] = run_dir.name
        log = wandb_log(run_dir)
        assert log["run"].run_id == run_id and log["run"].run_group == data.name
        assert log["run"].display_name == label(row)
        assert {k: log["config"][k] for k in HPARAMS} == {k: csv.loc[cid, k].item() if hasattr(csv.loc[cid, k], "item")
                                                          else csv.loc[cid, k] for k in HPARAMS}
        assert log["config"]["config_id"] == cid and log["config"]["study_id"] == data.study_id
        # the summary: scaling.csv's numbers exactly (JSON keeps every digit); NaN cells are left out
        for col in (*HEADLINE, "t_same_work_s", "t1_s", "work_ratio"):
            want = csv.loc[cid, col]
            assert log["summary"].get(col) == (None if math.isnan(want) else want), col
        # the history: one row per rank-0 metrics record of the store, in order, at its step and time
        points = data.metrics(cid, rank=0)
        train = [h for h in log["history"] if "train/step" in h]
        assert [(h["train/step"], h["_timestamp"], h.get("train/loss")) for h in train] == [
            (p.step, p.t, p.loss) for p in points]
    # Re-exporting replaces each offline run: still one directory per configuration, same ids.
    assert cli(["export", str(SOURCES[name]), "--wandb", "--out", str(tmp_path)]) == 0
    for row in data.rows:
        run_dir = one_offline_run(tmp_path, wandb_run_id(data.study_id, row["config_id"]))
        assert len(wandb_log(run_dir)["history"]) == len(data.metrics(row["config_id"], rank=0))
    assert len(list((tmp_path / "wandb").glob("offline-run-*"))) == len(data.rows)
    data.close()


def test_an_offline_run_is_on_disk_when_the_export_returns(tmp_path: Path, monkeypatch):
    """`run.finish()` returns before wandb-core closes the run's stream, and the run's .wandb log is written
    out only then (a small run's: just its header). A loaded machine delays that close; here each close is
    asked for half a second late, and every run's log still ends with its exit record when the export returns."""
    from wandb.sdk.lib.service.service_connection import ServiceConnection

    inform_finish = ServiceConnection.inform_finish
    timers: list[threading.Timer] = []

    def late(self: Any, run_id: str) -> None:
        timers.append(threading.Timer(0.5, inform_finish, (self, run_id)))
        timers[-1].start()

    monkeypatch.setattr(ServiceConnection, "inform_finish", late)
    try:
        assert cli(["export", str(DEMO), "--wandb", "--out", str(tmp_path)]) == 0
        data = load_study_data(DEMO)
        for row in data.rows:
            run_dir = one_offline_run(tmp_path, wandb_run_id(data.study_id, row["config_id"]))
            (log,) = run_dir.glob("*.wandb")
            assert [r.WhichOneof("record_type") for r in wandb_records(log)][-1:] == ["exit"]
            assert len(wandb_log(run_dir)["history"]) == len(data.metrics(row["config_id"], rank=0))
        data.close()
    finally:
        for timer in timers:
            timer.join()
    assert len(timers) == 4


def test_an_unfinished_offline_run_is_named(tmp_path: Path, capsys):
    log = tmp_path / "offline-run-x" / "run-x.wandb"
    log.parent.mkdir()
    log.write_bytes(WANDB_HEADER)  # what wandb-core has written of a small run until it closes the stream
    assert wait_for_offline_log(log.parent, timeout=0.1) is False
    assert capsys.readouterr().err == (f"cockpit: W&B had not finished writing {log} after 0.1 s; it is "
                                       "completed when this process exits, `wandb sync` it after that\n")


# -- without the extra -------------------------------------------------------------------------------------

def test_trackers_are_imported_only_by_the_export():
    code = ("import sys, cockpit, cockpit.cli, cockpit.notebook, cockpit.commands.export, cockpit.report.trackers; "
            "cockpit.cli.build_parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('wandb', 'tensorboard', 'torch')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("flag, package", [("--tensorboard", "tensorboard"), ("--wandb", "wandb")])
def test_a_missing_extra_is_one_line_with_the_pip_command(flag, package, monkeypatch, tmp_path, capsys):
    for module in [m for m in sys.modules if m.split(".")[0] == package] + [package]:
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    args = ["export", str(RECORDED), flag] + ([str(tmp_path / "tb")] if flag == "--tensorboard" else [])
    assert cli([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'hlm-cockpit[tracking]'" in err, err


def test_export_needs_a_tracker(capsys):
    assert cli(["export", str(RECORDED)]) == 2
    assert "--tensorboard DIR and/or --wandb" in capsys.readouterr().err
    assert cli(["export", str(FIXTURES / "nothing.sqlite"), "--wandb"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_documented_run_folders_are_what_the_export_writes(tmp_path: Path, capsys):
    """docs/trackers.md names the demo's folders: the TensorBoard run as the export writes it, the W&B offline
    run as W&B names it from the run id (its date and time aside)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "trackers.md").read_text(encoding="utf-8")
    (tensorboard,) = re.findall(r"`DIR/(local-demo/[^`]+)/`", text)
    (offline,) = re.findall(r"`DIR/wandb/(offline-run-\d{8}_\d{6}-[^`]+)/`", text)
    assert cli(["export", str(DEMO), "--tensorboard", str(tmp_path)]) == 0
    capsys.readouterr()
    assert (tmp_path / tensorboard).is_dir()
    data = load_study_data(DEMO)
    config_id = tensorboard.rpartition("-")[2]
    assert offline.endswith("-" + wandb_run_id(data.study_id, config_id))
    data.close()
