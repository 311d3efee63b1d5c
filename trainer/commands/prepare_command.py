"""`hlm-train prepare`: its flags and its run, over trainer.data.prepare (the library that builds shards).

The command line lives here, beside the other `hlm-train` commands, so that the data package never imports the
flags module (which judges flag values with the data package's own rules)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from runcontract import disk_space
from runcontract.contract import EXIT_BAD_INPUT, EXIT_DISK_FULL, EXIT_USAGE, ContractError
from runcontract.modes import share_with
from runcontract.records import read_config
from trainer.config_flags import (
    UsageError,
    add_data_flags,
    add_key_flag,
    split_from_flags,
    tokenizer_from_flags,
)
from trainer.config_keys import CONFIG_DATA_KEYS
from trainer.data import shards
from trainer.data.errors import DataError
from trainer.data.prepare import prepare_data
from trainer.data.summary import describe
from trainer.environment import slurm_cpus_per_task

TRAIN_DATA = next(k for k in CONFIG_DATA_KEYS if k.name == "train_data")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `hlm-train prepare`."""
    parser.add_argument("--run-dir", type=Path, metavar="RUN", help="read dataset, data_path, tokenizer, token_cache from RUN/config.json")
    parser.add_argument("--data", type=Path, metavar="PATH", help="PhysioNet-style folder (RECORDS file or *.hea); omit for synthetic")
    parser.add_argument("--synthetic", action="store_true", help="use the built-in synthetic ECG generator")
    parser.add_argument("--dataset", metavar="NAME", help="dataset name in the shard folder (default: the data folder's name)")
    parser.add_argument("--out", type=Path, metavar="CACHE", help="token cache root (shards go to CACHE/<dataset>-<tokenizer>-<digest>)")
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="processes, one record each at a time (default 1)")
    add_key_flag(parser, TRAIN_DATA, "train_data")
    add_data_flags(parser)  # every tokenizer key, the split and --skip-bad-records, as `hlm-train train` has them
    parser.add_argument("--synthetic-records", type=int, metavar="N", help="synthetic: number of records (default 8)")
    parser.add_argument("--synthetic-seconds", type=float, metavar="S", help="synthetic: seconds per record (default 300)")
    parser.add_argument("--seed", type=int, help="synthetic: seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on a terminal")


def run(args: argparse.Namespace) -> int:
    """Run `hlm-train prepare`; 0 on success, 2 for a bad command line or config, 3 for bad data, 5 for a full disk."""
    try:
        kwargs = _from_run_dir(args.run_dir) if args.run_dir else _from_flags(args)
        kwargs["skip_bad_records"] = kwargs["skip_bad_records"] or bool(args.skip_bad_records)
    except UsageError as exc:
        print(f"hlm-train: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        t0 = time.perf_counter()
        shard = prepare_data(**kwargs, progress=not args.no_progress)
        m = json.loads((shard / shards.MANIFEST).read_text())
    except DataError as exc:
        print(f"hlm-train: bad input data: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        full = disk_space.as_disk_full(exc)
        if full is None:
            raise
        print(f"hlm-train: {full.strerror}", file=sys.stderr)
        return EXIT_DISK_FULL
    print(describe(m, shard, time.perf_counter() - t0))
    return 0


def _from_flags(args: argparse.Namespace) -> dict[str, Any]:
    if args.synthetic and args.data:
        raise UsageError("--synthetic and --data exclude each other")
    if args.out is None:
        raise UsageError("--out CACHE is required (or --run-dir RUN)")
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, found {args.workers}")
    tok: dict[str, Any] = {"name": "samples", **tokenizer_from_flags(args)}
    split = split_from_flags(args)
    syn = {k: v for k, v in (("records", args.synthetic_records), ("seconds", args.synthetic_seconds),
                             ("seed", args.seed)) if v is not None}
    return {"data_path": args.data, "tokenizer": tok, "cache_root": args.out, "workers": args.workers,
            "dataset": args.dataset, "synthetic_params": syn or None, "skip_bad_records": bool(args.skip_bad_records),
            "split": split, "train_data": [str(p) for p in args.train_data] if args.train_data else None}


def _from_run_dir(run_dir: Path) -> dict[str, Any]:
    try:
        config = read_config(run_dir)
        share_with(config.get("share_group"))  # the shards: private, or the study's group
    except ContractError as exc:
        raise UsageError(str(exc)) from None
    where = run_dir / "config.json"
    for key in ("tokenizer", "token_cache"):
        if key not in config:
            raise UsageError(f"{where}: missing key {key!r}")
    if not isinstance(config["tokenizer"], dict):
        raise UsageError(f"{where}: 'tokenizer' must be an object with a 'name', found {config['tokenizer']!r}")
    data_path = None if config.get("synthetic") else config.get("data_path")
    skip = config.get("skip_bad_records", False)
    if not isinstance(skip, bool):
        raise UsageError(f"{where}: 'skip_bad_records' must be true or false, found {skip!r}")
    return {"data_path": data_path, "tokenizer": config["tokenizer"], "cache_root": config["token_cache"],
            "workers": int(config.get("prepare_workers") or slurm_cpus_per_task() or 1),
            "dataset": config.get("dataset"), "synthetic_params": config.get("synthetic_params") or None,
            "skip_bad_records": skip, "split": config.get("split"), "train_data": config.get("train_data")}
