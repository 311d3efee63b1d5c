"""The trainer's own sections as dataclasses whose fields carry their rules (`key(...)`): [model], [train], config.json's run identity and data keys, a preflight's config.json and a tokenizer table.
`trainer.settings.Settings` nests them, typed. Long because it is a table, one entry per key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runcontract.keys import NAMES_RUN, NEUTRAL, NOT_PREDICTED, ConfigKey, Effect, _finite_number, key
from runcontract.modes import is_group_name
from trainer.config_keys.choices import (
    ANNOTATOR_PREFERENCE,
    CLASS_WEIGHTS,
    CONTEXTS,
    DEVICES,
    N_SPECIAL,
    POOLS,
    TASKS,
    TOKENIZERS,
    WAVEFORMS,
    sensitivity_floors,
)

# --- the trainer's sections: dataclasses that trainer.settings.Settings nests ---------------------------------

@dataclass(frozen=True)
class ModelKeys:
    """[model]: the architecture (config.json "model")."""

    layers: int = key(4, "transformer layers", minimum=1, resume=True, effect=NOT_PREDICTED)
    d_model: int = key(128, "width of the model (divisible by heads)", minimum=8, resume=True, effect=NOT_PREDICTED)
    heads: int = key(4, "attention heads", minimum=1, resume=True, effect=NOT_PREDICTED)
    dropout: float = key(0.0, "dropout probability", minimum=0, below=1, effect=NOT_PREDICTED)
    context: str = key("none", "'rr': RR-interval tokens of the centre beat before each window; 'rr_rhythm': "
                       "the same and the rhythm's irregularity over 64 beats; 'rr_af': the same RR tokens and "
                       "the irregularity no repeating pattern explains (atrial fibrillation's); 'rr_af_lock': "
                       "those and the AF evidence, that irregularity where no P wave keeps time with the QRS "
                       "(samples tokenizer); 'rr_af_lock_sinus': those and the interval before the beat against the "
                       "patient's sinus interval (the longest intervals around it)", choices=CONTEXTS,
                       resume=True, windows=True, effect=NOT_PREDICTED)
    waveform: str = key("raw", "samples windows as tokenized ('raw'), minus the patient's template beat "
                        "('diff'), or the window followed by its difference ('both': twice the tokens)",
                        choices=WAVEFORMS, resume=True, windows=True, effect=NOT_PREDICTED)
    pool: str = key("mean", "fine-tune head input: 'mean' over positions or the 'centre' beat's", choices=POOLS,
                    resume=True, effect=NOT_PREDICTED)


@dataclass(frozen=True)
class TrainKeys:
    """[train]: the run (config.json "train")."""

    steps: int | None = key(None, "optimizer steps (give steps or epochs)", minimum=1, resume=True, effect=Effect("formula", (), "samples x steps'/steps"))
    epochs: float | None = key(None, "passes over the training split (give steps or epochs)", above=0, resume=True, effect=Effect("formula", (), "samples x epochs'/epochs"))
    lr: float = key(3e-4, "peak learning rate (AdamW)", above=0, resume=True, effect=NEUTRAL)
    weight_decay: float = key(0.01, "AdamW weight decay", minimum=0, effect=NEUTRAL)
    warmup_steps: int = key(0, "linear warm-up steps", minimum=0, resume=True, effect=NEUTRAL)
    seed: int = key(0, "random seed", resume=True, effect=NEUTRAL)
    grad_accum: int = key(1, "micro-batches per optimizer step", minimum=1, resume=True, effect=Effect("formula", ("comm", "optimizer", "other"), "f = a'/a micro-batches per step: as batch_size"))
    compile: bool = key(False, "torch.compile the model", effect=NOT_PREDICTED)
    device: str = key("auto", "where to train: auto takes a GPU when there is one", choices=DEVICES, effect=NOT_PREDICTED)
    metrics_interval_s: float = key(5.0, "seconds between metrics.jsonl records", above=0, unit="s", effect=NEUTRAL)
    nvml_interval_ms: int = key(500, "milliseconds between GPU samples (gpu.jsonl)", minimum=10, unit="ms", effect=NEUTRAL)
    eval: bool = key(True, "evaluate on the test split at the end", effect=NEUTRAL)
    task: str = key("beat", "fine-tune labels: beat classes or rhythm classes", choices=TASKS, resume=True,
                    windows=True, effect=NOT_PREDICTED)
    init_checkpoint: str | None = key(None, "weights to start from (a fine-tune: its foundation's model.pt)", effect=NEUTRAL)
    mask_ratio: float = key(0.15, "foundation: share of tokens masked", above=0, below=1, resume=True, effect=NOT_PREDICTED)
    mask_span: int = key(8, "foundation: tokens per masked span", minimum=1, resume=True, effect=NOT_PREDICTED)
    num_workers: int | None = key(None, "DataLoader workers (default: cpus_per_task - 1)", minimum=0, effect=Effect("none", ("data_wait",)))
    grad_clip: float = key(1.0, "gradient norm clip (0 = off)", minimum=0, effect=NOT_PREDICTED)
    class_weights: str = key("balanced", "fine-tune loss weights per class", choices=CLASS_WEIGHTS, effect=NOT_PREDICTED)
    augment_noise_db: list | None = key(None, "fine-tune: also train on noisy versions of the training records, one "
                                        "per signal-to-noise ratio given (the tokenizer's motion noise, "
                                        "trainer/data/noise.py); validation and test stay clean", unit="dB",
                                        rule=lambda v: all(_finite_number(x) for x in v),
                                        expected_words="a list of signal-to-noise ratios in dB, e.g. [18, 12, 6]",
                                        effect=NOT_PREDICTED)
    augment_share: float = key(0.5, "fine-tune with augment_noise_db: share of the training windows drawn, anew "
                               "each epoch, from a noisy version (the levels equally often)", above=0, maximum=1,
                               effect=NOT_PREDICTED)
    context_dropout: float = key(0.0, "fine-tune with model.context: share of the training windows whose context "
                                 "tokens are hidden (the mask token), drawn anew each epoch, so the class is also "
                                 "learnt from the waveform; validation and test see every token", minimum=0, below=1,
                                 effect=NOT_PREDICTED)
    af_group: bool = key(False, "fine-tune, beat classes: N beats inside atrial fibrillation or flutter (the records' "
                         "rhythm annotations) weigh in the loss as a group of their own, with its own class weight; "
                         "they stay N everywhere else (needs class weights)", effect=NOT_PREDICTED)
    val_fraction: float = key(0.0, "fine-tune: share of training patients held out for validation", minimum=0,
                              below=1, resume=True, effect=NOT_PREDICTED)
    val_records: list | None = key(None, "fine-tune: the validation part by name: these training records and every "
                                   "other record of their patients, instead of val_fraction's evenly spaced share "
                                   "(names as the split gives them, e.g. 201 or svdb/854)", resume=True,
                                   rule=lambda v: len(v) > 0 and all(isinstance(x, str | int) for x in v),
                                   expected_words="a non-empty list of record names, e.g. [\"201\", \"203\"]",
                                   effect=NOT_PREDICTED)
    label_fraction: float = key(1.0, "fine-tune: share of the training patients (validation's apart) whose labels "
                                "it trains on, evenly spaced: label efficiency", above=0, maximum=1, resume=True,
                                effect=NOT_PREDICTED)
    val_every: int = key(200, "fine-tune: validate every this many steps (and after the last)", minimum=1, resume=True, effect=NOT_PREDICTED)
    patience: int = key(0, "fine-tune: stop after this many validations without a better macro-F1 (0 = never)",
                        minimum=0, effect=NOT_PREDICTED)
    calibrate: bool = key(False, "fine-tune: after training, move the class head's bias by -a x log(class weight), "
                          "a in 0..1 chosen on the validation part's macro-F1, for the classes it holds 100 beats of "
                          "(needs val_fraction or val_records, and class weights)", effect=NOT_PREDICTED)
    calibrate_min_sensitivity: list | None = key(
        None, "fine-tune with calibrate: sensitivity floors on the validation part, CLASS=FLOOR each (e.g. S=0.8): the "
        "decision kept is the best macro-F1 among those whose validation sensitivity reaches every floor, else the one "
        "nearest them, said in train.log", rule=lambda v: sensitivity_floors(v) is not None,
        expected_words="a list of CLASS=FLOOR entries, each class once, each floor above 0 and at most 1, e.g. "
        "[\"S=0.8\", \"V=0.9\"]", effect=NOT_PREDICTED)
    bucket_cap_mb: float | None = key(None, "DDP gradient bucket size in MB (default: DDP's 25)", above=0,
                                      unit="MB", effect=Effect("formula", ("comm",), "DDP buckets k = ceil(G / cap): exposed all-reduce max(t_ar / k, t_ar - backward)"))
    batch_probe: bool = key(False, "a 1-worker run times forward and backward at its batch and at twice it at "
                            "start-up (outside T; result.json batch_probe), so that the prediction prices compute at "
                            "another batch size from two measured points (docs/prediction.md, \"Compute per sample "
                            "at another batch size\")", effect=NEUTRAL)
    # torch.profiler, torchtitan-style: cycles of wait, warmup and active steps (torch.profiler.schedule), each
    # recorded into traces/ per rank; unset profile_active = no profiler at all (docs/training.md, "Profiling")
    profile_active: int | None = key(None, "torch.profiler: steps recorded per cycle into traces/ of the run "
                                     "directory, one Chrome trace per rank (default: no profiling)", minimum=1, effect=NOT_PREDICTED)
    profile_wait: int | None = key(None, "torch.profiler: steps left alone before each cycle (default 1: the "
                                   "first step holds loader start and compilation)", minimum=0, effect=NOT_PREDICTED)
    profile_warmup: int | None = key(None, "torch.profiler: steps run under the profiler and discarded before "
                                     "the recorded ones (default 1)", minimum=0, effect=NOT_PREDICTED)
    profile_repeat: int | None = key(None, "torch.profiler: cycles to record (default 1; 0 = until the run ends)",
                                     minimum=0, effect=NOT_PREDICTED)
    # test hooks: make one rank slower by a host sleep inside each step's compute (a known straggler)
    test_slow_rank: int | None = key(None, "test only: the rank that sleeps", study=False, flag="", effect=NOT_PREDICTED)
    test_slow_step_s: float = key(0.0, "test only: its sleep per step", minimum=0, study=False, flag="", effect=NOT_PREDICTED)


@dataclass(frozen=True)
class RunKeys:
    """The run's identity in config.json, written by the cockpit (not a study key)."""

    schema_version: int | None = key(None, "the run directory's schema version (runcontract.contract.SCHEMA_VERSION)",
                                     study=False, flag="", effect=NAMES_RUN)
    study: str = key("", "the study's name", study=False, flag="", effect=NAMES_RUN)
    study_id: str | None = key(None, "the study name's digest (Slurm job names and comments carry it)",
                               study=False, flag="", effect=NAMES_RUN)
    config_id: str = key("standalone", "the configuration's digest", study=False, flag="", effect=NAMES_RUN)
    group_id: str = key("standalone", "its scale group's digest", study=False, flag="", effect=NAMES_RUN)
    share_group: str | None = key(None, "the Unix group the run's files are shared with ([cluster].share_group); "
                                  "unset: private to the owner (0700 / 0600)", study=False, flag="",
                                  rule=is_group_name, expected_words="a Unix group name", effect=NAMES_RUN)
    launch: dict | None = key(None, "how the job started: [cluster]'s container, python, modules and env (the "
                              "cockpit compares a finished run's with what the study asks now)", study=False, flag="",
                              effect=NAMES_RUN)


