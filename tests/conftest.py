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
