"""Shared test set-up: real-service fixtures (Slurm, sshd) and paths to the real PhysioNet data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PHYSIONET = REPO.parent / "shared" / "data" / "physionet"

pytest_plugins = [
    f"tests.infra.{name}"
    for name in ("slurm_fixtures", "sshd_fixtures")
    if (REPO / "tests" / "infra" / f"{name}.py").exists()
]


@pytest.fixture(scope="session")
def physionet() -> Path:
    """The real PhysioNet databases beside the repository (../shared/data/physionet)."""
    if not (PHYSIONET / "mitdb" / "100.hea").exists():
        pytest.fail(f"real PhysioNet data not found at {PHYSIONET}; the tests need ../shared beside the repository")
    return PHYSIONET


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Two pytest-xdist workers (`-n 2 --dist loadgroup`, pyproject's addopts): everything that uses the one
    test Slurm or the sshd in front of it runs on one worker, in order, as the cluster has two small nodes;
    every other module runs whole on one worker, so its module-scoped trainings run once."""
    for item in items:
        cluster = item.get_closest_marker("slurm") or item.get_closest_marker("sshd")
        item.add_marker(pytest.mark.xdist_group("test-cluster" if cluster else item.nodeid.split("::")[0]))
