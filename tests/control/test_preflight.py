"""`cockpit preflight` end to end over the real sshd on the real test Slurm: a 1- and a 2-node CPU study
pass and print the measured all-reduce bandwidth; a wrong data path, an unwritable work directory and a
Python without torch each fail in one line naming the job, the check and the fix; `cockpit run` submits
nothing of a study whose preflight failed."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.cli import main as cockpit
from cockpit.preflight.jobs import study_digest
from cockpit.store import StudyStore, preflights
from cockpit.study.spec import load_study

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]


@pytest.fixture(autouse=True)
def own_store_dir(tmp_path, monkeypatch):
    """A Slurm study's store lives in the XDG data directory: one per test, so reruns start afresh."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def _preflight(capsys, study: Path) -> tuple[int, str]:
    code = cockpit(["preflight", str(study), "--timeout", "240"])
    out = capsys.readouterr()
    return code, out.out + out.err


def _failures(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("FAILED preflight")]


def test_one_and_two_node_cpu_study_passes_with_measured_bandwidth(make_study, slurm_cluster, capsys):
    if not slurm_cluster.multi_partition:
        pytest.skip("the test Slurm has one node")
    study = make_study("pf-ok", "nodes = [1, 2]\ngpus_per_node = [2]\ncpus_per_task = [1]",
                       partition=slurm_cluster.multi_partition)
    code, text = _preflight(capsys, study)
    assert code == 0, text
    assert "preflight 1 node x 2 (job" in text and "preflight 2 nodes x 2 (job" in text
    intra = re.search(r"all-reduce intra-node\s+pass\s+gloo 2 ranks: bus bandwidth ([0-9.]+) GB/s", text)
    inter = re.search(r"all-reduce inter-node\s+pass\s+gloo 4 ranks: bus bandwidth ([0-9.]+) GB/s", text)
    assert intra and inter, text
    assert float(intra.group(1)) > 0 and float(inter.group(1)) > 0
    assert re.search(r"workers\s+pass\s+4 ranks on 2 node\(s\)", text), text
    # the test Slurm's nodes are daemons on this one machine: the preflight says so, and the plan prices it
    host = socket.gethostname()
    assert re.search(rf"4 ranks on 2 node\(s\) \([^)]*\), all on one host \({re.escape(host)}\): their ranks share "
                     r"its cores", text), text
    assert not re.search(r"2 ranks on 1 node\(s\) \([^)]*\), all on one host", text), text
    assert re.search(r"queue wait\s+pass\s+\d+ s \(job \d+", text), text
    assert re.search(r"data mitdb\s+pass\s+1 records; 101: 360 Hz", text), text
    assert not _failures(text)
    loaded = load_study(study)
    from cockpit.run.session import store_path_for

    store = StudyStore(store_path_for(loaded), read_only=True)
    try:
        kept = preflights.latest(store, loaded.name, study_digest(loaded))
        assert kept is not None and kept.passed
        assert kept.links["inter_node"] > 0 and kept.links["intra_node"] > 0
        assert kept.shared_host == host
    finally:
        store.close()


def test_wrong_data_path_fails_in_one_line(make_study, capsys):
    study = make_study("pf-data", "gpus_per_node = [1]")
    text = study.read_text().replace("/mitdb", "/no-such-database", 1)
    study.write_text(text)
    code, out = _preflight(capsys, study)
    assert code == 1, out
    lines = _failures(out)
    assert len(lines) == 1, out
    assert "data mitdb" in lines[0] and "no-such-database: data folder not found" in lines[0]
    assert "fix: fix [data.datasets].mitdb.path" in lines[0] and "log: " in lines[0]


def test_unwritable_workdir_fails_in_one_line(make_study, remote_workdir, capsys):
    locked = remote_workdir / "locked"
    locked.mkdir()
    os.chown(locked, 0, 0)
    locked.chmod(0o755)  # root's: the test user can read it but not create the study's directory in it
    study = make_study("pf-workdir", "gpus_per_node = [1]")
    study.write_text(re.sub(r'(?m)^workdir = ".*"$', f'workdir = "{locked}"', study.read_text()))
    code, out = _preflight(capsys, study)
    assert code == 1, out
    lines = _failures(out)
    assert len(lines) == 1, out
    assert "submit" in lines[0] and "Permission denied" in lines[0]
    assert "set [cluster].workdir to a directory you can write on the cluster" in lines[0]


def test_python_without_torch_fails_in_one_line(make_study, remote_workdir, capsys):
    # The same interpreter started without its site-packages: the project imports (PYTHONPATH), torch not.
    wrapper = remote_workdir / "python-without-packages"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    study = make_study("pf-python", "gpus_per_node = [1]", python=str(wrapper))
    code, out = _preflight(capsys, study)
    assert code == 1, out
    torch_line = [line for line in _failures(out) if " torch:" in line]
    assert len(torch_line) == 1, out
    assert "No module named 'torch'" in torch_line[0] and "[cluster].python" in torch_line[0]


def test_run_submits_nothing_after_a_failed_preflight(make_study, slurm_cluster):
    study = make_study("pf-refused", "gpus_per_node = [1]")
    study.write_text(study.read_text().replace("/mitdb", "/no-such-database", 1))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    res = subprocess.run([sys.executable, "-m", "cockpit", "run", "--headless", str(study), "--timeout", "240"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "FAILED preflight 1 node x 1 data mitdb" in res.stdout
    assert "nothing of the study is submitted until it passes" in res.stdout
    loaded = load_study(study)
    from cockpit.run.session import store_path_for

    store = StudyStore(store_path_for(loaded), read_only=True)
    try:
        assert store.jobs(store.study_key(loaded.name)) == []
        kept = preflights.latest(store, loaded.name, study_digest(loaded))
        assert kept is not None and not kept.passed
    finally:
        store.close()
    queued = slurm_cluster.run(["squeue", "-h", "-o", "%j"]).stdout
    assert f"{loaded.name}-" not in queued
