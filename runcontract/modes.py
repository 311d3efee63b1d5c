"""Who may read what a run writes: private to its owner (directories 0700, files 0600) unless a project's Unix group
shares it (2750 / 0640). A login node and a shared file system serve hundreds of accounts and ECG recordings are
patient data, so every directory and file a run, a launcher or the cockpit creates follows this policy, whatever
the umask. Standard library only.
"""

from __future__ import annotations

import grp
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from runcontract.contract import ContractError
from runcontract.disk_space import as_disk_full


@dataclass(frozen=True)
class Sharing:
    """Who may read what this process creates: its owner alone (group None) or also a Unix group."""

    group: str | None = None

    @property
    def dir_mode(self) -> int:
        return 0o2750 if self.group else 0o700  # setgid: what is created inside keeps the group

    @property
    def file_mode(self) -> int:
        return 0o640 if self.group else 0o600

    @property
    def umask(self) -> int:
        """The launchers' umask (the batch script's, the local executor's for its workers), for what libraries
        create on their own."""
        return 0o027 if self.group else 0o077

    @property
    def gid(self) -> int | None:
        if self.group is None:
            return None
        try:
            return grp.getgrnam(self.group).gr_gid
        except KeyError:
            raise ContractError(f"share_group {self.group!r}: no such Unix group on {os.uname().nodename}") from None


_sharing = Sharing()


def is_group_name(v: Any) -> bool:
    """A Unix group name as sites make them (it reaches chgrp in the batch script): letters, digits, '_', '-',
    '.', not starting with '-', at most 32 characters."""
    return isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}", v) is not None


def share_with(group: str | None) -> Sharing:
    """Set this process's policy for everything it creates from now on: private (None) or shared with
    ``group``. The trainer's commands call it with their config.json's share_group; returns the policy.
    (The umask is the launcher's to set: the process may be a library's host, such as a test run.)"""
    global _sharing
    _sharing = Sharing(group or None)
    _sharing.gid  # noqa: B018 - an unknown group is refused here, not at the first file
    return _sharing


def sharing() -> Sharing:
    return _sharing


def make_dirs(path: str | os.PathLike[str], policy: Sharing | None = None) -> Path:
    """`mkdir -p` whose every created directory gets the policy's mode and group (existing ones are left as
    they are: a site's project directory is not ours to change). ``policy``: a study's own (the local
    executor's runs) instead of the process's."""
    policy = policy or _sharing
    path = Path(path)
    missing = []
    for p in (path, *path.parents):
        if p.is_dir():
            break
        missing.append(p)
    for p in reversed(missing):
        try:
            p.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another rank or process: theirs has the same policy
            continue
        _apply(p, policy.dir_mode, policy)
    return path


def writable_dir(path: str | os.PathLike[str], what: str, policy: Sharing | None = None) -> Path:
    """`make_dirs` for a directory a user named (``what``: the flag or key, `--run-dir`): a path that cannot be
    a writable directory is refused with one line naming it and why, not an OSError from deep inside a run
    (a full disk raises DiskFull)."""
    path = Path(path)
    try:
        made = make_dirs(path, policy)
    except OSError as exc:
        full = as_disk_full(exc)
        if full is not None:  # a full work directory is its own exit code (EXIT_DISK_FULL), not a bad path
            raise full from exc
        where = Path(exc.filename) if exc.filename else path
        why = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError) and where.parent.is_dir():  # /proc/x: the parent takes no new folder
            why = f"{why}: {where.parent} does not take new directories"
        raise ContractError(f"{what} {path}: cannot create {where} ({why}); choose a directory you can write") from None
    if not made.is_dir():
        raise ContractError(f"{what} {path}: a file, not a directory; choose a directory you can write")
    if not os.access(made, os.W_OK | os.X_OK):
        raise ContractError(f"{what} {path}: not writable by you; choose a directory you can write")
    return made


def protect(path: str | os.PathLike[str]) -> Path:
    """Give a file this process has just written the policy's mode and group (a library chose its own)."""
    _apply(Path(path), _sharing.file_mode, _sharing)
    return Path(path)


def open_new(path: str | os.PathLike[str], mode: str = "w", policy: Sharing | None = None) -> IO[Any]:
    """open() for writing ("w", "wb", "a", "ab", "x"...) that creates the file with the policy's mode and group,
    never readable by others in between."""
    policy = policy or _sharing
    flags = os.O_WRONLY | os.O_CREAT | {"w": os.O_TRUNC, "a": os.O_APPEND, "x": os.O_EXCL}[mode[0]]
    fd = os.open(path, flags, policy.file_mode)
    try:
        apply_fd(fd, policy.file_mode, policy)
        return os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8")
    except BaseException:
        os.close(fd)
        raise


def _apply(path: Path, mode: int, policy: Sharing) -> None:
    gid = policy.gid
    if gid is not None:
        os.chown(path, -1, gid)  # before the mode: chown clears a directory's setgid bit on some systems
    os.chmod(path, mode)


def apply_fd(fd: int, mode: int, policy: Sharing | None = None) -> None:
    """Give an open file the mode and the policy's group (the process's policy by default)."""
    policy = policy or _sharing
    gid = policy.gid
    if gid is not None:
        os.fchown(fd, -1, gid)
    os.fchmod(fd, mode)



def file_mode_in(directory: str | os.PathLike[str]) -> int:
    """The mode of a file this process creates in ``directory``: the policy's where it names a group, else 0640
    in a setgid (group-shared) directory a launcher made for a project, else 0600."""
    if _sharing.group:
        return _sharing.file_mode
    try:
        shared = bool(os.stat(directory).st_mode & stat.S_ISGID)
    except OSError:
        shared = False
    return 0o640 if shared else 0o600
