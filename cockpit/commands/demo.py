"""`cockpit demo`: a small real scaling study on this machine, shown live (or headless with a report).

Base study: examples/local-demo.toml (windows 128 and 256, 1 and 2 CPU workers standing in for GPUs, a
few hundred steps). Data: the project's synthetic ECG generator, or real PhysioNet records with --data.
"""

from __future__ import annotations

import argparse
import asyncio
import tomllib
from pathlib import Path
from typing import Any

from cockpit.commands._args import error, not_positive
from runcontract.contract import ContractError
from runcontract.modes import writable_dir
from trainer.config_flags import record_names  # the one parser of --records (commas or spaces)
from trainer.config_keys import ANNOTATOR_PREFERENCE

# what a failed preflight's line ends with: the demo's own flags (its study file is made from them)
PREFLIGHT_FIX = "check --data, --annotator, --records and --lead (the demo's study is made from them), and run again"
# Shipped inside the package (examples/local-demo.toml links here), so a wheel install finds it too.
EXAMPLE = Path(__file__).resolve().with_name("local-demo.toml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--headless", action="store_true", help="no screen: progress lines, then the report")
    parser.add_argument("--data", metavar="PATH",
                        help="a PhysioNet-style folder (e.g. mitdb) instead of the synthetic generator")
    parser.add_argument("--records", nargs="+", metavar="RECORD",
                        help="records of --data to use, separated by commas or spaces (default: all)")
    parser.add_argument("--annotator", metavar="EXT",
                        help="annotation file extension of --data: atr, ari, qrs, ... (default auto: the folder's "
                             f"ANNOTATORS list, then {', then '.join(ANNOTATOR_PREFERENCE)})")
    parser.add_argument("--lead", help="lead of --data, index or name (default 0)")
    parser.add_argument("--test-records", nargs="+", metavar="RECORD",
                        help="test records of --data, separated by commas or spaces (default: MIT-BIH DS2, "
                             "else by patient)")
    parser.add_argument("--skip-bad-records", action="store_true",
                        help="leave out bad records of --data (listed with their reason) instead of failing")
    parser.add_argument("--steps", type=int, help="training steps per run instead of the example's one epoch")
    parser.add_argument("--workdir", metavar="DIR", default="hlm-demo",
                        help="where run directories, the store and the report go (default ./hlm-demo)")
    parser.add_argument("--out", metavar="DIR", help="report directory (default <workdir>/local-demo/report)")
    parser.add_argument("--timeout", type=float, metavar="S", help="give up after S seconds (headless)")


def demo_raw(args: argparse.Namespace) -> dict[str, Any]:
    """The example study with this run's workdir, data and steps."""
    raw = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    raw.setdefault("cluster", {})["workdir"] = str(Path(args.workdir).resolve())
    if args.steps is not None:
        train = raw.setdefault("train", {})
        train.pop("epochs", None)
        train["steps"] = args.steps
    if args.data:
        data = Path(args.data).resolve()
        entry: dict[str, Any] = {"path": str(data)}
        tokenizer: dict[str, Any] = {}
        if args.records:
            tokenizer["records"] = record_names(args.records)
        if args.annotator:
            tokenizer["annotator"] = args.annotator
        if args.lead is not None:
            tokenizer["lead"] = int(args.lead) if args.lead.isdigit() else args.lead
        if tokenizer:
            entry["tokenizer"] = tokenizer
        if args.test_records:
            entry["test_records"] = record_names(args.test_records, "--test-records")
        if args.skip_bad_records:
            entry["skip_bad_records"] = True
        raw.setdefault("data", {})["datasets"] = {data.name or "data": entry}
    return raw


