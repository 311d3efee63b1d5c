"""Windows over prepared token shards, as a torch Dataset.

A window is cut at load time from memory-mapped per-record token streams, so every window length
uses the same shards. __getitem__ is one memmap slice plus a dtype conversion; only windows that
run past a record's edge are padded (with the pad token).

Items by tokenizer and task:
- samples (all tasks): one window of W samples centred on each beat; foundation takes every beat
  (label -1), beat the beats with an AAMI class (label 0..4), rhythm those with a known rhythm.
- beats: foundation and rhythm tile each record with windows of W beats (stride W unless given;
  rhythm label = the rhythm at the window's centre beat); beat centres a window on each beat and
  replaces that beat's own token with the mask token, since a beats token carries the beat's class.

With `context="rr"` each item starts with the RR-interval tokens of its centre beat
(trainer.data.rr_context): the intervals that define S and V beats, which a short window of samples
does not reach. Items are then `context_length + W` tokens long.

With `waveform="diff"` (samples only) a window holds its difference from the record's template beat
(trainer.data.beat_template): what makes this beat unlike the patient's own typical beat. With
`waveform="both"` the window as tokenized comes first and its difference after it (2W tokens): the beat's
own shape, which a patient's S beats share when they are most of that patient's beats, and what sets it
apart from the patient's typical beat.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from trainer.data.atrial_lock import atrial_lock
from trainer.data.beat_template import block_of, check_waveform, difference, record_templates
from trainer.data.errors import DataError
from trainer.data.labels import AF_RHYTHMS, BEAT_CLASSES
from trainer.data.rr_context import (
    WAVEFORM_CONTEXTS,
    beats_token_rr_ms,
    check_context,
    context_length,
    context_tokens,
    extra_vocab,
    rr_features,
)
from trainer.data.shards import MANIFEST, SHARD_SCHEMA, array_path
from trainer.data.splits import manifest_split
from trainer.data.tokenizers import N_SPECIAL

TASKS = ("foundation", "beat", "rhythm")


class Manifest(dict):
    """manifest.json as a dict (every field, see docs/data.md) with typed accessors for the common ones."""

    path: Path

    @property
    def shard_dir(self) -> Path:
        return self.path.parent

    @property
    def vocab_size(self) -> int:
        return int(self["vocab_size"])

    @property
    def pad_id(self) -> int:
        return int(self["special_tokens"]["pad"])

    @property
    def mask_id(self) -> int:
        return int(self["special_tokens"]["mask"])

    @property
    def n_classes(self) -> int:
        return int(self["n_classes"])

    @property
    def n_rhythm_classes(self) -> int:
        return int(self["n_rhythm_classes"])

    @property
    def synthetic(self) -> bool:
        return bool(self["synthetic"])

    @property
    def tokenizer(self) -> str:
        return str(self["tokenizer"])

    @property
    def records(self) -> list[dict[str, Any]]:
        return list(self["records"])

    @property
    def record_names(self) -> list[str]:
        return [r["name"] for r in self["records"]]


def load_manifest(shard_dir: str | Path) -> Manifest:
    """Read and check a shard folder's manifest; DataError (naming the file) if absent or malformed."""
    path = Path(shard_dir) / MANIFEST
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: not found (the shards were never prepared or a prepare was interrupted; "
                        "run `hlm-train prepare`)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected a JSON object")
    if raw.get("schema_version") != SHARD_SCHEMA:
        raise DataError(f"{path}: schema_version {raw.get('schema_version')!r}, this trainer reads {SHARD_SCHEMA}; "
                        "prepare the data again")
    for key in ("vocab_size", "special_tokens", "records", "tokenizer", "n_classes", "n_rhythm_classes"):
        if key not in raw:
            raise DataError(f"{path}: missing key {key!r}")
    manifest = Manifest(raw)
    manifest.path = path
    return manifest


def split_records(manifest: Manifest | dict[str, Any], split: str, options: dict[str, Any] | None = None) -> list[str]:
    """Record names of a split ("train", "test", "all"; "DS1"/"DS2"); see manifest_split. May be empty."""
    return manifest_split(manifest, options).names(split)


