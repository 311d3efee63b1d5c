"""`cockpit trace RUN`: what a profiled run's torch.profiler traces say, per rank, without torch.

RUN is a run directory (or one trace file) on this machine, or `STUDY CONFIG_ID`: a study file and a
configuration id (or its unique start), whose run directory is read through the study's backend (for
Slurm over its one SSH connection, with the backend's read_file). The run must have been trained with
`[train] profile_active` set (docs/training.md, "Profiling"); its traces are listed in
traces/index.json (and result.json `profile`). For each rank this prints the trainer's step parts as the
trace records them, the operations by self time and the all-reduce spans, then the file to open in
Perfetto (https://ui.perfetto.dev) or chrome://tracing, and whether Holistic Trace Analysis applies.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.commands._args import RUN, error
from runcontract.contract import RESULT_FILE, TRACE_INDEX_FILE, TRACES_DIR
from runcontract.modes import make_dirs

if TYPE_CHECKING:
    from cockpit.figures.traces import TraceSummary

MAX_TRACE_BYTES = 1 << 30  # a trace larger than this is not read over the connection
Reader = Callable[[str], Awaitable[bytes | None]]  # a file of the run directory by its relative path


class TraceCommandError(Exception):
    """Nothing to summarise; the message says what was looked for and where."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="+", metavar=RUN,
                        help="a run directory or one trace file; or STUDY CONFIG_ID: a study file and a "
                             "configuration id (or its unique start), read through the study's backend")
    parser.add_argument("--cycle", type=int, metavar="STEP",
                        help="the profiling cycle that starts at this step (default: the last one recorded)")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="operations listed by self time")
    parser.add_argument("--spans", type=int, default=12, metavar="N", help="all-reduce spans listed per rank")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="also copy the trace files here (for a run read over SSH: to open them locally)")


def main(args: argparse.Namespace) -> int:
    if len(args.run) > 2:
        return error(f"expected {RUN} (a run directory or trace file) or STUDY CONFIG_ID, got "
                     f"{len(args.run)} arguments")
    try:
        if len(args.run) == 1:
            lines = asyncio.run(_local(Path(args.run[0]), args))
        else:
            lines = asyncio.run(_study(args.run[0], args.run[1], args))
    except TraceCommandError as exc:  # nothing to summarise where it was asked: bad input, as in every command
        return error(str(exc))
    except OSError as exc:
        return error(f"{exc.filename or args.run[0]}: cannot read it ({exc.strerror or exc})")
    print("\n".join(lines))
    return 0


async def _local(path: Path, args: argparse.Namespace) -> list[str]:
    if path.is_file():  # one trace file
        return _report([(str(path), path.read_bytes())], str(path.resolve().parent), args, remote=None)
    if not path.is_dir():
        raise TraceCommandError(f"{path}: no such run directory or trace file")

    async def read(rel: str) -> bytes | None:
        try:
            return (path / rel).read_bytes()
        except FileNotFoundError:
            return None

    fallback = sorted(str(p.relative_to(path)) for p in (path / TRACES_DIR).glob("rank*.json"))
    files = await _trace_files(read, str(path), args.cycle, fallback)
    return _report([(str((path / rel).resolve()), await _must(read, rel, str(path))) for rel in files],
                   str(path.resolve()), args, remote=None)


async def _study(study_file: str, config_id: str, args: argparse.Namespace) -> list[str]:
    from cockpit.launch.backend import BackendError
    from cockpit.run.session import backend_for
    from cockpit.study.spec import SpecError, load_study

    try:
        study = load_study(study_file)
    except SpecError as exc:
        raise TraceCommandError(str(exc)) from exc
    matches = [c for c in study.matrix() if c.config_id == config_id] or \
              [c for c in study.matrix() if c.config_id.startswith(config_id)]
    if len(matches) != 1:
        ids = ", ".join(c.config_id for c in matches[:5])
        raise TraceCommandError(f"{study_file}: {config_id!r} names {len(matches)} configurations"
                                + (f" ({ids})" if matches else " (cockpit plan lists their ids)"))
    backend = backend_for(study)
    try:
        run_dir = await backend.run_dir(matches[0])

        async def read(rel: str) -> bytes | None:
            return await _read_whole(backend.read_file, f"{run_dir}/{rel}")

        files = await _trace_files(read, run_dir, args.cycle, [])
        fetched = [(f"{run_dir}/{rel}", await _must(read, rel, run_dir)) for rel in files]
    except BackendError as exc:
        raise TraceCommandError(f"{backend.label}: {exc}") from exc
    finally:
        await backend.close()
    remote = None if backend.on_this_machine else backend.label
    return _report(fetched, run_dir, args, remote=remote)


