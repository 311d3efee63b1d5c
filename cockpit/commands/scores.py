"""`cockpit scores RUN...`: what a run or an ensemble learned, as the run detail shows it.

A fine-tune's figure lives in its result.json, the beat recipe's in the ensemble.json that `hlm-train
ensemble` writes beside its members: neither belongs to a study's store, yet both should read the same as
every other quality figure. So this prints them through cockpit.workloads.hlm.quality and the run detail's tables: the
metric with the per-class F1 it is the mean of, the confusion matrix, per-class Se/+P/F1 and the records
with the most errors; for an ensemble also each member's own figure, recomputed from its result.json.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.commands._args import RUN, error, negative
from cockpit.study.spec import SQLITE_HEADER
from runcontract.contract import RESULT_FILE, ContractError
from runcontract.files import read_json
from trainer.rundir import ENSEMBLE_FILE, EVALUATION_FILE
from trainer.scoring.scores import false_alarms_per_hour

if TYPE_CHECKING:
    from cockpit.workloads.hlm.quality import Quality


class ScoresError(Exception):
    """A path that holds no readable scores; the message names the file and what was expected."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar=RUN,
                        help=f"a run directory or its {RESULT_FILE}, an ensemble's directory or {ENSEMBLE_FILE}, "
                             f"or `hlm-train evaluate`'s folder or {EVALUATION_FILE}")
    parser.add_argument("--top", type=int, default=5, metavar="N", help="records with the most errors to list (default 5; 0: none)")


def main(args: argparse.Namespace) -> int:
    problem = negative("--top", args.top)
    if problem:
        return error(problem)
    status, printed = 0, 0
    for path in args.paths:
        try:
            lines = scores_lines(path, args.top)
        except ScoresError as exc:
            status = error(str(exc))
            continue
        print(("\n" if printed else "") + "\n".join(lines))
        printed += 1
    return status


def scores_lines(path: Path, top: int) -> list[str]:
    """The lines printed for one path: its file, the quality headline and tables, an ensemble's members."""
    from cockpit.tui.quality_panel import headline, tables

    file = _scores_file(path)
    data, q = _quality(file)
    out = [str(file), *headline({}, q).plain.splitlines()]
    if q.classes:
        out += tables(q, top).plain.splitlines()
    if file.name == ENSEMBLE_FILE:
        out += _members(data)
    if file.name == EVALUATION_FILE:
        out += _alarms(data["eval"])
    return out


def _scores_file(path: Path) -> Path:
    if path.is_dir():
        for name in (RESULT_FILE, ENSEMBLE_FILE, EVALUATION_FILE):
            if (path / name).is_file():
                return path / name
        raise ScoresError(f"{path}: expected {RESULT_FILE} (a run), {ENSEMBLE_FILE} (an ensemble) or "
                          f"{EVALUATION_FILE} (a database scored by `hlm-train evaluate`), found none")
    if not path.is_file():
        raise ScoresError(f"{path}: no such file or directory")
    with path.open("rb") as handle:
        if handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
            raise ScoresError(f"{path}: a cockpit store (an SQLite database), not a {RESULT_FILE}; its runs' scores "
                              f"are in `cockpit report {path} --out DIR` and `cockpit open {path}`")
    return path


def _quality(file: Path) -> tuple[dict[str, Any], Quality]:
    """The file's JSON and its readable quality; ScoresError naming the file otherwise."""
    from cockpit.workloads.hlm.quality import quality_of

    try:
        data = read_json(file)
    except ContractError as exc:
        raise ScoresError(str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise ScoresError(f"{file}: not a JSON text file (byte {exc.start} is not UTF-8)") from exc
    except OSError as exc:
        raise ScoresError(f"{file}: cannot read it ({exc.strerror or exc})") from exc
    if data is None:
        raise ScoresError(f"{file}: missing")
    q = quality_of(data)
    if q is None:
        raise ScoresError(f"{file}: no `eval` (the run was not scored: train.eval = false)")
    if q.value != q.value:
        raise ScoresError(f"{file}: {q.problem}")
    return data, q


def _alarms(ev: dict[str, Any]) -> list[str]:
    """A scored database's false alarms per class per hour, overall and per rhythm, recomputed from its
    matrices and hours (what a database whose beats are all one class is judged by)."""
    classes = ev.get("classes") or []
    out = []
    for name, part in [("all beats", ev), *((f"rhythm {r}", v) for r, v in (ev.get("by_rhythm") or {}).items())]:
        hours = part.get("hours")
        if not hours or not isinstance(part.get("confusion"), list):
            out.append(f"  {name}: no time base for false alarms per hour")
            continue
        rates = false_alarms_per_hour(part["confusion"], classes, hours)
        out.append(f"  {name} ({hours:.2f} h): false alarms per hour "
                   + ", ".join(f"{c} {v:.1f}" for c, v in rates.items() if v is not None))
    return out


def _members(data: dict[str, Any]) -> list[str]:
    """Each member's own figure, recomputed from its result.json, or why it cannot be."""
    members = data.get("members")
    if not isinstance(members, list):
        return [f"  members: not readable ({ENSEMBLE_FILE} members: expected a list, found {type(members).__name__})"]
    out = [f"  {len(members)} members ({data.get('how', 'how not recorded')}):"]
    for m in members:
        if not isinstance(m, dict) or not isinstance(m.get("run_dir"), str):
            out.append(f"    not readable: expected an object with a run_dir, found {m!r}")
            continue
        seed = f"seed {m.get('seed')}"
        try:
            _, q = _quality(Path(m["run_dir"]) / RESULT_FILE)
        except ScoresError as exc:
            out.append(f"    {seed:<8} {exc}")
        else:
            out.append(f"    {seed:<8} {q.metric} {q.value:.3f} = {q.inputs}  {m['run_dir']}")
    return out
