"""Fixtures for the data tests: small copies of real PhysioNet records that a test may damage."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def copy_records(src: Path, dst: Path, names: list[str], exts: tuple[str, ...]) -> Path:
    """Copy records (the given file extensions) into dst with a RECORDS file listing them."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in names:
        for ext in exts:
            if (src / f"{name}.{ext}").exists():
                shutil.copy2(src / f"{name}.{ext}", dst / f"{name}.{ext}")
    (dst / "RECORDS").write_text("".join(f"{n}\n" for n in names))
    return dst


@pytest.fixture
def mitdb_copy(physionet: Path, tmp_path: Path) -> Path:
    """Records 100 and 101 of the MIT-BIH Arrhythmia Database, copied so a test may corrupt them."""
    return copy_records(physionet / "mitdb", tmp_path / "mitdb", ["100", "101"], ("hea", "dat", "atr"))


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "tokens"
