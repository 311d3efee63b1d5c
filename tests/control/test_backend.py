"""The Backend base class declares every capability the runner and the TUI use; job actions are asked for
with supports(), never probed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cockpit.launch.backend import JOB_ACTIONS, Backend, UnsupportedAction
from cockpit.launch.local import LocalExecutor
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.launch.ssh import SshConnection, SshTarget
from cockpit.run.session import backend_for, open_session
from cockpit.study.spec import load_study
from cockpit.tui.live import LiveController
from tests.studies import write_study

REPO = Path(__file__).resolve().parents[2]
USERS = [*sorted((REPO / "cockpit" / "run").glob("*.py")), REPO / "cockpit" / "tui" / "live.py"]  # runner, session


def _study(tmp_path: Path, **cluster):
    return load_study(write_study(tmp_path / "b.toml", "b", tmp_path / "work", cluster={"gpus_per_node": 2, **cluster}))


def test_everything_the_runner_and_the_tui_call_on_a_backend_is_declared():
    used = set()
    for path in USERS:
        text = path.read_text()
        assert not re.search(r"getattr\([^)]*backend", text), f"{path.name} probes the backend with getattr"
        used |= set(re.findall(r"\bbackend\.(\w+)", text))
    assert used, "found no backend calls to check"
    missing = sorted(name for name in used if not hasattr(Backend, name) and name not in Backend.__annotations__)
    assert missing == []


async def test_local_executor_cancels_only_and_says_so(tmp_path: Path):
    study = _study(tmp_path)
    ex = backend_for(study)
    assert isinstance(ex, LocalExecutor) and isinstance(ex, Backend)
    assert [a for a in JOB_ACTIONS if ex.supports(a)] == ["cancel"]
    assert ex.connection is None and await ex.list_run_dirs() is None
    assert ex.log_files("local-1-1") == ["stdout.log", "stderr.log"]
    cfg = study.matrix()[0]
    assert await ex.run_dir(cfg) == study.run_dir(cfg)
    with pytest.raises(UnsupportedAction, match="cannot requeue jobs"):
        await ex.job_action("requeue", "local-1-1")
    with pytest.raises(ValueError, match="unknown job action 'reboot'"):
        ex.supports("reboot")
    session = open_session(study)
    assert await LiveController(session).job_action("hold", "local-1-1") == f"{ex.label} cannot hold jobs"
    await ex.close()
    session.store.close()


def test_slurm_backend_offers_every_job_action(tmp_path: Path):
    study = _study(tmp_path, kind="slurm", host="127.0.0.1", account="a", qos="q", cores_per_node=2)
    backend = SlurmBackend(study, SshConnection(SshTarget(host="127.0.0.1")))
    assert all(backend.supports(a) for a in JOB_ACTIONS)
    assert backend.log_files("12") == ["slurm-12.out", "slurm-12.err"]
    backend.problems.append("x")  # type: ignore[arg-type]
    assert backend.take_problems() == ["x"] and backend.take_problems() == []