def check(args: argparse.Namespace) -> str | None:
    """A clear message for a bad argument, before anything starts."""
    if args.steps is not None and args.steps < 1:
        return f"--steps must be at least 1, got {args.steps}"
    if args.data:
        data = Path(args.data)
        if not data.is_dir():
            return f"--data {data}: no such folder (expected a PhysioNet-style folder with RECORDS or *.hea files)"
        if not (data / "RECORDS").exists() and not any(data.glob("*.hea")):
            return f"--data {data}: no RECORDS file and no *.hea headers; is this a PhysioNet database folder?"
        problem = data_problem(args)
        if problem:
            return problem
    for flag in ("records", "annotator", "lead", "test_records", "skip_bad_records"):
        if getattr(args, flag) and not args.data:
            return f"--{flag.replace('_', '-')} needs --data"
    for flag in ("records", "test_records"):
        if getattr(args, flag) is not None:
            try:
                record_names(getattr(args, flag), f"--{flag.replace('_', '-')}")
            except ValueError as exc:
                return str(exc)
    return not_positive("--timeout", args.timeout)


def data_problem(args: argparse.Namespace) -> str | None:
    """What the preflight's data check would fail on, found in a second on this machine and said in the demo's
    flags: records not in --data, and records without the annotation file --annotator (or auto) picks."""
    from trainer.data import records as rec_io
    from trainer.data.errors import DataError

    data = Path(args.data)
    try:
        names = rec_io.list_records(data)
    except DataError as exc:
        return f"--data {exc}"
    for flag in ("records", "test_records"):
        wanted = record_names(getattr(args, flag)) if getattr(args, flag) else []
        unknown = [r for r in wanted if r not in names]
        if unknown:
            return (f"--{flag.replace('_', '-')} {', '.join(unknown)}: not a record of {data} (its records: "
                    f"{_listed(names)})")
    chosen = record_names(args.records) if args.records else names
    annotator = args.annotator or "auto"
    lacking = []
    for record in chosen:
        try:
            rec_io.resolve_annotator(data, record, annotator)
        except DataError:
            lacking.append(record)
    if not lacking or (args.skip_bad_records and len(lacking) < len(chosen)):
        return None
    tried = rec_io.auto_annotators(data)
    missing = f"no .{annotator} annotation file" if args.annotator else \
        f"no annotation file of those auto tries ({', '.join('.' + ext for ext in tried)})"
    ranked = rec_io.rank_annotators(data / lacking[0])
    has = ", ".join("." + ext for ext, _ in ranked) or "nothing else"
    fix = f"run again with --annotator {ranked[0][0]}" if ranked and ranked[0][1] > 0 else \
        "each record needs a beat annotation file beside its header"
    which = f"record {lacking[0]} has" if len(lacking) == 1 else \
        f"{len(lacking)} of {len(chosen)} records ({_listed(lacking)}) have"
    return f"--data {data}: {which} {missing}; {fix} (beside {lacking[0]}.hea: {has})"


def _listed(names: list[str], limit: int = 8) -> str:
    return ", ".join(names[:limit]) + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def main(args: argparse.Namespace) -> int:
    problem = check(args)
    if problem:
        return error(problem)
    from cockpit.run.session import open_session
    from cockpit.study.spec import SpecError, parse_study

    workdir = Path(args.workdir).resolve()
    try:
        writable_dir(workdir, "--workdir")
        study = parse_study(demo_raw(args), workdir / "local-demo.toml")
    except (ContractError, SpecError) as exc:
        return error(str(exc))
    session = open_session(study, preflight=True)  # a local preflight takes seconds
    print(f"demo study: {len(study.runnable())} runs in {study.study_dir()}", flush=True)
    if not args.headless:
        from cockpit.tui.app import CockpitApp
        from cockpit.tui.live import LiveController

        CockpitApp(LiveController(session), auto_submit=True, offer_plan=False, poll_interval=1.0).run()
        failed = session.has_failures()
        session.store.close()
        return 1 if failed else 0
    from cockpit.commands.run import run_headless

    out = Path(args.out) if args.out else Path(study.study_dir()) / "report"
    return asyncio.run(run_headless(session, out, timeout_s=args.timeout, preflight_fix=PREFLIGHT_FIX))
