"""The HLM trainer's sections of docs/study-keys.md (cockpit.study.key_doc writes the page): its study tables,
config.json's keys no study file says and a preflight's config.json."""

from __future__ import annotations

from cockpit.workloads.base import KeyTable
from trainer.config_keys import (
    DATA_KEYS,
    DATASET_KEYS,
    PREFLIGHT_KEYS,
    TOKENIZER_KEYS,
    TRAINER_KEYS,
    section_keys,
)

KEY_TABLES = (
    KeyTable("[data]", "The datasets and how they are tokenized (docs/data.md).", DATA_KEYS),
    KeyTable("[data.datasets.NAME]", "One table per dataset; NAME is what `[sweep].dataset` lists.", DATASET_KEYS),
    KeyTable("[data.tokenizer]", "The tokenizer of every dataset; a dataset's `tokenizer` table overrides single "
             "keys. *tokenizers* says which tokenizer reads the key.", TOKENIZER_KEYS,
             ("tokenizers",), lambda k: (", ".join(k.tokenizers),)),
    KeyTable("[model]", "The architecture.", tuple(section_keys("model", study=True))),
    KeyTable("[train]", "The run. The sweep axes a study may fix here (`window`, `mode`, ...) are the defaults of "
             "those not listed in `[sweep]`.", tuple(section_keys("train", study=True))),
    KeyTable("config.json only", "Keys the cockpit writes into each run's config.json (or test hooks), not said in "
             "a study file; `hlm-train train` reads them (docs/run-directory.md).",
             tuple(k for k in TRAINER_KEYS if not k.study and k.axis is None), name=lambda k: k.dest),
    KeyTable("a preflight's config.json", "Keys the cockpit writes into a preflight job's config.json "
             "(`cockpit preflight`), never said in a study file; `hlm-train preflight` judges them by these rules "
             "(docs/run-directory.md, \"The preflight's directory\").", PREFLIGHT_KEYS),
)
