"""Who may read a study's files on a shared machine: a whole study over the real sshd on the real Slurm, then
another account of the same machine tries to list the run directory and read a token shard, a log, the
metrics and the cockpit's store. Private by default; with [cluster].share_group the project's group may.
"""

from __future__ import annotations

import stat
import uuid
from pathlib import Path

import pytest

from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.run.runner import StudyRunner
from cockpit.store import StudyStore
from cockpit.study.spec import load_study

pytestmark = [pytest.mark.slurm, pytest.mark.sshd]
FAST = AdaptiveInterval(fast_s=0.3, running_s=0.6, slow_s=1.0)


async def _run_one(make_study, name: str, store_path: Path, **cluster):
    study = load_study(make_study(name, "window = [32]", steps=4, **cluster))
    store = StudyStore(store_path)
    runner = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.3), store, interval=FAST)
    try:
        await runner.run(timeout_s=240)
    finally:
        await runner.close()
    snap = store.snapshot(name)
    assert [c.state for c in snap.configs] == ["completed"], snap.problems
    return study, store


def _tree(*roots: Path) -> tuple[list[Path], list[Path]]:
    dirs, files = [], []
    for root in roots:
        dirs.append(root)
        for p in root.rglob("*"):
            (dirs if p.is_dir() else files).append(p)
    return dirs, files


def _read(path: Path, count: bool = False) -> list[str]:
    """The shell line that reads a whole file (binary ones too), printing its byte count when asked."""
    return ["sh", "-c", 'wc -c < "$1"' if count else 'cat -- "$1" > /dev/null', "sh", str(path)]


def _evidence(study, workdir: Path, store_path: Path) -> dict[str, Path]:
    """One of each kind of file the brief names: a token shard, a log, the metrics, the store and its WAL."""
    run_dir = Path(study.run_dir(study.runnable()[0]))
    shard = next((workdir / "tokens").rglob("records/*.tokens.npy"))
    log = next(run_dir.glob("slurm-*.out"))
    return {"run_dir": run_dir, "shard": shard, "log": log, "train_log": run_dir / "train.log",
            "metrics": run_dir / "metrics.jsonl", "store": store_path,
            "wal": store_path.with_name(store_path.name + "-wal")}


async def test_another_account_reads_nothing_of_a_private_study(make_study, slurm_cluster, remote_workdir):
    name = f"priv-{uuid.uuid4().hex[:6]}"
    store_path = remote_workdir / "laptop" / "cockpit.sqlite"  # where the peer could reach it but for its mode
    study, store = await _run_one(make_study, name, store_path)
    try:
        files = _evidence(study, remote_workdir, store_path)
        dirs, made = _tree(Path(study.study_dir()), remote_workdir / "tokens", store_path.parent)
        # every directory 0700 and every file 0600, whatever umask root and the test user had
        wrong = [(str(p), oct(p.stat().st_mode)) for p in [*dirs, *made]
                 if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]
        assert not wrong, wrong
        # and another account of the machine, refused by the kernel
        listed = slurm_cluster.as_peer(["ls", str(files["run_dir"])])
        assert listed.returncode != 0 and "Permission denied" in listed.stderr
        for key in ("shard", "log", "train_log", "metrics", "store", "wal"):
            read = slurm_cluster.as_peer(_read(files[key]))
            assert read.returncode != 0 and "Permission denied" in read.stderr, key
    finally:
        store.close()


async def test_a_shared_group_reads_the_study_and_no_one_else(make_study, slurm_cluster, remote_workdir):
    name = f"shared-{uuid.uuid4().hex[:6]}"
    store_path = remote_workdir / "laptop" / "cockpit.sqlite"
    study, store = await _run_one(make_study, name, store_path, share_group=slurm_cluster.group)
    try:
        files = _evidence(study, remote_workdir, store_path)
        dirs, made = _tree(Path(study.study_dir()), remote_workdir / "tokens")
        wrong = [(str(p), p.group(), oct(p.stat().st_mode)) for p in [*dirs, *made]
                 if p.group() != slurm_cluster.group
                 or stat.S_IMODE(p.stat().st_mode) != (0o2750 if p.is_dir() else 0o640)]
        assert not wrong, wrong  # every directory 2750 and every file 0640, in the project's group
        # the peer, a member of the project's group, lists and reads every kind of file ...
        listed = slurm_cluster.as_peer(["ls", str(files["run_dir"])])
        assert listed.returncode == 0 and "metrics.jsonl" in listed.stdout.split()
        for key in ("shard", "log", "train_log", "metrics"):
            read = slurm_cluster.as_peer(_read(files[key], count=True))
            assert read.returncode == 0 and int(read.stdout) > 0, (key, read.stderr)
        # ... but not the cockpit's own store, which is never shared
        read = slurm_cluster.as_peer(_read(files["store"]))
        assert read.returncode != 0 and "Permission denied" in read.stderr
    finally:
        store.close()
