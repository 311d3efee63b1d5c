"""Shared test set-up: real-service fixtures (Slurm, sshd) and paths to the real PhysioNet data."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from tests.studies import PHYSIONET, REPO

pytest_plugins = [
    f"tests.infra.{name}"
    for name in ("slurm_fixtures", "sshd_fixtures", "small_fs_fixtures")
    if (REPO / "tests" / "infra" / f"{name}.py").exists()
]


@pytest.fixture(scope="session")
def physionet() -> Path:
    """The real PhysioNet databases beside the repository (../shared/data/physionet)."""
    if not (PHYSIONET / "mitdb" / "100.hea").exists():
        pytest.fail(f"real PhysioNet data not found at {PHYSIONET}; the tests need ../shared beside the repository")
    return PHYSIONET


def cluster_skips(reports: list[pytest.TestReport]) -> int:
    """How many of the skipped tests needed the test Slurm or the sshd (their marks, or their fixtures' skip)."""
    def needs_cluster(r: pytest.TestReport) -> bool:
        reason = str(r.longrepr[2]) if isinstance(r.longrepr, tuple) else str(r.longrepr)
        return "slurm" in r.keywords or "sshd" in r.keywords or "Slurm" in reason or "sshd" in reason

    return sum(1 for r in reports if needs_cluster(r))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Generator[None]:
    """A run without root skips the Slurm and SSH tests: say so at its end, after the list of skips."""
    yield
    skipped = cluster_skips(terminalreporter.stats.get("skipped", []))
    if skipped:
        terminalreporter.write_sep("=", "Slurm and SSH not tested", yellow=True)
        terminalreporter.write_line(
            f"Slurm and SSH tests skipped: {skipped}. They need root: run `bash tests/infra/install.sh && "
            "python3 -m pytest -q` as root, in a throw-away VM or container (README, The two commands)")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Two pytest-xdist workers (`-n 2 --dist loadgroup`, pyproject's addopts): everything that uses the one
    test Slurm or the sshd in front of it runs on one worker, in order, as the cluster has two small nodes;
    every other module runs whole on one worker, so its module-scoped trainings run once."""
    for item in items:
        cluster = item.get_closest_marker("slurm") or item.get_closest_marker("sshd")
        item.add_marker(pytest.mark.xdist_group("test-cluster" if cluster else item.nodeid.split("::")[0]))
