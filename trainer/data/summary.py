"""What a user sees of a prepared dataset: the prepare summary and the lines a training run logs.

Everything a prepare left out (skipped records) or kept without a label (beats without an AAMI class)
is printed here, from the manifest, every time: also when the shards were already up to date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SKIP_HINT = ("to leave bad records out and list them instead: --skip-bad-records, or skip_bad_records = true "
             "in the study's [data]")


def skipped_lines(manifest: dict[str, Any]) -> list[str]:
    """One line per skipped record: its name and why."""
    return [f"skipped record {s['name']}: {s['reason']}" for s in manifest.get("skipped_records") or []]


def count_line(manifest: dict[str, Any]) -> str:
    """Records, beats and what happened to them, in one line."""
    t = manifest["totals"]
    skipped = len(manifest.get("skipped_records") or [])
    return (f"{t['records']} records ({skipped} skipped as bad), {t['beats']:,} beats "
            f"({t.get('unclassified_beats', 0):,} without an AAMI class, kept with label -1; "
            f"{t.get('beats_outside_signal', 0):,} outside the signal), {t['tokens']:,} tokens")


def split_line(split: dict[str, Any] | None) -> str:
    """Train/test record counts and the reason for them."""
    if not split:
        return "split: not recorded"
    test = split["test"]
    shown = ", ".join(test[:12]) + (", ..." if len(test) > 12 else "")
    return (f"split: {len(split['train'])} train, {len(test)} test records ({shown or 'none'}); "
            f"{split['reason']}")


def rate_lines(manifest: dict[str, Any], limit: int = 6) -> list[str]:
    """Each lead's rate (its own: a lead with N samples per frame runs at N times the header's rate), the
    rate it was tokenized at, or for `beats` the annotations' time resolution; records grouped by them."""
    groups: dict[str, list[str]] = {}
    for r in manifest["records"]:
        if manifest["tokenizer"] == "samples" and r.get("native_fs"):
            per_frame = int(r.get("samples_per_frame") or 1)
            frames = f" ({per_frame} samples per frame)" if per_frame > 1 else ""
            key = f"lead {r.get('lead')} at {_hz(r['native_fs'])}{frames}, tokenized at {_hz(r['fs'])}"
        elif r.get("annotation_fs"):
            on = f" on a {_hz(r['fs'])} record" if abs(r["annotation_fs"] - r["fs"]) > 1e-9 else ""
            key = f"annotations at {_hz(r['annotation_fs'])}{on}"
        else:
            continue  # shards of an older prepare: no rates recorded
        groups.setdefault(key, []).append(r["name"])
    lines = [f"rate: {key} ({_records(names)})" for key, names in list(groups.items())[:limit]]
    if len(groups) > limit:
        lines.append(f"rate: ... {len(groups) - limit} more combinations")
    rates = {r.get("fs") for r in manifest["records"] if r.get("native_fs")}
    if manifest["tokenizer"] == "samples" and not manifest.get("fs") and len(rates) > 1:
        lines.append(f"mixed rates kept (fs = 0): a window of W tokens spans W / rate seconds, here "
                     f"{', '.join(_hz(f) for f in sorted(rates))}; set fs to give every record one rate")
    return lines


def invalid_lines(manifest: dict[str, Any], limit: int = 8) -> list[str]:
    """Records with invalid samples (gaps): how many, and how many beats lie within a second of one."""
    hit = [r for r in manifest["records"] if r.get("invalid_samples")]
    if not hit:
        return []
    shown = ", ".join(f"{r['name']} {r['invalid_samples']:,} ({r.get('beats_near_gap', 0):,} beats within 1 s)"
                      for r in hit[:limit]) + (f", ... ({len(hit)} records)" if len(hit) > limit else "")
    t = manifest["totals"]
    return [f"invalid samples: {t.get('invalid_samples', 0):,} in {len(hit)} record(s), stored as the pad "
            f"token, never as signal; {t.get('beats_near_gap', 0):,} beats lie within 1 s of one (kept, counted "
            f"apart): {shown}"]


def _hz(fs: float) -> str:
    return f"{fs:.6g} Hz"


def _records(names: list[str]) -> str:
    return (f"{len(names)} records" if len(names) > 3 else "record" + ("s " if len(names) > 1 else " ")
            + ", ".join(names))


def describe(manifest: dict[str, Any], shard: Path, call_s: float) -> str:
    """The summary `hlm-train prepare` prints."""
    t = manifest["timing"]
    kind = "SYNTHETIC data" if manifest["synthetic"] else manifest["source"]
    lines = [
        str(shard),
        f"  {manifest['dataset']} ({kind}), tokenizer {manifest['tokenizer']}, vocab {manifest['vocab_size']}",
        f"  {count_line(manifest)}",
        *(f"  {line}" for line in rate_lines(manifest)),
        *(f"  {line}" for line in invalid_lines(manifest)),
        *(f"  {line}" for line in skipped_lines(manifest)),
        f"  {split_line(manifest.get('split'))}",
        f"  decode {t['decode_s']:.2f} s, tokenize {t['tokenize_s']:.2f} s, write {t['write_s']:.2f} s "
        f"(as built); this call {call_s:.2f} s",
    ]
    return "\n".join(lines)
