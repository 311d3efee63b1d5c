"""A finished run stands for its configuration only while it ran what the study file now asks
(cockpit/study/changes.py): on the recorded demo store and on a script study the product runs here, an edit of
`[model]`, `[train]` or a script's `command` makes the configurations "changed", named key by key in the plan, the
TUI's snapshot, the report and the JSON events; what cannot change a run changes nothing; `--rerun-changed` runs
them again and keeps the earlier run as history."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

from cockpit.cli import main as cli
from cockpit.run.session import store_path_for
from cockpit.store import StudyStore
from cockpit.store.snapshot_build import with_changes
from cockpit.study.spec import load_study
from tests.studies import to_toml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DEMO = FIXTURES / "demo-store"
SCRIPT = FIXTURES / "workloads" / "tiny_loop.py"
HLM_KEYS = ("model", "tokenizer", "token_cache", "data_path", "synthetic", "dataset", "mode", "window")


def demo_copy(tmp_path: Path, edit: dict[str, str]) -> Path:
    """The recorded demo store and its study file, copied, with lines of the study file replaced."""
    shutil.copytree(DEMO / "local-demo", tmp_path / "local-demo")
    text = (DEMO / "study.toml").read_text(encoding="utf-8")
    for old, new in edit.items():
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "study.toml").write_text(text, encoding="utf-8")
    return tmp_path / "study.toml"


def words(out: str) -> str:
    return " ".join(out.split())


def test_editing_the_model_and_steps_shows_the_demo_runs_as_changed_naming_the_keys(tmp_path: Path, capsys):
    study_path = demo_copy(tmp_path, {"layers = 2": "layers = 3", "steps = 40 ": "steps = 80 "})
    assert cli(["plan", str(study_path)]) == 0
    out = words(capsys.readouterr().out)
    assert "0 jobs to submit; 4 changed since they ran (cockpit run --rerun-changed runs them again)" in out
    assert "changed since they ran: model.layers 2 -> 3, train.steps 40 -> 80" in out
    assert " done" not in out.split("statuses from", 1)[0].split("status", 1)[1]  # no row reads done

    # the TUI's snapshot: no row done, each verdict names the keys
    store = StudyStore(store_path_for(load_study(study_path)), read_only=True)
    try:
        snap = with_changes(store.snapshot("local-demo"), load_study(study_path))
    finally:
        store.close()
    assert {row.state for row in snap.configs} == {"changed"} and snap.counts.done == 0
    assert all(row.verdict == "changed: model.layers 2 -> 3, train.steps 40 -> 80" for row in snap.configs)

    # the report leaves the four runs out, each with its line
    assert cli(["report", str(study_path), "--out", str(tmp_path / "report")]) == 0
    out = capsys.readouterr().out
    assert out.count("changed since it ran: model.layers 2 -> 3, train.steps 40 -> 80; left out") == 4
    assert list(csv.DictReader((tmp_path / "report" / "scaling.csv").open())) == []


def test_what_cannot_change_a_run_leaves_the_demo_done(tmp_path: Path, capsys):
    study_path = demo_copy(tmp_path, {
        'description = "HLM scaling': 'description = "another description of',
        "max_concurrent_jobs = 1": "max_concurrent_jobs = 2\nnode_hour_budget = 10",
    })
    assert cli(["plan", str(study_path)]) == 0
    out = words(capsys.readouterr().out)
    assert "0 jobs to submit; 4 done" in out and "changed" not in out


def script_study(tmp_path: Path, extra: list[str]) -> Path:
    shutil.copy(SCRIPT, tmp_path / "tiny_loop.py")
    raw = {
        "study": {"name": "changed-script"},
        "cluster": {"kind": "local", "workdir": str(tmp_path / "work"), "gpus_per_node": 1},
        "train": {"device": "cpu"},
        "workload": {"kind": "script", "mode": "explicit",
                     "command": ["tiny_loop.py", "--batch", "{batch_size}", "--steps", "10", *extra]},
        "sweep": {"batch_size": [8]},
    }
    path = tmp_path / "study.toml"
    path.write_text(to_toml(raw))
    return path


def test_a_script_given_one_more_argument_is_changed_and_runs_again_only_when_asked(tmp_path: Path, capsys):
    path = script_study(tmp_path, [])
    # no preflight: another torch start per changed file, and the preflight has tests of its own
    assert cli(["run", "--headless", "--skip-preflight", str(path), "--out", str(tmp_path / "r1"),
                "--timeout", "300"]) == 0
    capsys.readouterr()
    study_dir = tmp_path / "work" / "changed-script"
    (run,) = (study_dir / "runs").iterdir()
    # a script's run carries nothing of the HLM trainer
    config = json.loads((run / "config.json").read_text())
    assert not set(HLM_KEYS) & set(config), config
    assert set(config["train"]) <= {"device", "metrics_interval_s", "nvml_interval_ms"}
    assert config["workload"]["digests"] == {str(tmp_path / "tiny_loop.py"): config["workload"]["digests"][
        str(tmp_path / "tiny_loop.py")]} and len(next(iter(config["workload"]["digests"].values()))) == 64
    assert json.loads((run / "result.json").read_text())["kind"] == "script-run-result"
    assert not (study_dir / "tokens").exists()
    (row,) = csv.DictReader((tmp_path / "r1" / "scaling.csv").open())
    assert row["status"] == "completed" and (row["dataset"], row["mode"], row["window"]) == ("", "", "")

    path = script_study(tmp_path, ["--lr", "0.05"])
    assert cli(["plan", str(path)]) == 0
    out = words(capsys.readouterr().out)
    assert "0 jobs to submit; 1 changed since they ran" in out
    assert ('changed since it ran: workload.command ["tiny_loop.py", "--batch", "{batch_size}", "--steps", "10"] -> '
            '["tiny_loop.py", "--batch", "{batch_size}", "--steps", "10", "--lr", "0.05"]') in out

    # without the flag nothing runs; with it the run is made again and the earlier one kept
    assert cli(["run", "--headless", "--json", "--skip-preflight", str(path), "--out", str(tmp_path / "r2"),
                "--timeout", "300"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    changed = [e for e in events if e["event"] == "changed"]
    assert len(changed) == 1 and changed[0]["rerun"] is False
    assert changed[0]["keys"][0]["key"] == "workload.command" and changed[0]["keys"][0]["asked"][-2:] == ["--lr", "0.05"]
    assert not any(e["event"] == "submitted" for e in events)
    assert not (study_dir / "history").exists()

    assert cli(["run", "--headless", "--rerun-changed", "--skip-preflight", str(path),
                "--out", str(tmp_path / "r3"), "--timeout", "300"]) == 0
    capsys.readouterr()
    (kept,) = (study_dir / "history").iterdir()
    assert kept.name.startswith(run.name + "-") and (kept / "result.json").exists()
    assert "--lr" not in json.loads((kept / "config.json").read_text())["workload"]["command"]
    assert json.loads((run / "config.json").read_text())["workload"]["command"][-2:] == ["--lr", "0.05"]
    with sqlite3.connect(study_dir / "cockpit.sqlite") as db:
        assert db.execute("SELECT config_id, run_dir FROM result_history").fetchall() == [(run.name, str(kept))]
    assert cli(["plan", str(path)]) == 0
    out = words(capsys.readouterr().out)
    assert "0 jobs to submit; 1 done" in out
    # 10 steps of a tiny loop: T is a few ms of seconds of start-up, and the plan says what was measured
    assert "1 of 1 finished runs measured start-up more than training (T under 10% of the wall time; 1x1 c1 fp32 b8: " \
           "T is 0.0" in out and "; run more steps)" in out
