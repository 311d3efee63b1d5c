"""Follow the live files of running jobs: metrics.jsonl, gpu.jsonl and the job's stdout/stderr.

Remote clusters: ONE follower process per study on ONE channel of the cluster's SSH connection (a bash
loop that stats every followed file each tick and sends what was appended, framed with its byte offset).
Why not one ``tail -F`` per file: a study with 20 running jobs follows 80 files, and sshd refuses more
than ``MaxSessions`` (default 10) channels per connection; one follower also costs one process on the login
node instead of 80. Plain bash + coreutils (stat, tail, head) because a login node may have no Python
outside ``module load``.

Every chunk carries its byte offset, so the consumer knows exactly where it is: after a reconnect the
follower is restarted at the last committed line boundary (stored in the same transaction as the records),
and a chunk that does not continue the committed offset is dropped rather than stored twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runcontract.files import JsonlChunk, parse_jsonl_bytes

MAX_CHUNK = 4 << 20
_KEY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.%-]+$")

FOLLOWER_SCRIPT = r"""
interval=$1; shift
keys=(); offs=(); paths=()
while (($#)); do keys+=("$1"); offs+=("$2"); paths+=("$3"); shift 3; done
while :; do
  for i in "${!keys[@]}"; do
    p=${paths[$i]}
    size=$(stat -c %s -- "$p" 2>/dev/null) || continue
    off=${offs[$i]}
    if (( size < off )); then printf '@@HLM reset %s 0 0\n' "${keys[$i]}"; off=0; offs[$i]=0; fi
    if (( size > off )); then
      n=$((size - off)); (( n > MAXCHUNK )) && n=MAXCHUNK
      printf '@@HLM data %s %d %d\n' "${keys[$i]}" "$off" "$n"
      tail -c +$((off + 1)) -- "$p" | head -c "$n"
      offs[$i]=$((off + n))
    fi
  done
  printf '@@HLM tick - 0 0\n'
  sleep "$interval"
done
""".replace("MAXCHUNK", str(MAX_CHUNK))


_fast_loads: Callable[[bytes], Any] | None
try:  # optional: 2-4x faster parsing of metrics lines; the standard library is the fallback
    import orjson

    _fast_loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None


def parse_jsonl_fast(data: bytes) -> JsonlChunk:
    """Same result as runcontract.files.parse_jsonl_bytes (complete lines only), faster: with orjson one
    line at a time (a line orjson refuses, e.g. a NaN, gets a second chance with the standard parser);
    without it the complete lines are parsed as ONE JSON array, falling back to line by line on any doubt.
    (One known difference: orjson reads integers beyond 64 bits as floats; no metrics field holds one.)"""
    end = data.rfind(b"\n") + 1
    if _fast_loads is not None:
        records: list[dict[str, Any]] = []
        bad = 0
        for raw in data[:end].split(b"\n"):
            if not raw.strip():
                continue
            try:
                value = _fast_loads(raw)
            except ValueError:
                try:
                    value = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    bad += 1
                    continue
            if isinstance(value, dict):
                records.append(value)
            else:
                bad += 1
        return JsonlChunk(records, end, bad)
    try:
        lines = [line for line in data[:end].decode("utf-8").split("\n") if line.strip()]
        values = json.loads("[" + ",".join(lines) + "]")
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return parse_jsonl_bytes(data)
    if len(values) != len(lines):
        return parse_jsonl_bytes(data)
    records = [v for v in values if isinstance(v, dict)]
    return JsonlChunk(records, end, len(values) - len(records))


@dataclass(frozen=True)
class FollowSpec:
    """One file to follow: key = '<config_id>/<file name>', its path, and the committed offset."""

    key: str
    path: str
    offset: int


@dataclass(frozen=True)
class Chunk:
    key: str
    offset: int
    data: bytes
    reset: bool = False  # the file shrank (re-created): start again at 0


@dataclass
class FileCursor:
    """Consumer-side state of one followed file: the committed offset, a partial line, bad-line count."""

    committed: int = 0
    carry: bytes = b""
    bad_lines: int = 0
    dropped_chunks: int = 0

    @property
    def expected(self) -> int:
        return self.committed + len(self.carry)

    def feed_jsonl(self, chunk: Chunk) -> tuple[list[dict[str, Any]], int] | None:
        """Records of the complete lines (None when the chunk does not continue where we are)."""
        if chunk.reset:
            self.committed, self.carry = 0, b""
            return [], 0
        if chunk.offset != self.expected:
            self.dropped_chunks += 1
            return None
        data = self.carry + chunk.data
        parsed = parse_jsonl_fast(data)
        self.carry = data[parsed.next_offset :]
        self.committed += parsed.next_offset
        self.bad_lines += parsed.bad_lines
        return parsed.records, parsed.bad_lines

    def feed_text(self, chunk: Chunk) -> list[str] | None:
        """Complete text lines of a log chunk (undecodable bytes replaced)."""
        if chunk.reset:
            self.committed, self.carry = 0, b""
            return []
        if chunk.offset != self.expected:
            self.dropped_chunks += 1
            return None
        data = self.carry + chunk.data
        end = data.rfind(b"\n") + 1
        self.carry = data[end:]
        self.committed += end
        return data[:end].decode("utf-8", "replace").splitlines()


class Follower(Protocol):
    async def update(self, specs: list[FollowSpec]) -> None:
        """Follow exactly these files (from their offsets when newly added or after a restart)."""

    async def drain(self) -> list[Chunk]:
        """Chunks that arrived since the last drain."""

    async def close(self) -> None: ...


class RemoteFollower:
    """The one-channel, one-process follower over an SshConnection."""

    def __init__(self, connection: Any, *, interval_s: float = 1.0) -> None:
        self.connection = connection
        self.interval_s = interval_s
        self._proc: Any = None
        self._task: asyncio.Task[None] | None = None
        self._keys: frozenset[str] = frozenset()
        self._queue: list[Chunk] = []
        self._generation = 0
        self.restarts = 0
        self.ticks = 0
        self.protocol_errors = 0

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    async def update(self, specs: list[FollowSpec]) -> None:
        keys = frozenset(s.key for s in specs)
        if keys == self._keys and (self.alive or not keys):
            return
        await self._stop()
        self._keys = keys
        if not specs:
            return
        for s in specs:
            if not _KEY.match(s.key):
                raise ValueError(f"follow key {s.key!r} must look like '<config_id>/<file>'")
        args = [str(self.interval_s)]
        for s in specs:
            args += [s.key, str(int(s.offset)), s.path]
        command = "bash -c " + shlex.quote(FOLLOWER_SCRIPT) + " follower " + shlex.join(args)
        self._proc = await self.connection.start_process(command)
        self._generation += 1
        self.restarts += 1
        self._task = asyncio.create_task(self._read(self._proc, self._generation))

    async def _read(self, proc: Any, generation: int) -> None:
        out = proc.stdout
        try:
            while True:
                header = await out.readline()
                if not header:
                    return
                parts = header.decode("ascii", "replace").split()
                if len(parts) != 5 or parts[0] != "@@HLM" or not parts[3].isdigit() or not parts[4].isdigit():
                    self.protocol_errors += 1
                    return  # lost framing: stop; the next update() restarts from committed offsets
                kind, key, offset, size = parts[1], parts[2], int(parts[3]), int(parts[4])
                data = await out.readexactly(size) if size else b""
                if generation != self._generation:
                    return
                if kind == "tick":
                    self.ticks += 1
                elif kind == "reset":
                    self._queue.append(Chunk(key, 0, b"", reset=True))
                elif kind == "data":
                    self._queue.append(Chunk(key, offset, data))
        except (asyncio.IncompleteReadError, ConnectionError, OSError, EOFError):
            return
        except Exception as exc:  # asyncssh errors when the connection drops
            if type(exc).__module__.startswith("asyncssh"):
                return
            raise

    async def drain(self) -> list[Chunk]:
        chunks, self._queue = self._queue, []
        return chunks

    async def _stop(self) -> None:
        self._generation += 1
        if self._proc is not None:
            with contextlib.suppress(Exception):
                self._proc.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._proc, self._task = None, None
        self._keys = frozenset()

    async def close(self) -> None:
        await self._stop()


@dataclass
class LocalFollower:
    """The same interface for run directories on this machine (local executor): plain reads each drain."""

    specs: dict[str, FollowSpec] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)

    async def update(self, specs: list[FollowSpec]) -> None:
        new = {s.key: s for s in specs}
        for key, spec in new.items():
            if key not in self.specs:
                self.sent[key] = spec.offset
        self.specs = new
        self.sent = {k: v for k, v in self.sent.items() if k in new}

    async def drain(self) -> list[Chunk]:
        chunks = []
        for key, spec in self.specs.items():
            off = self.sent[key]
            try:
                size = os.stat(spec.path).st_size
            except OSError:
                continue
            if size < off:
                chunks.append(Chunk(key, 0, b"", reset=True))
                off = 0
            if size > off:
                with Path(spec.path).open("rb") as fh:
                    fh.seek(off)
                    data = fh.read(min(size - off, MAX_CHUNK))
                chunks.append(Chunk(key, off, data))
                off += len(data)
            self.sent[key] = off
        return chunks

    async def close(self) -> None:
        self.specs.clear()
