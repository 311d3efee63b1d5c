"""The HLM trainer's study tables the cockpit reads for it: [data] and a dataset's table ([data.datasets.NAME]),
with the split keys they share."""

from __future__ import annotations

from runcontract.keys import ConfigKey
from trainer.config_keys.sections import _folders

_SPLIT = (
    ConfigKey("data", "test_records", (list,), help="the test split, explicitly"),
    ConfigKey("data", "patient_pattern", (str,), help="regular expression extracting the patient id"),
)
SPLIT_KEYS = tuple(k.name for k in _SPLIT)  # a split is one of them (trainer.data.splits.check_options)
DATA_KEYS = (
    ConfigKey("data", "datasets", (dict,), {}, help="one table per dataset (see [data.datasets.NAME])"),
    ConfigKey("data", "tokenizer", (dict,), {}, help="the tokenizer of every dataset (see [data.tokenizer])"),
    ConfigKey("data", "token_cache", (str,), help="token shard root (default: <workdir>/<study>/tokens)"),
    ConfigKey("data", "prepare_workers", (int,), 1, minimum=1, help="processes tokenizing, one record each"),
    ConfigKey("data", "skip_bad_records", (bool,), False, help="leave bad records out (listed with the reason)"),
    *_SPLIT,
)
DATASET_KEYS = (  # a table of [data.datasets]
    ConfigKey("dataset", "path", (str,), help="a PhysioNet-style folder (RECORDS or *.hea) where the jobs run"),
    ConfigKey("dataset", "synthetic", (bool,), False, help="the built-in synthetic ECG generator instead of path"),
    ConfigKey("dataset", "tokenizer", (dict,), {}, help="this dataset's tokenizer keys over [data.tokenizer]"),
    ConfigKey("dataset", "records", (int,), 8, minimum=1, help="synthetic: records generated"),
    ConfigKey("dataset", "seconds", (float,), 300, minimum=1, unit="s", help="synthetic: seconds per record"),
    ConfigKey("dataset", "seed", (int,), 0, help="synthetic: generator seed"),
    ConfigKey("dataset", "skip_bad_records", (bool,), help="over [data].skip_bad_records for this dataset"),
    ConfigKey("dataset", "train_data", (list,), help="further PhysioNet-style folders (as path: where the jobs "
              "run) whose every record trains, never tests; mixed at one rate, the tokenizer's fs "
              "(docs/training.md)", rule=_folders, expected_words="a non-empty list of folder paths"),
    *(ConfigKey("dataset", k.name, k.kind, help=k.help) for k in _SPLIT),
)

