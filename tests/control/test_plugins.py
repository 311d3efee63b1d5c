"""A workload kind and a place to run jobs added by plug-ins (tests/plugins: one package each, one register() call,
named in COCKPIT_PLUGINS) are planned, rendered and run through the same study file, runner and report as the
built-in ones, with no edit to the cockpit; an unknown plug-in or kind is one line naming it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.plugins import ENV
from tests.studies import to_toml

REPO = Path(__file__).resolve().parents[2]
PLUGINS = "tests.plugins.echo_workload,tests.plugins.fake_queue"


@pytest.fixture(autouse=True)
def registries_restored():
    """Each test's plug-ins registered anew and gone after it: the kinds and workloads the rest of the session
    sees (the generated key page, the backend registry) are the built-in ones whatever ran before."""
    import sys

    from cockpit import plugins
    from cockpit.launch.registry import BACKENDS
    from cockpit.study.cluster_kinds import KINDS
    from cockpit.workloads import WORKLOADS

    saved = [(registry, dict(registry)) for registry in (WORKLOADS, KINDS, BACKENDS)]
    loaded = set(plugins._loaded)
    yield
    for registry, before in saved:
        registry.clear()
        registry.update(before)
    plugins._loaded.clear()
    plugins._loaded.update(loaded)
    for module in PLUGINS.split(","):
        sys.modules.pop(module, None)


def study(tmp_path: Path) -> Path:
    raw = {"study": {"name": "plugged"},
           "cluster": {"kind": "fakequeue", "workdir": str(tmp_path / "work"), "gpus_per_node": 1, "slots": 1},
           "train": {"device": "cpu"},
           "workload": {"kind": "echo", "steps": 4},
           "sweep": {"batch_size": [4, 8]}}
    path = tmp_path / "study.toml"
    path.write_text(to_toml(raw))
    return path


def test_a_plugged_workload_and_backend_plan_render_and_run(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv(ENV, PLUGINS)
    path = study(tmp_path)
    assert cli(["plan", "--render", str(tmp_path / "scripts"), str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 configurations (2 batch_size) in 2 baseline groups" in out and "2 jobs to submit" in out
    scripts = sorted((tmp_path / "scripts").glob("*.sh"))
    assert len(scripts) == 2 and all("tiny_loop.py --batch" in s.read_text() for s in scripts)

    assert cli(["run", "--headless", str(path), "--out", str(tmp_path / "report"), "--timeout", "300"]) == 0
    out = capsys.readouterr().out
    assert "plugged: all 2 configurations completed" in out
    from tests.plugins.fake_queue import QUEUE_LOG

    queued = [cid for event, cid in QUEUE_LOG if event == "queued"]
    started = [cid for event, cid in QUEUE_LOG if event == "started" and cid in queued]
    assert started == queued and len(queued) == 2  # first in, first out, one at a time
    rows = list(csv.DictReader((tmp_path / "report" / "scaling.csv").open()))
    assert sorted(r["batch_size"] for r in rows) == ["4", "8"] and {r["workload"] for r in rows} == {"echo"}
    assert all(r["status"] == "completed" and float(r["train_time_s"]) > 0 for r in rows)
    for run in (tmp_path / "work" / "plugged" / "runs").iterdir():
        config = json.loads((run / "config.json").read_text())
        assert config["keys"] == {"steps": 4} and "model" not in config
        assert json.loads((run / "result.json").read_text())["timing"]["steps"] == 4


def test_the_plugins_are_one_package_each_and_the_cockpit_names_neither():
    for name in ("echo_workload", "fake_queue"):
        assert sorted(p.name for p in (REPO / "tests" / "plugins" / name).iterdir() if p.suffix == ".py") == ["__init__.py"]
    named = [str(p) for p in (REPO / "cockpit").rglob("*.py")
             if any(w in p.read_text(encoding="utf-8") for w in ("fakequeue", "echo_workload", "fake_queue"))]
    assert named == []


def test_an_unknown_plugin_or_kind_is_one_line(tmp_path: Path, capsys, monkeypatch):
    path = study(tmp_path)
    monkeypatch.setenv(ENV, "tests.plugins.no_such_plugin")
    with pytest.raises(ImportError, match=f"plug-in 'tests.plugins.no_such_plugin' named by {ENV}: cannot be imported"):
        cli(["plan", str(path)])
    monkeypatch.setenv(ENV, "tests.plugins.echo_workload")  # the workload known, the place to run jobs not
    path.write_text(path.read_text().replace('kind = "fakequeue"', 'kind = "pbs"'))
    assert cli(["plan", str(path)]) == 2
    assert "study.toml: [cluster].kind: expected one of local, slurm" in capsys.readouterr().err


def test_a_backend_declares_its_own_cluster_keys_and_another_kind_refuses_them(tmp_path: Path, capsys, monkeypatch):
    """`slots` is the plug-in's [cluster] key: judged by its rule under its kind, refused under another, naming the
    kind that takes it; Slurm's own keys likewise under kind = "local"."""
    monkeypatch.setenv(ENV, PLUGINS)
    path = study(tmp_path)
    text = path.read_text()
    path.write_text(text.replace("slots = 1", "slots = 0"))
    assert cli(["plan", str(path)]) == 2
    assert "[cluster].slots: expected an integer >= 1, got 0" in capsys.readouterr().err
    path.write_text(text.replace('kind = "fakequeue"', 'kind = "local"'))
    assert cli(["plan", str(path)]) == 2
    assert ('[cluster].slots is a key of kind = "fakequeue"; kind = "local" does not take it (it takes only the keys '
            "every kind takes)") in capsys.readouterr().err
    path.write_text(text.replace("slots = 1", 'account = "p200000"'))
    assert cli(["plan", str(path)]) == 2
    assert ('[cluster].account is a key of kind = "slurm"; kind = "fakequeue" does not take it (its own keys are '
            "slots)") in capsys.readouterr().err
