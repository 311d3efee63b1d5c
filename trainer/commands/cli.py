"""`hlm-train`: the cluster-side command. `prepare` builds token shards, `train` runs one rank of a run,
`evaluate` scores a database with trained models.

`train --run-dir RUN` reads RUN/config.json (written by the launcher). Flags override single keys, and
without a config.json they describe the whole run, which is then written to RUN/config.json so that a
rerun of the same directory (resume) sees exactly the same configuration; flags that change the keys of a run
not yet started (no checkpoint, no result: a retry after bad input) are written back likewise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from runcontract.commands import CommandParser, VersionAction
from runcontract.contract import (
    CONFIG_FILE,
    EXIT_BAD_INPUT,
    EXIT_DISK_FULL,
    EXIT_USAGE,
    RESULT_FILE,
    ContractError,
)
from runcontract.disk_space import DiskFull
from runcontract.keys import ConfigKey
from runcontract.modes import share_with, writable_dir
from runcontract.records import read_config, write_config, write_exit
from trainer import rundir
from trainer.commands import download
from trainer.config_flags import (
    UsageError,
    add_data_flags,
    add_key_flag,
    error,
    split_from_flags,
    tokenizer_from_flags,
)
from trainer.config_keys import CONFIG_DATA_KEYS, KEYS, NOISE_KEYS, TOKENIZER
from trainer.environment import is_main_rank

# every key with a flag: the data keys of config.json, then every model, axis and training key of the registry
TRAIN_KEYS: tuple[ConfigKey, ...] = tuple(k for k in (*CONFIG_DATA_KEYS, *KEYS) if k.flag != "")
# the help's group of each registry section (the sweep's dataset key goes with the data keys)
TRAIN_GROUPS = {"data": ("data", "where the tokens come from: config.json's data keys"),
                "sweep": ("data", ""),
                "model": ("model", "the [model] keys of a study file"),
                "train": ("training", "the [train] keys and the sweep axes of a study file")}
TRAIN_DESCRIPTION = ("Train one run: one plain process or one torchrun rank. Reads RUN/config.json (the cockpit "
                     "writes it); each flag sets one of its keys. Without a config.json the flags describe the "
                     "whole run, which is then written to config.json, so that a resume sees the same run.")


def _add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run-dir", required=True, type=Path, metavar="RUN", help="run directory (reads config.json if present)")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for k in TRAIN_KEYS:
        title, text = TRAIN_GROUPS[k.section]
        if title not in groups:
            groups[title] = p.add_argument_group(title, text or None)
        add_key_flag(groups[title], k, f"config key {k.dest}")
    add_data_flags(p)


def build_config(args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """config.json of the run dir (if any) with the flags applied; True if config.json did not exist."""
    path = args.run_dir / CONFIG_FILE
    fresh = not path.exists()
    config: dict[str, Any] = {} if fresh else read_config(args.run_dir)
    for k in TRAIN_KEYS:
        value = getattr(args, k.name)
        if value is None:
            continue
        section, _, name = k.dest.rpartition(".")
        target = config.setdefault(section, {}) if section else config
        if not isinstance(target, dict):
            raise UsageError(f"{path}: {section} must be an object")
        target[name] = value
        if name in ("steps", "epochs"):  # one of them describes the work
            target.pop("epochs" if name == "steps" else "steps", None)
    tokenizer = tokenizer_from_flags(args)
    if tokenizer:
        config.setdefault("tokenizer", {}).update(tokenizer)
    if args.skip_bad_records:
        config["skip_bad_records"] = True
    split = split_from_flags(args)
    if split is not None:
        config["split"] = split
    train = config.get("train", {})
    if fresh and train.get("steps") is None and train.get("epochs") is None:
        raise UsageError(f"{path} does not exist: give --steps or --epochs (and other flags) to describe the run")
    return config, fresh


def _flags_changed_unstarted_run(run_dir: Path, config: dict[str, Any]) -> bool:
    """True when the flags changed config.json's keys and the run has neither a checkpoint nor a result: the
    corrected retry of a run that stopped on bad input then leaves config.json saying what ran. A started run's
    config.json stays as it ran (its checkpoint refuses a resume under other settings)."""
    if (run_dir / rundir.CHECKPOINT_FILE).exists() or (run_dir / RESULT_FILE).exists():
        return False
    return config != read_config(run_dir)


def cmd_train(args: argparse.Namespace) -> int:
    from trainer.settings import ConfigError, from_config

    try:
        writable_dir(args.run_dir, "--run-dir")
    except ContractError as exc:  # nowhere to write exit.json either: the line is all there is
        error(str(exc))
        return EXIT_USAGE
    except DiskFull as exc:
        error(exc.strerror or str(exc))
        return EXIT_DISK_FULL
    try:
        config, fresh = build_config(args)
        settings = from_config(args.run_dir, config, str(args.run_dir / CONFIG_FILE))
        share_with(settings.run.share_group)  # what the run writes: private, or the study's group
    except (ConfigError, UsageError, ContractError) as exc:
        error(str(exc))
        if is_main_rank():
            write_exit(args.run_dir, EXIT_USAGE, str(exc))
        return EXIT_USAGE
    if is_main_rank() and (fresh or _flags_changed_unstarted_run(args.run_dir, config)):
        try:
            write_config(args.run_dir, config)
        except DiskFull as exc:  # no room for config.json: nor for exit.json, so the line is all there is
            error(exc.strerror or str(exc))
            return EXIT_DISK_FULL
    from trainer.run.train import run

    return run(settings)


def cmd_probe(args: argparse.Namespace) -> int:
    """All-reduce bus bandwidth of this launch's processes (run it under torchrun), one JSON line on rank 0:
    the figure a site profile's intra_node_busbw_gbs / inter_node_busbw_gbs takes (docs/prediction.md)."""
    import json

    from runcontract import probe
    from trainer.parallelism import distributed

    if args.bytes < 4:
        error(f"--bytes must be at least 4, got {args.bytes}")
        return EXIT_USAGE
    d = distributed.setup(args.device)
    try:
        if not d.enabled:
            error("probe needs at least 2 processes (torchrun --nproc-per-node 2 -m trainer probe)")
            return EXIT_USAGE
        result = probe.all_reduce_probe(d, args.bytes, args.nodes)
        if d.is_main:
            print(json.dumps(result), flush=True)
    finally:
        distributed.teardown(d)
    return 0


