"""Pytest plugin: `small_fs`, a factory of small size-limited work directories (tests/infra/small_fs.sh: a
tmpfs of the size asked for, owned by the test user who runs the Slurm jobs) that a test fills and frees, for
the behaviour of a full work directory (ENOSPC) in the trainer, the batch script and the cockpit."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SMALL_FS_SH = Path(__file__).resolve().parent / "small_fs.sh"


def _sh(*args: str) -> str:
    done = subprocess.run(["bash", str(SMALL_FS_SH), *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"small_fs.sh {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


@dataclass
class SmallFs:
    """One mounted tmpfs: its path, and the means to fill it up and free it again."""

    path: Path
    size: str

    def fill(self, leave: int = 0) -> None:
        """Write a ballast file (as root) until `leave` bytes are free (a tmpfs rounds to pages)."""
        _sh("fill", str(self.path), str(leave))

    def free(self) -> None:
        """Remove the ballast."""
        _sh("free", str(self.path))

    def avail(self) -> int:
        """Bytes free now."""
        return int(_sh("avail", str(self.path)))


@pytest.fixture
def small_fs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., SmallFs]]:
    """Mount small tmpfs file systems (``small_fs(size, owner=None, under=None)``); unmounted afterwards.
    ``under``: the directory to mount in (default a fresh temporary one; the Slurm tests pass one the test
    user can reach)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("a size-limited work directory needs root (mount -t tmpfs)")
    mounted: list[Path] = []

    def make(size: str, owner: str | None = None, under: Path | None = None) -> SmallFs:
        base = under or tmp_path_factory.mktemp("small-fs")
        path = base / f"fs-{uuid.uuid4().hex[:8]}"
        _sh("mount", str(path), size, owner or "root")
        mounted.append(path)
        return SmallFs(path, size)

    yield make
    for path in mounted:
        subprocess.run(["bash", str(SMALL_FS_SH), "umount", str(path)], capture_output=True, timeout=60)