def _preflight_files(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(p, str) and p for p in v)


def _preflight_datasets(v: Any) -> bool:
    """{name: {path, synthetic, tokenizer}}: the datasets a preflight checks, as job_config writes them."""
    return all(isinstance(spec, dict) and set(spec) <= {"path", "synthetic", "tokenizer"}
               and isinstance(spec.get("path"), str | None) and isinstance(spec.get("synthetic", False), bool)
               and isinstance(spec.get("tokenizer", {}), dict) for spec in v.values())


@dataclass(frozen=True)
class PreflightKeys:
    """A preflight job's config.json: cockpit.preflight.jobs.job_config writes it and judges what it wrote by these
    keys, `hlm-train preflight` reads it by the same keys (check_preflight_config)."""

    schema_version: int = key(None, "the run directory's schema version", minimum=1, required=True)
    preflight: bool = key(True, "marks a preflight's config.json", required=True)
    study: str = key("", "the study's name", required=True)
    nodes: int = key(1, "nodes the job spans", minimum=1)
    gpus_per_node: int = key(1, "workers per node", minimum=1)
    cpus_per_task: int = key(1, "CPU cores per worker", minimum=1, unit="cores")
    device: str = key("auto", "where the job probes: auto takes a GPU when there is one", choices=DEVICES)
    datasets: dict = key({}, "each dataset the study trains on, to check where the job runs",
                         rule=_preflight_datasets,
                         expected_words="a table of dataset name = {path, synthetic, tokenizer}")
    workdir: str | None = key(None, "where the study's runs write (its free space is read)")
    token_cache: str | None = key(None, "the token shard root (its free space is read)")
    probe_bytes: int = key(8 * 2**20, "bytes the link probe all-reduces", minimum=4, unit="B")
    timeout_s: float = key(300.0, "seconds the ranks wait for each other", above=0, unit="s")
    share_group: str | None = key(None, "the Unix group the job's files are shared with (unset: private)",
                                  rule=is_group_name, expected_words="a Unix group name")
    files: list | None = key(None, "a script workload's script and files, checked readable where the job runs",
                             rule=_preflight_files, expected_words="a list of paths")


