"""A full work directory as its own fact: ENOSPC (no space left) and EDQUOT (quota exceeded) told apart from
every other failure, with the path that could not be written and the bytes the write needed.

Pure Python (no torch) so that trainer.rundir and the cockpit can use it. A write that fails for a full disk
raises DiskFull; `hlm-train` turns it into exit code 5 (rundir.EXIT_DISK_FULL) and the cockpit pauses
submitting on it (docs/long-study.md, "A full work directory").
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
ROOM_FILE = ".exit-room"  # kept free for exit.json: released when a write finds the directory full
ROOM_BYTES = 64 * 1024


class DiskFull(OSError):
    """A write found its file system full (or the owner's quota used up)."""

    def __init__(self, path: str | os.PathLike[str], needed_bytes: int, cause: BaseException | None = None) -> None:
        self.path = str(path)
        self.needed_bytes = int(needed_bytes)
        self.free_bytes = free_bytes(Path(path).parent)
        why = os.strerror(cause.errno) if isinstance(cause, OSError) and cause.errno else "no space left"
        super().__init__(errno.ENOSPC, f"work directory full: {self.path} needed {self.needed_bytes} bytes, "
                         f"{self.free_bytes if self.free_bytes is not None else 'unknown'} bytes free ({why})")

    def fields(self) -> dict[str, object]:
        """What exit.json records beside the code: the path, the bytes needed, the bytes free then."""
        return {"path": self.path, "needed_bytes": self.needed_bytes, "free_bytes": self.free_bytes}


def full_cause(exc: BaseException | None) -> OSError | None:
    """The ENOSPC/EDQUOT OSError in an exception's chain (torch.save wraps it in a RuntimeError), else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def as_disk_full(exc: BaseException, path: str | os.PathLike[str] = "", needed_bytes: int = 0) -> DiskFull | None:
    """`exc` as a DiskFull when a full disk caused it (the path from the OSError where it names one)."""
    if isinstance(exc, DiskFull):
        return exc
    cause = full_cause(exc)
    if cause is None:
        return None
    return DiskFull(path or cause.filename or "", needed_bytes, cause)


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """Bytes an unprivileged user may still write on the file system of `path` (None when it cannot be read).
    A quota below that is not seen here: the cockpit's storage probe asks the site's quota tool."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def keep_room(run_dir: str | os.PathLike[str]) -> None:
    """Set ROOM_BYTES aside in the run directory, so exit.json can still be written once the disk is full
    (release_room frees it). Raises DiskFull when even that does not fit."""
    path = Path(run_dir) / ROOM_FILE
    try:
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:  # private
            handle.write(b"\0" * ROOM_BYTES)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        full = as_disk_full(exc, path, ROOM_BYTES)
        if full is None:
            raise
        raise full from exc


def release_room(run_dir: str | os.PathLike[str]) -> None:
    """Free the room keep_room set aside."""
    (Path(run_dir) / ROOM_FILE).unlink(missing_ok=True)
