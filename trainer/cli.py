"""`hlm-train`: the cluster-side command. `prepare` builds token shards, `train` runs one rank of a run.

`train --run-dir DIR` reads DIR/config.json (written by the launcher). Flags override single keys, and
without a config.json they describe the whole run, which is then written to DIR/config.json so that a
rerun of the same directory (resume) sees exactly the same configuration.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from trainer import rundir
from trainer.config_keys import BY_NAME, KEYS
from trainer.environment import is_main_rank

# flag -> (section or None for top level, key, type): the data flags (named as in `hlm-train prepare`),
# then every model and training key of trainer.config_keys, the table the study file uses too.
TRAIN_FLAGS: dict[str, tuple[str | None, str, type]] = {
    "data": (None, "data_path", str),
    "dataset": (None, "dataset", str),
    "token_cache": (None, "token_cache", str),
    **{k.name: (None if k.top_level else k.section, k.name, k.kind) for k in KEYS if k.flag},
}


class UsageError(ValueError):
    """Bad command line; exit code 2."""


CHOICES = {k.name: k.choices for k in KEYS if k.choices}


def _add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run-dir", required=True, type=Path, help="run directory (reads config.json if present)")
    for name, (section, key, kind) in TRAIN_FLAGS.items():
        where = f"{section}.{key}" if section else key
        flag = "--" + name.replace("_", "-")
        known = BY_NAME.get(name)
        text = f"{known.help} (config key {where}, default {known.default})" if known else f"config key {where}"
        if kind is bool:  # --compile / --no-compile, --eval / --no-eval
            p.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text)
        else:
            p.add_argument(flag, dest=name, type=kind, default=None, choices=CHOICES.get(name), help=text)
    p.add_argument("--tokenizer", choices=("samples", "beats"), default=None, help="tokenizer name")
    # Data keys, named as in `hlm-train prepare` and the study file ([data.tokenizer], [data]).
    p.add_argument("--annotator", metavar="EXT", default=None,
                   help="annotation file extension (atr, ari, qrs, ...; default auto): tokenizer.annotator")
    p.add_argument("--lead", default=None, help="samples: lead index or name: tokenizer.lead")
    p.add_argument("--fs", type=float, default=None, metavar="HZ",
                   help="samples: resample to this rate (default 360; 0 keeps each record's): tokenizer.fs")
    p.add_argument("--highpass", type=float, default=None, metavar="HZ",
                   help="samples: remove baseline wander below this frequency (default 0 = off): "
                        "tokenizer.highpass_hz")
    p.add_argument("--records", nargs="+", metavar="RECORD", default=None,
                   help="only these records of the dataset, separated by commas or spaces: tokenizer.records")
    p.add_argument("--skip-bad-records", action="store_true", default=None,
                   help="leave out bad records (listed with their reason in the manifest and train.log)")
    p.add_argument("--test-records", nargs="+", metavar="RECORD", default=None,
                   help="the test split, explicitly, separated by commas or spaces: split.test_records")
    p.add_argument("--patient-pattern", metavar="REGEX", default=None,
                   help="regular expression extracting the patient id from a record name: split.patient_pattern")


def build_config(args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """config.json of the run dir (if any) with the flags applied; True if config.json did not exist."""
    path = args.run_dir / rundir.CONFIG_FILE
    fresh = not path.exists()
    config: dict[str, Any] = {} if fresh else rundir.read_config(args.run_dir)
    for name, (section, key, _kind) in TRAIN_FLAGS.items():
        value = getattr(args, name)
        if value is None:
            continue
        target = config.setdefault(section, {}) if section else config
        if not isinstance(target, dict):
            raise UsageError(f"{path}: {section} must be an object")
        target[key] = value
        if name == "steps":
            target.pop("epochs", None)
        elif name == "epochs":
            target.pop("steps", None)
    if args.tokenizer is not None:
        config.setdefault("tokenizer", {})["name"] = args.tokenizer
    _apply_data_flags(args, config)
    train = config.get("train", {})
    if fresh and train.get("steps") is None and train.get("epochs") is None:
        raise UsageError(f"{path} does not exist: give --steps or --epochs (and other flags) to describe the run")
    return config, fresh


def _apply_data_flags(args: argparse.Namespace, config: dict[str, Any]) -> None:
    """--annotator/--lead/--records go to the tokenizer table, --test-records/--patient-pattern to split."""
    lead = args.lead
    if lead is not None and lead.isdigit():
        lead = int(lead)
    fs = int(args.fs) if args.fs is not None and float(args.fs).is_integer() else args.fs
    from trainer.data.splits import record_names  # `--records 100,101` and `--records 100 101` alike

    try:
        records = None if args.records is None else record_names(args.records)
        test_records = None if args.test_records is None else record_names(args.test_records, "--test-records")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for key, value in (("annotator", args.annotator), ("lead", lead), ("records", records), ("fs", fs),
                       ("highpass_hz", args.highpass)):
        if value is not None:
            config.setdefault("tokenizer", {})[key] = value
    if args.skip_bad_records:
        config["skip_bad_records"] = True
    if test_records is not None or args.patient_pattern is not None:
        if test_records is not None and args.patient_pattern is not None:
            raise UsageError("--test-records and --patient-pattern exclude each other")
        config["split"] = ({"test_records": test_records} if test_records is not None
                           else {"patient_pattern": args.patient_pattern})


def cmd_train(args: argparse.Namespace) -> int:
    from trainer.settings import ConfigError, from_config

    try:
        config, fresh = build_config(args)
        settings = from_config(args.run_dir, config, str(args.run_dir / rundir.CONFIG_FILE))
    except (ConfigError, UsageError, rundir.RunDirError) as exc:
        print(f"hlm-train train: {exc}", file=sys.stderr)
        if is_main_rank():
            rundir.write_exit(args.run_dir, rundir.EXIT_USAGE, str(exc))
        return rundir.EXIT_USAGE
    if fresh and is_main_rank():
        rundir.write_config(args.run_dir, config)
    from trainer.train import run

    return run(settings)


def cmd_probe(args: argparse.Namespace) -> int:
    """All-reduce bus bandwidth of this launch's processes (run it under torchrun), one JSON line on rank 0:
    the figure a site profile's intra_node_busbw_gbs / inter_node_busbw_gbs takes (docs/prediction.md)."""
    import json

    from trainer import distributed, probe

    if args.bytes < 4:
        print(f"hlm-train probe: --bytes must be at least 4, got {args.bytes}", file=sys.stderr)
        return rundir.EXIT_USAGE
    d = distributed.setup(args.device)
    try:
        if not d.enabled:
            print("hlm-train probe: needs at least 2 processes (torchrun --nproc-per-node 2 -m trainer probe)",
                  file=sys.stderr)
            return rundir.EXIT_USAGE
        result = probe.all_reduce_probe(d, args.bytes, args.nodes)
        if d.is_main:
            print(json.dumps(result), flush=True)
    finally:
        distributed.teardown(d)
    return 0


