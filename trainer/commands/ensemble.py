"""Score several fine-tuned runs together: the mean of their class probabilities on their shared test split.

Why: one recipe's DS2 macro-F1 moves by up to 0.07 with nothing but the seed (bench/README.md), because a
few patients decide what a class means to one model. Averaging the probabilities of models trained with
different seeds is the standard way to take that chance out of the figure; on DS1's nested validation
folds it also scored higher than the members' mean (docs/training.md).

    hlm-train ensemble --out DIR RUN_DIR RUN_DIR [...]

Every member must be a finished fine-tune run (result.json completed, model.pt) whose test windows are the
same: same data, tokenizer, split, window, context, waveform and task. DIR/ensemble.json gets the members,
each member's own scores and the ensemble's `eval` in result.json's layout (docs/run-directory.md).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import torch

from runcontract.contract import (
    CONFIG_FILE,
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    RESULT_FILE,
    SCHEMA_VERSION,
    ContractError,
)
from runcontract.files import write_json
from runcontract.modes import make_dirs
from runcontract.records import read_config, read_result
from trainer import rundir
from trainer.config_keys import TRAINER_KEYS
from trainer.data import DataError
from trainer.model import HeartLanguageModel, ModelConfig
from trainer.parallelism import distributed
from trainer.run import checkpoint, sources
from trainer.scoring import evaluate
from trainer.settings import ConfigError, Settings, from_config

# what makes two runs' test windows the same windows; anything else (seed, steps, lr, ...) may differ
SAME_TEST_WINDOWS = tuple(k.name for k in TRAINER_KEYS if k.windows)  # the registry marks them


class MeanProbabilities(torch.nn.Module):
    """Members in, one classifier out: log of the mean of the members' softmax (argmax = the ensemble's
    class; the log keeps it a logit-like output for anything that expects one)."""

    def __init__(self, members: list[torch.nn.Module]) -> None:
        super().__init__()
        self.members = torch.nn.ModuleList(members)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        probs = torch.stack([m(tokens).float().softmax(dim=-1) for m in self.members]).mean(dim=0)
        return probs.clamp_min(1e-12).log()


def member_settings(run_dir: Path) -> tuple[Settings, dict[str, Any]]:
    """A member's settings and result; ConfigError naming the file when it is not a finished fine-tune."""
    config_path = run_dir / CONFIG_FILE
    try:
        s = from_config(run_dir, read_config(run_dir), str(config_path))
    except ContractError as exc:
        raise ConfigError(str(exc)) from exc
    if s.axes.mode != "finetune":
        raise ConfigError(f"{config_path}: mode: expected 'finetune' (an ensemble averages classifiers), found "
                          f"{s.axes.mode!r}")
    result = read_result(run_dir)
    if not result or result.get("status") != "completed":
        raise ConfigError(f"{run_dir / RESULT_FILE}: expected a completed run's result, found "
                          f"{'none' if not result else repr(result.get('status'))}")
    if not (run_dir / rundir.MODEL_FILE).exists():
        raise ConfigError(f"{run_dir / rundir.MODEL_FILE}: missing (the run's final weights)")
    return s, result


def check_same_windows(runs: list[tuple[Path, Settings]]) -> None:
    """ConfigError naming the first member and key whose test windows would differ from the first's."""
    (first_dir, first), rest = runs[0], runs[1:]
    for run_dir, s in rest:
        for key in SAME_TEST_WINDOWS:
            a, b = first.value(key), s.value(key)
            if a != b:
                raise ConfigError(f"{run_dir / CONFIG_FILE}: {key} = {b!r}, but {first_dir / CONFIG_FILE} "
                                  f"has {a!r}: the members of an ensemble must score the same test windows")


def load_member(run_dir: Path, device: torch.device) -> HeartLanguageModel:
    try:
        payload = checkpoint.load(run_dir / rundir.MODEL_FILE)
        model = HeartLanguageModel(ModelConfig(**payload["model_config"]))
        model.load_state_dict(payload["model"])
    except (KeyError, TypeError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"{run_dir / rundir.MODEL_FILE}: not a fine-tuned model's weights ({exc})") from exc
    return model.to(device).eval()


def score(out: Path, members: list[Path], device: str = "auto") -> dict[str, Any]:
    """Score the members' mean probabilities on their test split; writes and returns ensemble.json."""
    runs = [(m, *member_settings(m)) for m in members]
    check_same_windows([(m, s) for m, s, _ in runs])
    d = distributed.setup(device)
    if d.enabled:
        raise ConfigError("hlm-train ensemble runs as one process (not under torchrun)")
    data = sources.load(runs[0][1], d)
    if data.test is None:
        raise DataError(f"{members[0]}: the members have no test split to score")
    model = MeanProbabilities([load_member(m, d.device) for m, _, _ in runs])
    scores = evaluate.classify(model, data.test, data.classes, d, records=data.test_item_records)
    summary = {
        "schema_version": SCHEMA_VERSION,
        "how": "mean of the members' class probabilities",
        "members": [{"run_dir": str(m), "seed": s.train.seed, "eval": {k: r["eval"].get(k) for k in
                                                                 ("macro_f1", "macro_f1_nsvf", "accuracy",
                                                                  "sensitivity")}}
                    for m, s, r in runs],
        "test_records": data.info.get("test_records"),
        "eval": {"split": "test", **scores},
    }
    make_dirs(out)
    write_json(out / rundir.ENSEMBLE_FILE, summary)
    return summary


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    if len(args.members) < 2:
        print("hlm-train: give at least two run directories", file=sys.stderr)
        return EXIT_USAGE
    try:
        summary = score(args.out, args.members, args.device)
    except ConfigError as exc:
        print(f"hlm-train: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except DataError as exc:
        print(f"hlm-train: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    ev = summary["eval"]
    print(f"{args.out / rundir.ENSEMBLE_FILE}: {len(args.members)} members, {ev['samples']:,} test windows, macro-F1 "
          f"{ev['macro_f1']:.3f}" + (f" (N,S,V,F {ev['macro_f1_nsvf']:.3f})" if ev.get("macro_f1_nsvf") is not None
                                     else ""))
    return EXIT_OK