def _folders(v: Any) -> bool:
    return bool(v) and all(isinstance(p, str) and p for p in v)


@dataclass(frozen=True)
class DataKeys:
    """The data keys of config.json, written by the cockpit from the study's [data] tables."""

    data_path: str | None = key(None, "a PhysioNet-style folder (RECORDS file or *.hea); unset: synthetic",
                                study=False, flag="data", windows=True, effect=NOT_PREDICTED)
    train_data: list | None = key(None, "further PhysioNet-style folders whose every record trains (validation "
                                  "included), never tests; tokenized like data_path, resampled to tokenizer.fs",
                                  study=False, windows=True, rule=_folders,
                                  expected_words="a non-empty list of folder paths", effect=NOT_PREDICTED)
    synthetic: bool = key(False, "the built-in generator's ECG (no data_path)", study=False, flag="", effect=NOT_PREDICTED)
    tokenizer: dict = key(None, "the tokenizer table (see TOKENIZER_KEYS)", study=False, flag="", windows=True, effect=NOT_PREDICTED)
    token_cache: str | None = key(None, "token cache root", study=False, effect=NAMES_RUN)
    prepare_workers: int = key(1, "processes tokenizing, one record each at a time", minimum=1, study=False,
                               flag="", effect=NEUTRAL)
    synthetic_params: dict | None = key(None, "the generator's records, seconds and seed", study=False, flag="",
                                        windows=True, effect=NOT_PREDICTED)
    skip_bad_records: bool = key(False, "leave out bad records (listed with their reason in the manifest and "
                                 "train.log)", study=False, flag="", windows=True, effect=NOT_PREDICTED)
    split: dict | None = key(None, "{test_records: [...]} or {patient_pattern: ...}; unset: the default split",
                             study=False, flag="", windows=True, effect=NOT_PREDICTED)


