"""Datasets that mix databases: mitdb's DS1 with svdb's 77 recordings, one training set at one rate.

`data_path` is the first database: its own split decides the test records (mitdb: AAMI DS2), so a model
trained on more databases is still scored on the test split every published figure uses. `train_data`
names further folders whose every record trains (the fine-tune's validation patients are drawn from all
of them, trainer.run.sources.validation_split) and never tests.

One rule brings every database to the model's rate: the samples tokenizer resamples each record from its
header's rate to `tokenizer.fs` (polyphase, anti-aliased; svdb's 128 Hz to 180 Hz is 45/32) before the
per-record quantiser, so a window of W tokens is the same duration in every database. A mixed samples
dataset therefore needs `tokenizer.fs` > 0 (0 keeps each record's own rate). The beats tokenizer is
rate-independent already (RR intervals in ms from each header's rate).

Each database is prepared into its own shard folder exactly as alone (idempotent, skipped when up to
date); a combined folder beside them holds only a manifest that lists every record, the further
databases' under `<database>/<record>` with the shard folder that holds its arrays and `train_only`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from runcontract.files import write_json
from runcontract.modes import make_dirs
from trainer.data import records as rec_io
from trainer.data import shards
from trainer.data.errors import DataError
from trainer.data.splits import manifest_split
from trainer.data.tokenizer_keys import canonical

MIXED_VERSION = 1  # bump when the combined manifest's layout changes: the folder name changes with it


def check_mixable(tokenizer: dict[str, Any], train_data: list[str], data_path: str | Path | None) -> list[Path]:
    """The further folders, resolved; DataError unless the tokenizer brings every database to one rate and
    each folder is named once."""
    name, params = canonical(tokenizer)
    if name == "samples" and not params.get("fs"):
        raise DataError(f"tokenizer.fs: mixing databases ({', '.join(train_data)}) needs one rate for all; "
                        "give the rate every record is resampled to (e.g. 180), not 0 (each record's own)")
    folders = [Path(p).expanduser().resolve() for p in train_data]
    seen = [Path(data_path).expanduser().resolve()] if data_path else []
    for folder in folders:
        if folder in seen:
            raise DataError(f"train_data: {folder} is named twice (as data_path or in train_data)")
        seen.append(folder)
    return folders


def _read(shard: Path) -> dict[str, Any]:
    return json.loads((shard / shards.MANIFEST).read_text())


def combine(first: Path, parts: list[Path], split: dict[str, Any] | None) -> Path:
    """The combined folder's manifest over the first database's shard folder and the further ones'
    (siblings in one cache root); rewritten only when a part changed."""
    base, others = _read(first), [_read(p) for p in parts]
    labels = [m["dataset"] for m in others]
    if len(set(labels)) < len(labels) or base["dataset"] in labels:
        raise DataError(f"train_data: two databases are named {base['dataset']!r} or "
                        f"{', '.join(labels)} twice; their records would share names")
    for shard, m in zip(parts, others, strict=True):
        if m["vocab_size"] != base["vocab_size"] or m["tokenizer"] != base["tokenizer"]:
            raise DataError(f"{shard / shards.MANIFEST}: tokens differ from {first / shards.MANIFEST}'s")
    digest = shards.param_digest({"parts": [[first.name, [r["digest"] for r in base["records"]]]]
                                  + [[p.name, [r["digest"] for r in m["records"]]] for p, m in zip(parts, others,
                                                                                                  strict=True)],
                                  "split": split, "version": MIXED_VERSION})
    label = "+".join([base["dataset"], *labels])
    out = first.parent / f"{rec_io.safe_name(label)}-{base['tokenizer']}-{digest}"
    if (out / shards.MANIFEST).is_file():
        return out  # the name is the digest of every part's records: an existing manifest is this one
    records = [{**r, "shard": first.name} for r in base["records"]]
    skipped = list(base.get("skipped_records") or [])
    for shard, m in zip(parts, others, strict=True):
        db = m["dataset"]
        records += [{**r, "name": f"{db}/{r['name']}", "shard": shard.name, "database": db, "train_only": True}
                    for r in m["records"]]
        skipped += [{**s, "name": f"{db}/{s['name']}"} for s in m.get("skipped_records") or []]
    manifest = {**base, "dataset": label, "records": records, "skipped_records": skipped,
                "source": " + ".join(str(m["source"]) for m in [base, *others]),
                "parts": [{"dataset": m["dataset"], "source": m["source"], "shard": p.name,
                           "records": len(m["records"]), "train_only": i > 0}
                          for i, (p, m) in enumerate(zip([first, *parts], [base, *others], strict=True))],
                "totals": _totals(records, skipped),
                "timing": _timing([base, *others])}
    manifest["split"] = {**manifest_split(manifest, split).as_dict(), "options": split or {}}
    make_dirs(out)
    write_json(out / shards.MANIFEST, manifest)
    return out


def _timing(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """The parts' prepare timings added up (workers: the first's)."""
    timings = [m.get("timing") or {} for m in manifests]
    out = {k: sum(t.get(k) or 0 for t in timings) for k in ("decode_s", "tokenize_s", "write_s", "wall_s",
                                                              "records_up_to_date")}
    beats = sum(m["totals"]["beats"] for m in manifests)
    return {**out, "workers": timings[0].get("workers", 1),
            "tokenize_beats_per_s": beats / out["tokenize_s"] if out["tokenize_s"] > 0 else None}


def _totals(records: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> dict[str, Any]:
    """The manifest's totals over every database's records."""
    def total(key: str) -> list[int]:
        return np.sum([r[key] for r in records], axis=0).astype(int).tolist()

    return {"records": len(records), "skipped_records": len(skipped),
            "tokens": sum(r["n_tokens"] for r in records), "beats": sum(r["n_beats"] for r in records),
            "unclassified_beats": sum(r["unclassified_beats"] for r in records),
            "beats_outside_signal": sum(r.get("beats_outside_signal", 0) for r in records),
            "class_counts": total("class_counts"), "rhythm_counts": total("rhythm_counts")}