def cmd_preflight(args: argparse.Namespace) -> int:
    """One rank of a preflight job (run it as the study's jobs run: torchrun, srun across nodes)."""
    from trainer import preflight

    try:
        return preflight.run(args.run_dir)
    except rundir.RunDirError as exc:
        print(f"hlm-train preflight: {exc}", file=sys.stderr)
        return rundir.EXIT_USAGE


def cmd_ensemble(args: argparse.Namespace) -> int:
    from trainer import ensemble

    return ensemble.run(args)


def cmd_prepare(args: argparse.Namespace) -> int:
    from trainer.data import prepare

    return int(prepare.run(args) or 0)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hlm-train", description="Heart Language Model trainer (cluster side).")
    sub = p.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="tokenize ECG records into shards (idempotent)")
    try:
        from trainer.data import prepare

        prepare.add_arguments(prep)
    except ImportError:  # a trainer without its data module can still train from prepared shards
        pass
    prep.set_defaults(func=cmd_prepare)
    pr = sub.add_parser("probe", help="measure all-reduce bus bandwidth between this launch's processes")
    pr.add_argument("--bytes", type=int, default=8 * 2**20, help="all-reduce size (default 8 MiB: a gradient)")
    pr.add_argument("--nodes", type=int, default=1, help="nodes the launch spans (names the link kind)")
    pr.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    pr.set_defaults(func=cmd_probe)
    pre = sub.add_parser("preflight", help="check this job's environment, devices, links, data and storage")
    pre.add_argument("--run-dir", required=True, type=Path, help="directory with the preflight's config.json")
    pre.set_defaults(func=cmd_preflight)
    train = sub.add_parser("train", help="train one run (one plain process or one torchrun rank)")
    _add_train_arguments(train)
    train.set_defaults(func=cmd_train)
    ens = sub.add_parser("ensemble", help="score finished fine-tune runs together (mean of their probabilities)")
    ens.add_argument("--out", type=Path, required=True, help="folder for ensemble.json")
    ens.add_argument("members", type=Path, nargs="+", metavar="RUN_DIR", help="finished fine-tune run directories")
    ens.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ens.set_defaults(func=cmd_ensemble)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
