"""The work directory's space as the site's own tools tell it: `df` (the file system's free space), and where
the site profile names one (`storage_tool`), the user's quota from `lfs quota` (Lustre) or `quota`.

One shell command reads both (`probe_command`), one parser turns its output into a Storage (`parse_probe`);
the preflight, the runner's pause on a full work directory and its check for freed space all call these.
Every figure is in bytes.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from cockpit.figures.sizes import size_words

QUOTA_MARK = "--- quota"
TOOLS = ("df", "lfs", "quota", "none")
KIB = 1024


@dataclass(frozen=True)
class Storage:
    """The work directory's file system (df) and, where the site has one, the user's quota on it."""

    path: str  # the directory df was asked about (the work directory, or its nearest existing parent)
    tool: str  # the site profile's storage_tool
    size_bytes: int
    used_bytes: int
    avail_bytes: int
    quota_used_bytes: int | None = None
    quota_limit_bytes: int | None = None  # the hard limit; None: no quota (or none set)

    @property
    def quota_binds(self) -> bool:
        """Whether the quota leaves less than the file system does."""
        return self.quota_limit_bytes is not None and self.quota_left < self.avail_bytes

    @property
    def quota_left(self) -> int:
        if self.quota_limit_bytes is None or self.quota_used_bytes is None:
            return self.avail_bytes
        return max(0, self.quota_limit_bytes - self.quota_used_bytes)

    @property
    def free_bytes(self) -> int:
        """What may still be written: the file system's free space or the quota left, whichever is less."""
        return min(self.avail_bytes, self.quota_left)

    @property
    def used_and_limit(self) -> tuple[int, int]:
        """(used, limit) of whichever binds: the quota's, else the file system's (used + free: what a user
        may fill)."""
        if self.quota_binds and self.quota_used_bytes is not None and self.quota_limit_bytes is not None:
            return self.quota_used_bytes, self.quota_limit_bytes
        return self.used_bytes, self.used_bytes + self.avail_bytes

    def source(self) -> str:
        """Which tool gave the figures that bind, on which path."""
        tool = {"lfs": "lfs quota", "quota": "quota"}.get(self.tool, "df") if self.quota_binds else "df"
        return f"{tool} on {self.path}"

    def words(self) -> str:
        """`1.0 MB / 1.0 MB, 0 B free (df on /scratch/hlm)`: used / limit, as the full-work-directory line says it."""
        used, limit = self.used_and_limit
        return f"{size_words(used)} / {size_words(limit)}, {size_words(self.free_bytes)} free ({self.source()})"


def probe_command(workdir: str, tool: str) -> str:
    """The shell line that prints df's line for the work directory (its nearest existing parent before the
    first run made it) and, for `lfs` or `quota`, the user's quota after QUOTA_MARK. `workdir` is literal
    (already expanded)."""
    if tool not in TOOLS:
        raise ValueError(f"storage_tool {tool!r}: expected one of {', '.join(TOOLS)}")
    quoted = shlex.quote(workdir)
    line = f'd={quoted}; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; printf "%s\\n" "$d"; df -P -k "$d"'
    if tool == "lfs":
        line += f'; echo {shlex.quote(QUOTA_MARK)}; lfs quota -q -u "$(id -un)" "$d" 2>&1'
    elif tool == "quota":
        line += f'; echo {shlex.quote(QUOTA_MARK)}; quota -w -u "$(id -un)" 2>&1'
    return line


def parse_probe(output: str, tool: str) -> Storage:
    """Storage from probe_command's output; ValueError naming what could not be read."""
    head, _, quota_text = output.partition(QUOTA_MARK)
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(lines) < 3:
        raise ValueError(f"df gave no line for the work directory: {output.strip()[:200]!r}")
    path, fs_line = lines[0].strip(), " ".join(lines[2:])  # df -P may wrap a long device name
    words = fs_line.split()
    try:
        size, used, avail = (int(w) * KIB for w in words[1:4])
    except (ValueError, IndexError):
        raise ValueError(f"df's line for {path} is not `filesystem size used available ...`: {fs_line!r}") from None
    quota_used, quota_limit = None, None
    if tool == "lfs":
        quota_used, quota_limit = parse_lfs_quota(quota_text)
    elif tool == "quota":
        quota_used, quota_limit = parse_quota(quota_text, device=words[0])
    return Storage(path, tool, size, used, avail, quota_used, quota_limit)


def _kib(word: str) -> int:
    return int(word.rstrip("*")) * KIB  # a `*` marks a figure over its quota


def parse_lfs_quota(text: str) -> tuple[int | None, int | None]:
    """(used, hard limit) in bytes from `lfs quota -q -u USER DIR` (kbytes quota limit grace files ...); a
    limit of 0 is none."""
    words = text.split()
    numbers = [w for w in words if w.rstrip("*").isdigit()]
    if len(numbers) < 3:
        return None, None
    used, _soft, hard = (_kib(w) for w in numbers[:3])
    return used, hard or None


def parse_quota(text: str, device: str) -> tuple[int | None, int | None]:
    """(used, hard limit) in bytes from `quota -w -u USER` for the file system df named (blocks quota limit
    grace ...); none when the user has no quota there."""
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0] == device:
            try:
                used, soft, hard = (_kib(w) for w in words[1:4])
            except ValueError:
                return None, None
            return used, (hard or soft) or None
    return None, None