def cmd_preflight(args: argparse.Namespace) -> int:
    """One rank of a preflight job (run it as the study's jobs run: torchrun, srun across nodes)."""
    from trainer.commands import preflight

    try:
        return preflight.run(args.run_dir)
    except ContractError as exc:
        error(str(exc))
        return EXIT_USAGE


def cmd_ensemble(args: argparse.Namespace) -> int:
    from trainer.commands import ensemble

    return ensemble.run(args)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from trainer.commands import score_database

    return score_database.run(args)


def cmd_prepare(args: argparse.Namespace) -> int:
    from trainer.commands import (
        prepare_command,  # numpy, scipy: the training extra; `download` runs without them
    )

    try:
        return int(prepare_command.run(args) or 0)
    except OSError as exc:  # a file that cannot be written or read: one line naming it, no traceback
        return _file_refusal(exc, args.out)


def _file_refusal(exc: OSError, out: Path | None) -> int:
    """An unusable --out is a bad command line (exit code 2, the flag named); another file, bad input data (3)."""
    where = Path(exc.filename) if exc.filename else None
    what = exc.strerror or str(exc)
    if out is not None and where is not None and (where == out or out in where.parents or where in out.parents):
        error(f"--out {out}: cannot write the token cache there ({what}: {where}); choose a directory you can write")
        return EXIT_USAGE
    error(f"{where or 'a file'}: {what}")
    return EXIT_BAD_INPUT


def cmd_download(args: argparse.Namespace) -> int:
    return download.run(args)


def parser() -> argparse.ArgumentParser:
    p = CommandParser(prog="hlm-train", description="Heart Language Model trainer (cluster side).")
    p.add_argument("--version", action=VersionAction)
    sub = p.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="tokenize ECG records into shards (idempotent)",
                          description="Tokenize ECG records (a PhysioNet-style folder, or the synthetic generator) "
                                      "into token shards under --out; a second call with the same inputs reuses them.")
    try:
        from trainer.commands import (
            prepare_command,  # numpy, scipy: the training extra; `download` runs without them
        )

        prepare_command.add_arguments(prep)
    except ImportError:  # a trainer without its data dependencies can still download and train from shards
        pass
    prep.set_defaults(func=cmd_prepare)
    pr = sub.add_parser("probe", help="measure all-reduce bus bandwidth between this launch's processes")
    pr.add_argument("--bytes", type=int, default=8 * 2**20, help="all-reduce size (default 8 MiB: a gradient)")
    pr.add_argument("--nodes", type=int, default=1, help="nodes the launch spans (names the link kind)")
    pr.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    pr.set_defaults(func=cmd_probe)
    pre = sub.add_parser("preflight", help="check this job's environment, devices, links, data and storage")
    pre.add_argument("--run-dir", required=True, type=Path, metavar="RUN", help="directory with the preflight's config.json")
    pre.set_defaults(func=cmd_preflight)
    train = sub.add_parser("train", help="train one run (one plain process or one torchrun rank)",
                           description=TRAIN_DESCRIPTION, usage="%(prog)s --run-dir RUN [--KEY VALUE ...]")
    _add_train_arguments(train)
    train.set_defaults(func=cmd_train)
    ens = sub.add_parser("ensemble", help="score finished fine-tune runs together (mean of their probabilities)")
    ens.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for ensemble.json")
    ens.add_argument("members", type=Path, nargs="+", metavar="RUN", help="finished fine-tune run directories")
    ens.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ens.set_defaults(func=cmd_ensemble)
    ev = sub.add_parser("evaluate", help="score a database (any rate, format, annotator) with trained model(s)")
    ev.add_argument("models", type=Path, nargs="+", metavar="RUN",
                    help="a finished beat fine-tune's run directory (several: scored as their ensemble)")
    ev.add_argument("--data", type=Path, required=True, metavar="DIR", help="PhysioNet-style folder to score")
    ev.add_argument("--records", nargs="+", metavar="RECORD", help="only these records (commas or spaces)")
    ev.add_argument("--annotator", metavar="EXT", help="annotation file extension (default: the model's)")
    ev.add_argument("--token-cache", type=Path, metavar="CACHE", help="token cache root (default: the model's)")
    ev.add_argument("--out", type=Path, metavar="DIR",
                    help="folder for evaluation.json (default: RUN/evaluate-<the data folder's name>)")
    ev.add_argument("--skip-bad-records", action="store_true", help="leave out bad records (listed)")
    for key in NOISE_KEYS:  # the noisy version of the database (trainer/data/noise.py)
        add_key_flag(ev, TOKENIZER[key], f"tokenizer.{key}", choices=False)
    ev.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ev.set_defaults(func=cmd_evaluate)
    dl = sub.add_parser("download", help="fetch a PhysioNet database, every file checked against its SHA256SUMS.txt")
    download.add_arguments(dl)
    dl.set_defaults(func=cmd_download)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
