"""`cockpit plan` is the plan the TUI's dialog shows: the same store (found as `cockpit open` finds it), the
same cores (this machine's for a local study), the same statuses and count; its table keeps every number
whole at 80 columns and when piped."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.forecast.plan import make_plan
from cockpit.run.session import node_cores, open_session, store_path_for
from cockpit.study.spec import load_study
from cockpit.tui.live import LiveController
from cockpit.tui.plan import plan_summary as dialog_summary
from tests.studies import REPO

FIXTURE = REPO / "tests" / "fixtures" / "recorded-store"
MELUXINA = REPO / "examples" / "meluxina.toml"
ID = re.compile(r"\b[0-9a-f]{10}\b")


def recorded_study(tmp_path: Path, with_store: bool = True) -> Path:
    """The recorded fixture's study file with its work directory in tmp_path and, with_store, the
    recorded store where `cockpit open` and `cockpit plan` look for it (6 results, 1 running, 1 pending)."""
    text = (FIXTURE / "study.toml").read_text(encoding="utf-8")
    text = text.replace('kind = "local"\n', f'kind = "local"\nworkdir = "{tmp_path / "work"}"\n', 1)
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    if with_store:
        store = store_path_for(load_study(path))
        store.parent.mkdir(parents=True)
        shutil.copy(FIXTURE / "store.sqlite", store)
    return path


def printed_plan(path: Path, capsys, columns: int = 200) -> tuple[int, dict[str, str], str]:
    """`cockpit plan`'s job count and each configuration's status, read from what it printed."""
    os.environ["COLUMNS"] = str(columns)
    try:
        assert cli(["plan", str(path)]) == 0
    finally:
        del os.environ["COLUMNS"]
    out = capsys.readouterr().out
    count = int(re.search(r"^(\d+) jobs to submit", out, re.M).group(1))
    statuses = {}
    for line in out.splitlines():
        ids = ID.findall(line)
        if ids:
            status = re.search(r"(submit|done|active|failed|too big)( \(baseline\))?\s*$", line)
            statuses[ids[-1]] = status.group(1)
    return count, statuses, out


@pytest.mark.parametrize("with_store", [True, False], ids=["recorded store", "no store yet"])
def test_cockpit_plan_and_the_dialog_give_the_same_plan(tmp_path: Path, capsys, with_store: bool):
    path = recorded_study(tmp_path, with_store)
    session = open_session(load_study(path))  # what `cockpit open study.toml` does (migrates an older store)
    try:
        dialog = LiveController(session).plan()
    finally:
        session.store.close()
    count, statuses, out = printed_plan(path, capsys)
    assert count == len(dialog.to_submit)
    assert f"{count} to submit" in dialog_summary(dialog).plain
    assert statuses == {line.config_id: line.status for line in dialog.lines}
    if with_store:  # the six results are done, the running and the pending job are not submitted again
        assert count == 0 and list(statuses.values()).count("done") == 6
        assert list(statuses.values()).count("active") == 2
        assert f"statuses from the study's store {store_path_for(load_study(path))}" in out
    else:
        assert count == len([s for s in statuses.values() if s == "submit"]) >= 6


def test_a_configuration_done_elsewhere_is_done_not_too_big(tmp_path: Path):
    """A result recorded on a machine with more cores is still a result: done, not "too big" (the dialog
    said too big for w128 1x2 c2 on a 2-core machine although it had finished)."""
    study = load_study(recorded_study(tmp_path, with_store=False))
    big = next(c for c in study.matrix() if c.gpus_per_node * c.cpus_per_task == 4)
    plan = make_plan(study, {big.config_id: "done"}, cores=2)
    assert {line.config_id: line.status for line in plan.lines}[big.config_id] == "done"
    assert make_plan(study, {}, cores=2).count("too big") == 2


def test_node_cores_are_the_local_executors(tmp_path: Path):
    from cockpit.launch.local import LocalExecutor

    study = load_study(recorded_study(tmp_path, with_store=False))
    assert node_cores(study) == LocalExecutor(study).cores_per_node
    assert node_cores(load_study(MELUXINA)) is None  # Slurm: the study's cores_per_node stands


def _piped(path: Path, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-m", "cockpit", "plan", str(path)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("which", ["meluxina", "recorded"])
def test_the_piped_table_keeps_every_number_whole_in_80_columns(tmp_path: Path, which: str):
    path = MELUXINA if which == "meluxina" else recorded_study(tmp_path)
    if which == "recorded":  # the store is read as `cockpit open` left it (migrated to this schema)
        open_session(load_study(path)).store.close()
    out = _piped(path, tmp_path)
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    study = load_study(path)
    rows = {ID.findall(line)[-1]: line for line in out.splitlines() if ID.findall(line)}
    assert set(rows) == {c.config_id for c in study.matrix()}
    for cfg in study.matrix():
        words = rows[cfg.config_id].split()
        assert str(cfg.window) in words or f"w{cfg.window}" in words, (cfg.window, rows[cfg.config_id])
    assert {int(w) for w in re.findall(r"\b(\d+)\b", " ".join(rows.values()))} >= set(study.sweep["window"])


def test_a_local_study_spends_no_node_hours_and_its_time_limit_is_a_ceiling(tmp_path: Path, capsys):
    demo = REPO / "examples" / "local-demo.toml"
    assert cli(["plan", str(demo)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "local: no node-hours (time limit 01:00:00 per run, an upper bound)" in out
    assert "at most 4.0 h of runs at 1 job(s) at once" in out and "node-hours (" not in out.replace("no node-hours (", "")
    dialog = dialog_summary(make_plan(load_study(demo))).plain
    assert "4 to submit, local: no node-hours (time limit 01:00:00 per run, an upper bound)" in dialog
    budgeted = make_plan(load_study(recorded_study(tmp_path)))  # a local study with a budget counts its hours
    assert budgeted.cost_words() == f"estimated {budgeted.estimate:.2f} node-hours (2 min expected per run)"
    assert cli(["plan", str(MELUXINA)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "estimated 144.0 node-hours (30 min expected per run)" in out and "about 18.0 h of runs at 8 job(s)" in out