async def _read_whole(read_file: Callable[[str, int], Awaitable[bytes]], path: str) -> bytes | None:
    """A whole file through a backend's read_file (which may return it in pieces); None when missing."""
    data = b""
    while True:
        chunk = await read_file(path, len(data))
        if not chunk:
            return data or None
        data += chunk
        if len(data) > MAX_TRACE_BYTES:
            raise TraceCommandError(f"{path}: larger than {MAX_TRACE_BYTES >> 20} MiB; copy it and give the copy")


async def _must(read: Reader, rel: str, where: str) -> bytes:
    data = await read(rel)
    if data is None:
        raise TraceCommandError(f"{where}/{rel}: listed but missing (a rank that has not written it yet?)")
    return data


async def _trace_files(read: Reader, where: str, cycle: int | None, fallback: list[str]) -> list[str]:
    """The trace files of one cycle (every rank's), from traces/index.json, else result.json's profile."""
    cycles: list[dict[str, Any]] = []
    index = await read(TRACE_INDEX_FILE)
    if index is not None:
        cycles = [c for c in _json(index, f"{where}/{TRACE_INDEX_FILE}").get("cycles", []) if isinstance(c, dict)]
    if not cycles:
        result = await read(RESULT_FILE)
        profile = _json(result, f"{where}/{RESULT_FILE}").get("profile") if result is not None else None
        if isinstance(profile, dict) and profile.get("traces"):
            cycles = [{"first_step": None, "files": list(profile["traces"])}]
    if not cycles and fallback:
        cycles = [{"first_step": None, "files": fallback}]
    if not cycles:
        raise TraceCommandError(f"{where}: no traces (neither {TRACE_INDEX_FILE} nor a result.json profile): "
                                "train with [train] profile_active = N (docs/training.md, Profiling)")
    if cycle is None:
        return [str(f) for f in cycles[-1]["files"]]
    chosen = [c for c in cycles if c.get("first_step") == cycle]
    if not chosen:
        starts = ", ".join(str(c.get("first_step")) for c in cycles)
        raise TraceCommandError(f"{where}: no profiling cycle starts at step {cycle} (cycles start at {starts})")
    return [str(f) for f in chosen[0]["files"]]


def _json(data: bytes, name: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceCommandError(f"{name}: not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise TraceCommandError(f"{name}: expected a JSON object")
    return value


def _report(files: list[tuple[str, bytes]], where: str, args: argparse.Namespace, remote: str | None) -> list[str]:
    from cockpit.figures.traces import TraceError, describe, hta_note, load, summarise

    summaries: list[TraceSummary] = []
    for name, data in files:
        try:
            summaries.append(summarise(load(data, name), name, args.top))
        except TraceError as exc:
            raise TraceCommandError(str(exc)) from exc
    summaries.sort(key=lambda s: (s.rank is None, s.rank or 0))
    out = [f"{len(summaries)} trace{'s' if len(summaries) != 1 else ''} of {where}"
           + (f" (on {remote})" if remote else "")]
    for s in summaries:
        out += describe(s, args.top, args.spans)
    copies = _copy(files, args.out) if args.out else []
    out.append("open in Perfetto (https://ui.perfetto.dev, Open trace file) or chrome://tracing:")
    if remote and not copies:
        out.append(f"  on {remote} (copy them, or run again with --out DIR):")
    out += [f"  {path}" for path in (copies or [name for name, _ in files])]
    out.append(hta_note(summaries))
    return out


def _copy(files: list[tuple[str, bytes]], out: Path) -> list[str]:
    make_dirs(out)
    paths = []
    for name, data in files:
        target = out / Path(name).name
        target.write_bytes(data)
        paths.append(str(target.resolve()))
    return paths
