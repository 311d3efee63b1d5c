"""Command-line flags built from the key registry (trainer/config_keys/): one flag per key, its type,
choices, default and help taken from the key, so `hlm-train train` and `hlm-train prepare` name a tokenizer,
split or training key the same way and a new key gets its flag by being declared."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from typing import Any

from runcontract.keys import ConfigKey
from trainer.config_keys import TOKENIZER_KEYS
from trainer.data.errors import DataError
from trainer.data.tokenizer_keys import canonical

Flags = argparse._ActionsContainer  # a parser or one of its argument groups: where a flag is added


class UsageError(ValueError):
    """A bad command line; exit code 2."""


def error(message: str) -> None:
    """`hlm-train: <message>` on stderr: the one form of every refusal of the trainer's command line."""
    print(f"hlm-train: {message}", file=sys.stderr)


def _type(k: ConfigKey) -> Any:
    if k.kind[0] in (int, float) and len(k.kind) == 1:
        return k.kind[0]
    return str  # a lead is an index or a name: _value turns digits into an index


def add_key_flag(p: Flags, k: ConfigKey, where: str, choices: bool = True) -> None:
    """`--name` for one key (`--compile / --no-compile` for a true/false key); dest is the key's name.
    ``choices`` False leaves a value to the key's own rule (tokenizer_from_flags: its words, exit code 2)."""
    flag = "--" + k.flag_name
    shown = "" if k.default is None else f", default {k.default}"
    text = f"{k.help} ({where}{shown})"
    if k.kind == (bool,):
        p.add_argument(flag, dest=k.name, action=argparse.BooleanOptionalAction, default=None, help=text)
    elif k.kind == (list,):
        # a list with a unit is a list of numbers (train.augment_noise_db's ratios in dB)
        p.add_argument(flag, dest=k.name, nargs="+", type=float if k.unit else str,
                       metavar=k.unit.upper() or k.name.upper().rstrip("S"), default=None, help=text)
    else:
        listed = k.choices if choices else None
        p.add_argument(flag, dest=k.name, type=_type(k), default=None, choices=listed,
                       metavar=(k.unit.upper() or None) if listed is None else None, help=text)


def add_data_flags(p: argparse.ArgumentParser) -> None:
    """Every tokenizer key (`--tokenizer`, `--vocab`, `--highpass`, `--records`, ...), the split and
    `--skip-bad-records`: the same flags in `train` and `prepare`, as the study file's [data] names them,
    in two groups of the help."""
    tokenizer = p.add_argument_group("tokenizer", "the [data.tokenizer] keys of a study file")
    for k in TOKENIZER_KEYS:
        add_key_flag(tokenizer, k, f"tokenizer.{k.name}", choices=False)
    split = p.add_argument_group("records and split")
    split.add_argument("--skip-bad-records", action="store_true", default=None,
                       help="leave out bad records (listed with their reason in the manifest and train.log)")
    split.add_argument("--test-records", nargs="+", metavar="RECORD", default=None,
                       help="the test split, explicitly, separated by commas or spaces: split.test_records")
    split.add_argument("--patient-pattern", metavar="REGEX", default=None,
                       help="regular expression extracting the patient id from a record name (its group 'patient', "
                            "else its first group, else the match); the split keeps patients whole: "
                            "split.patient_pattern")


def _value(k: ConfigKey, value: Any) -> Any:
    if k.name == "lead" and isinstance(value, str) and value.isdigit():
        return int(value)
    if float in k.kind and isinstance(value, float) and value.is_integer():
        return int(value)  # `--fs 250` keeps config.json's 250, as the study file writes it
    return value


def record_names(values: str | Iterable[str], flag: str = "--records") -> list[str]:
    """Record names as a command line gives them: `100,101,103`, `100 101 103`, `100, 101` or several
    arguments of either, in order, duplicates dropped. The one parser of `--records` and `--test-records`
    of `hlm-train prepare`, `hlm-train train` and `cockpit demo`. ValueError (naming `flag`) when none."""
    items = [values] if isinstance(values, str) else list(values)
    names: list[str] = []
    for item in items:
        for name in re.split(r"[,\s]+", str(item)):
            if name and name not in names:
                names.append(name)
    if not names:
        raise ValueError(f"{flag}: no record names in {' '.join(map(str, items))!r} "
                         "(give names separated by commas or spaces, e.g. 100,101,103)")
    return names


def _records(values: Iterable[str], flag: str) -> list[str]:
    try:
        return record_names(values, flag)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def tokenizer_from_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The tokenizer keys the command line gives (none given: an empty table), each judged by the registry's
    rule (ConfigKey.problem, as a tokenizer table's keys are): a bad value is a bad command line (UsageError,
    exit code 2), not bad data."""
    table: dict[str, Any] = {}
    for k in TOKENIZER_KEYS:
        value = getattr(args, k.name)
        if value is not None:
            table[k.name] = _records(value, "--records") if k.name == "records" else _value(k, value)
            problem = k.problem(table[k.name])
            if problem:
                raise UsageError(f"--{k.flag_name} (tokenizer.{k.name}): {problem}")
    try:
        canonical(table)  # the rules across keys: --rr-max-ms above --rr-min-ms
    except DataError as exc:
        raise UsageError(str(exc)) from None
    return table


def split_from_flags(args: argparse.Namespace) -> dict[str, Any] | None:
    """{"test_records": [...]} or {"patient_pattern": ...} from the command line, or None."""
    if args.test_records is not None and args.patient_pattern is not None:
        raise UsageError("--test-records and --patient-pattern exclude each other")
    if args.test_records is not None:
        return {"test_records": _records(args.test_records, "--test-records")}
    if args.patient_pattern is not None:
        return {"patient_pattern": args.patient_pattern}
    return None
