"""The project's own trainer (`python -m trainer`): the default workload, with every axis and the study's data."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.workloads.base import ConfigurationParts, KeyTable, StudyParts, Workload, WorkloadError, flatten
from cockpit.workloads.hlm.footprint import shard_bytes
from cockpit.workloads.hlm.key_tables import KEY_TABLES
from cockpit.workloads.hlm.model_size import configuration_parameters
from runcontract.axes import AXES
from runcontract.keys import Effect
from trainer.config_keys import BY_NAME, EFFECTS, tokenizer_defaults
from trainer.rundir import LOG_FILE, MODEL_FILE

# config.json's entries that decide what the trainer reads and builds (the token cache's place and the prepare
# step's processes decide only where and how fast the shards are made)
RUN_KEYS = ("data_path", "synthetic", "synthetic_params", "tokenizer", "skip_bad_records", "split", "train_data",
            "model", "train")
# [model] and [train] keys as config.json spells them, with the default the trainer takes when one is left out
DEFAULTS = {k.dest: k.default for k in BY_NAME.values()
            if k.study and not k.top_level and k.dest.split(".")[0] in ("model", "train")}
# a fine-tune's start, `.../runs/<id>/model.pt`: the same foundation wherever the study's folder now lies
RUN_PATH = re.compile(r"^.*/(runs/[^/]+/[^/]+)$")


@dataclass(frozen=True)
class HlmWorkload(Workload):
    """`trainer prepare` once, then `trainer train` on every worker; config.json as trainer.settings reads it."""

    kind = "hlm"
    axes = AXES
    reads_study_data = True
    log_files = (LOG_FILE,)
    model_shape_known = True

    @classmethod
    def from_table(cls, where: str, table: dict[str, Any], study_dir: Path | None) -> HlmWorkload:
        extra = sorted(set(table) - {"kind"})
        if extra:
            raise WorkloadError(f"{where}: [workload].{extra[0]} is a script workload's key; kind = \"hlm\" (the "
                                "default) takes none: its keys are [model], [train] and [sweep]")
        return cls()

    def prepare_args(self, run_dir: str) -> list[str] | None:
        return ["-m", "trainer", "prepare", "--run-dir", run_dir]

    def worker_args(self, values: Mapping[str, Any], run_dir: str) -> list[str]:
        return ["-m", "trainer", "train", "--run-dir", run_dir]

    def run_config(self, study: StudyParts, cfg: ConfigurationParts) -> dict[str, Any]:
        dataset = study.datasets[cfg.dataset]
        train = {k: v for k, v in study.train.items() if k not in AXES and v is not None}
        foundation = study.foundation_of(cfg)
        if foundation is not None and not train.get("init_checkpoint"):
            train["init_checkpoint"] = f"{study.run_dir(foundation)}/{MODEL_FILE}"
        return {
            **cfg.values(),
            "data_path": dataset.path,
            "synthetic": dataset.synthetic,
            "synthetic_params": dataset.synthetic_params,
            "tokenizer": dataset.tokenizer,
            **({"skip_bad_records": True} if dataset.skip_bad_records else {}),
            **({"split": dict(dataset.split)} if dataset.split else {}),
            **({"train_data": list(dataset.train_data)} if dataset.train_data else {}),
            "token_cache": study.token_cache,
            "prepare_workers": study.prepare_workers,
            "model": dict(study.model),
            "train": train,
        }

    @classmethod
    def counted_keys(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        tables = {k: config[k] for k in RUN_KEYS if k in config}
        tokenizer = tables.get("tokenizer")
        if isinstance(tokenizer, dict):  # a key the trainer fills in: a run of an earlier release left it out
            tables["tokenizer"] = {**tokenizer_defaults(str(tokenizer.get("name") or "samples")), **tokenizer}
        out = {**DEFAULTS, **flatten(tables)}
        start = out.get("train.init_checkpoint")
        if isinstance(start, str) and (match := RUN_PATH.match(start)):
            out["train.init_checkpoint"] = match.group(1)
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def key_effects(cls) -> Mapping[str, Effect]:
        return EFFECTS

    @classmethod
    def config_defaults(cls) -> Mapping[str, Any]:
        return DEFAULTS

    def preflight_data(self, study: StudyParts) -> dict[str, Any]:
        datasets = {name: {"path": d.path, "synthetic": d.synthetic, "tokenizer": dict(d.tokenizer)}
                    for name in study.sweep["dataset"] for d in (study.datasets[name],)}
        return {"datasets": datasets, "token_cache": study.token_cache}

    def data_bytes(self, study: StudyParts, workdir: str, dataset_bytes: Mapping[str, int] | None = None
                   ) -> tuple[int, str]:
        return shard_bytes(study, workdir, dataset_bytes)

    def parameters(self, study: StudyParts, cfg: ConfigurationParts) -> int:
        return configuration_parameters(study.model, study.datasets[cfg.dataset].tokenizer, cfg.values())

    @classmethod
    def key_tables(cls) -> tuple[KeyTable, ...]:
        return KEY_TABLES
