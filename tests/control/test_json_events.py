"""`cockpit run --headless --json`: every stdout line is one JSON object of a documented event; the
finished figures are the analysis row's, and their printed terms add up to the printed O. On this machine
and on the real test Slurm over SSH."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cockpit.commands.json_events import EVENTS_VERSION, JsonProgress
from cockpit.commands.progress import PlainProgress
from cockpit.run.runner import TickReport
from cockpit.store import StudyStore
from tests.studies import REPO, write_study

EVENTS = {"message", "connection", "preflight", "submitted", "refused", "waiting", "state", "progress", "finished", "failed",
          "study_end"}


def _run_json(study: Path, *extra: str) -> tuple[int, list[dict], str]:
    # a Slurm study's store lives in the XDG data directory: one of its own, so a second run starts afresh
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(study.parent / "xdg")}
    res = subprocess.run([sys.executable, "-m", "cockpit", "run", "--headless", "--json", str(study), *extra],
                         capture_output=True, text=True, timeout=600, cwd=study.parent, env=env)
    events = [json.loads(line) for line in res.stdout.splitlines()]  # every line parses, or this fails
    return res.returncode, events, res.stderr


def _check(events: list[dict], name: str) -> None:
    assert events and all(e["v"] == EVENTS_VERSION and e["event"] in EVENTS and e["study"] == name for e in events)
    (pre,) = [e for e in events if e["event"] == "preflight"]
    assert pre["passed"] and pre["jobs"][0]["checks"]
    end = events[-1]
    assert end["event"] == "study_end" and end["failed"] == 0 and end["report"]["csv"].endswith("scaling.csv")
    finished = {e["config_id"]: e for e in events if e["event"] == "finished"}
    assert set(finished) == {e["config_id"] for e in events if e["event"] == "submitted"}
    for e in finished.values():
        assert e["T_s"] > 0
        if not e["baseline"]:
            assert e["S"] == pytest.approx(e["T1_s"] / e["T_same_work_s"])
            assert e["E"] == pytest.approx(e["S"] / e["workers"])
            assert round(sum(e["terms_s"].values()), 2) == e["O_s"]
            # every loss has its advice: a 2-worker run loses at least its all-reduce, unless it came out faster
            # than its baseline's per-sample time on a loaded machine (no loss, nothing to advise)
            assert e["advice"] or e["O_s"] <= 0, e
            for item in e["advice"]:
                assert item["T_s"] == pytest.approx(e["T_s"]) and item["E"] == pytest.approx(e["E"])
                assert item["term"] in e["terms_s"] and f"{item['loss_s']:.2f} s" in item["text"]
                if item["predicted_T_s"] is not None:
                    assert f"→ {item['predicted_T_s']:.2f} s" in item["text"] and item["set"]
                else:
                    assert item["reason"] and item["reason"] in item["text"]


def test_json_lines_of_a_local_study(tmp_path: Path):
    study = write_study(tmp_path / "json.toml", "json-local", tmp_path / "work", cluster={"gpus_per_node": 2},
                        train={"steps": 6})
    code, events, err = _run_json(study)
    assert code == 0, err
    _check(events, "json-local")
    assert {e["event"] for e in events} >= {"message", "preflight", "submitted", "finished", "study_end"}


@pytest.mark.slurm
@pytest.mark.sshd
def test_json_lines_on_the_real_slurm(make_study):
    study = make_study("json-slurm", "gpus_per_node = [1]")
    code, events, err = _run_json(study, "--timeout", "400")
    assert code == 0, err
    _check(events, "json-slurm")
    states = [e["state"] for e in events if e["event"] == "state"]
    assert "pending" in states or "running" in states


def test_a_wait_at_a_site_limit_is_said_once_as_a_line_and_as_an_event(tmp_path: Path):
    """The headless lines and the JSON events say a wait when it starts, `submitting again` / a `waiting`
    event with limit "" when it ends, and nothing while it lasts (one flag for both; the Slurm tests run it)."""
    store = StudyStore(tmp_path / "cockpit.sqlite")
    store.ensure_study("waits", "abcd")
    session = SimpleNamespace(store=store, study=SimpleNamespace(name="waits"),
                              runner=SimpleNamespace(backend=SimpleNamespace(connection=None)))
    limit = "QOS submit limit (3 of 3 in use)"
    ticks = [TickReport(waiting=limit), TickReport(waiting=limit), TickReport(), TickReport()]
    lines = PlainProgress(session, io.StringIO())  # type: ignore[arg-type]
    assert [lines.events(t) for t in ticks] == [[f"waiting: {limit}"], [], ["submitting again"], []]
    out = io.StringIO()
    events = JsonProgress(session, out)  # type: ignore[arg-type]
    for t in ticks:
        events.tick(t)
    said = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(e["event"], e["limit"]) for e in said] == [("waiting", limit), ("waiting", "")]
    store.close()