def _is_annotator(v: Any) -> bool:
    return v.replace("_", "").isalnum()


# the tokenizer table ([data.tokenizer], a dataset's tokenizer, config.json "tokenizer"); trainer.data.
# tokenizer_keys validates a whole table with these (plus rr_max_ms > rr_min_ms)
_S, _B = ("samples",), ("beats",)
_TOKENIZER: tuple[tuple[str, tuple[type, ...], Any, dict[str, Any]], ...] = (
    ("name", (str,), "samples", {"help": "samples (one token per sample) or beats (one per beat)",
                                 "choices": TOKENIZERS, "flag": "tokenizer"}),
    ("vocab", (int,), 256, {"help": "samples: amplitude bins", "minimum": 2, "maximum": 65535 - N_SPECIAL,
                            "tokenizers": _S}),
    ("quantizer", (str,), "mulaw", {"help": "samples: uniform or mulaw bins", "choices": ("uniform", "mulaw"),
                                    "tokenizers": _S}),
    ("mu", (float,), 15, {"help": "samples: mu-law compression", "above": 0, "tokenizers": _S}),
    ("lead", (int, str), 0, {"help": "samples: lead index or name", "tokenizers": _S,
                             "expected_words": "a lead index or name"}),
    ("fs", (float,), 360, {"help": "samples: resample to this rate (0 keeps each record's)", "minimum": 0,
                           "unit": "Hz", "tokenizers": _S,
                           "expected_words": "a sampling rate in Hz (0 keeps each record's own)"}),
    ("clip_percentile", (float,), 0.1, {"help": "samples: amplitude percentile clipped at each end",
                                        "minimum": 0, "below": 50, "tokenizers": _S}),
    ("margin", (float,), 0.1, {"help": "samples: headroom beyond the clipped range", "minimum": 0, "maximum": 10,
                               "tokenizers": _S}),
    ("highpass_hz", (float,), 0.0, {"help": "samples: remove baseline wander below this frequency (0 = off)",
                                    "minimum": 0, "below": 20, "unit": "Hz", "tokenizers": _S, "flag": "highpass",
                                    "expected_words": "a cut-off in Hz in [0, 20) (0 = off)"}),
    ("noise_snr_db", (float,), None, {"help": "samples: add electrode-motion-like noise at this signal-to-noise "
                                              "ratio (the Noise Stress Test's definition; trainer/data/noise.py); "
                                              "unset: none", "unit": "dB", "tokenizers": _S, "flag": "noise-snr",
                                      "expected_words": "a signal-to-noise ratio in dB"}),
    ("noise_seed", (int,), 0, {"help": "samples: which draw of the noise (the same seed, the same noisy record)",
                               "minimum": 0, "tokenizers": _S}),
    ("annotator", (str,), "auto", {"help": "annotation file extension (atr, ari, qrs, ...); auto tries the "
                                           "extensions of the folder's ANNOTATORS file in its order, then "
                                           + ", then ".join(ANNOTATOR_PREFERENCE) + ", and stops at the first "
                                           "the record has",
                                   "tokenizers": ("samples", "beats"), "rule": _is_annotator,
                                   "expected_words": "an annotator extension such as 'atr', 'ari' or 'auto'"}),
    ("rr_bins", (int,), 16, {"help": "beats: RR-interval bins", "minimum": 2, "maximum": 4096, "tokenizers": _B}),
    ("rr_min_ms", (float,), 200, {"help": "beats: shortest RR interval binned", "above": 0, "unit": "ms",
                                  "tokenizers": _B}),
    ("rr_max_ms", (float,), 2000, {"help": "beats: longest RR interval binned (above rr_min_ms)", "above": 0,
                                   "unit": "ms", "tokenizers": _B}),
    ("records", (list,), None, {"help": "only these records of the dataset, separated by commas or spaces"}),
)
TOKENIZER_KEYS = tuple(ConfigKey("tokenizer", name, kind, default, **rules) for name, kind, default, rules in _TOKENIZER)
NOISE_KEYS = ("noise_snr_db", "noise_seed")  # the tokenizer keys that make a record's noisy version (data/noise.py)