class WindowDataset(Dataset):
    """(tokens LongTensor[W], label int) windows over one shard folder; label -1 where there is none."""

    def __init__(self, shard_dir: str | Path, window: int, task: str | None = "foundation",
                 records: list[str] | None = None, stride: int | None = None, context: str | None = None,
                 waveform: str | None = None) -> None:
        self.shard_dir = Path(shard_dir)
        self.manifest = load_manifest(self.shard_dir)
        task = task or "foundation"
        if task not in TASKS:
            raise DataError(f"task: unknown task {task!r} (expected one of: {', '.join(TASKS)})")
        try:
            self.context = check_context(context)
            self.waveform = check_waveform(waveform)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if self.context in WAVEFORM_CONTEXTS and self.manifest.tokenizer != "samples":
            raise DataError(f"{self.manifest.path}: context {self.context!r} (each beat's atrial lock) reads the "
                            f"waveform, so it needs the samples tokenizer; this shard holds "
                            f"{self.manifest.tokenizer!r} tokens")
        if self.waveform != "raw" and self.manifest.tokenizer != "samples":
            raise DataError(f"{self.manifest.path}: waveform {self.waveform!r} (the window against the patient's template beat) "
                            f"needs the samples tokenizer; this shard holds {self.manifest.tokenizer!r} tokens")
        self.context_length = context_length(self.context)
        self.vocab_size = self.manifest.vocab_size + extra_vocab(self.context)
        # a beats token carries its beat's class: the beat being classified must not show it
        self.mask_centre = self.manifest.tokenizer == "beats" and task == "beat"
        self.mask_id = self.manifest.mask_id
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            raise DataError(f"window: expected a positive number of tokens, found {window!r}")
        if stride is not None and stride < 1:
            raise DataError(f"stride: expected a positive number of tokens, found {stride!r}")
        self.window, self.task = window, task
        self.pad_id = self.manifest.pad_id
        by_name = {r["name"]: r for r in self.manifest.records}
        names = list(by_name) if records is None else list(records)
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise DataError(f"{self.manifest.path}: record(s) {', '.join(unknown)} not in dataset "
                            f"{self.manifest['dataset']!r}")
        if not names:
            raise DataError(f"{self.manifest.path}: no records selected from dataset {self.manifest['dataset']!r}")
        self.records = [by_name[n] for n in names]
        longest = max(self.records, key=lambda r: r["n_tokens"])
        if window > longest["n_tokens"]:
            raise DataError(
                f"window {window} is longer than every record of dataset {self.manifest['dataset']!r} "
                f"(longest: record {longest['name']!r}, {longest['n_tokens']} tokens); use a shorter window")
        self._items(stride)
        self._streams: dict[int, np.ndarray] = {}

    def _items(self, stride: int | None) -> None:
        """Precompute (record, start, label) of every item: __getitem__ then does no searching."""
        w, tiled = self.window, self.manifest.tokenizer == "beats" and self.task in ("foundation", "rhythm")
        rec_idx, starts, labels, contexts, blocks, beats = [], [], [], [], [], []
        self.templates: list[np.ndarray] = []
        for i, r in enumerate(self.records):
            if tiled:
                n = r["n_tokens"]
                start = np.arange(0, n - w + 1, stride or w, dtype=np.int64)
                beat = start + w // 2  # the beat a tiled window stands for: its centre
                if self.task == "rhythm":
                    lab = self._load(r, "rhythm")[beat].astype(np.int64)
                else:
                    lab = np.full(len(start), -1, dtype=np.int64)
            else:
                centre = self._load(r, "beats")
                beat = np.arange(len(centre))
                if self.task == "foundation":
                    lab = np.full(len(centre), -1, dtype=np.int64)
                else:
                    lab = self._load(r, "labels" if self.task == "beat" else "rhythm").astype(np.int64)
                start = centre - w // 2
            keep = lab >= 0 if self.task != "foundation" else np.ones(len(start), dtype=bool)
            rec_idx.append(np.full(int(keep.sum()), i, dtype=np.int32))
            starts.append(start[keep])
            beats.append(beat[keep])
            labels.append(lab[keep])
            if self.context_length:
                contexts.append(self._record_context(r)[beat[keep]])
            if self.waveform != "raw":
                self.templates.append(record_templates(self._load(r, "tokens"), start + w // 2, w, self.pad_id))
                blocks.append(block_of(beat[keep]))
        self.item_record = np.concatenate(rec_idx)
        self.item_start = np.concatenate(starts)
        self.item_beat = np.concatenate(beats)  # the item's beat (its index in the record's beat list)
        self.labels = np.concatenate(labels)
        self.item_context = (np.concatenate(contexts) if contexts
                             else np.zeros((len(self.item_start), 0), dtype=np.uint16))
        self.item_block = np.concatenate(blocks) if blocks else None

    def _record_context(self, r: dict[str, Any]) -> np.ndarray:
        """Context tokens [beats, features] of every beat of one record."""
        if self.manifest.tokenizer == "beats":
            rr_ms = beats_token_rr_ms(np.asarray(self._load(r, "tokens")), self.manifest["params"])[1:]
        else:
            beats = np.asarray(self._load(r, "beats"), dtype=np.float64)
            fs = float(r.get("fs") or self.manifest.get("fs") or 0)
            if fs <= 0:
                raise DataError(f"{self.manifest.path}: record {r['name']!r} has no sampling rate; "
                                "RR context needs one (prepare the data again)")
            rr_ms = np.diff(beats) * (1000.0 / fs)
            if self.context in WAVEFORM_CONTEXTS:
                tokens = np.asarray(self._load(r, "tokens"), dtype=np.float64)
                signal = np.where(tokens >= N_SPECIAL, tokens, np.nan)  # the pad token marks a gap
                lock = atrial_lock(signal, fs, beats.astype(np.int64))
                return context_tokens(rr_features(rr_ms, self.context, lock), self.manifest.vocab_size, self.context)
        return context_tokens(rr_features(rr_ms, self.context), self.manifest.vocab_size, self.context)

    def _load(self, r: dict[str, Any], kind: str) -> np.ndarray:
        # a mixed dataset's record lives in its own database's shard folder beside this one (data.mixed)
        shard = self.shard_dir.parent / r["shard"] if r.get("shard") else self.shard_dir
        path = array_path(shard, r["file"], kind)
        try:
            return np.load(path, mmap_mode="r")
        except FileNotFoundError:
            raise DataError(f"{path}: missing (the shard folder is incomplete; run `hlm-train prepare` again)") from None
        except ValueError as exc:
            raise DataError(f"{path}: not a readable array ({exc})") from None

    def record_array(self, i: int, kind: str) -> np.ndarray:
        """One array ("beats", "labels", "rhythm", "tokens") of the i-th selected record, memory-mapped."""
        return self._load(self.records[i], kind)

    def __len__(self) -> int:
        return len(self.item_start)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_streams"] = {}  # each DataLoader worker maps the files itself
        return state

    def stream(self, i: int) -> np.ndarray:
        """The memory-mapped token stream of the i-th selected record (opened once per process)."""
        s = self._streams.get(i)
        if s is None:
            s = self._streams[i] = self._load(self.records[i], "tokens")
        return s

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        r = int(self.item_record[index])
        start = int(self.item_start[index])
        s = self.stream(r)
        end = start + self.window
        c, w = self.context_length, self.window
        out = np.empty(self.length, dtype=np.int64)
        out[:c] = self.item_context[index]
        window = out[c:c + w]
        if start >= 0 and end <= len(s):
            window[:] = s[start:end]
        else:
            window[:] = self.pad_id
            lo, hi = max(start, 0), min(end, len(s))
            window[lo - start : hi - start] = s[lo:hi]
        if self.item_block is not None:
            template = self.templates[r][self.item_block[index]]
            diff = difference(window, template, self.manifest.vocab_size - N_SPECIAL, N_SPECIAL, self.pad_id)
            if self.waveform == "both":  # the window stays, its difference follows it
                out[c + w:] = diff
            else:
                window[:] = diff
        if self.mask_centre:
            out[c + w // 2] = self.mask_id
        return torch.from_numpy(out), int(self.labels[index])

    @property
    def length(self) -> int:
        """Tokens per item: the context tokens, the window, and with waveform 'both' its difference after it."""
        return self.context_length + self.window * (2 if self.waveform == "both" else 1)

    def item_records(self) -> tuple[np.ndarray, list[str]]:
        """Each item's index into the record names, and the names: for scores per record."""
        return self.item_record, [r["name"] for r in self.records]

    def class_counts(self) -> np.ndarray:
        """Items per label (for class weights); empty for foundation."""
        lab = self.labels[self.labels >= 0]
        return np.bincount(lab) if len(lab) else np.zeros(0, dtype=np.int64)

    def af_groups(self) -> np.ndarray:
        """Each beat item's loss weight group (train.af_group): its label, or len(BEAT_CLASSES) for an N beat
        inside atrial fibrillation or flutter by its record's rhythm annotations (a record without them has none)."""
        inside = np.zeros(len(self.labels), dtype=bool)
        for i, r in enumerate(self.records):
            items = np.flatnonzero(self.item_record == i)
            inside[items] = np.isin(self._load(r, "rhythm")[self.item_beat[items]], AF_RHYTHMS)
        return np.where(inside & (self.labels == BEAT_CLASSES.index("N")), len(BEAT_CLASSES), self.labels)
