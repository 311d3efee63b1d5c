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


def describe(manifest: dict[str, Any], shard: Path, call_s: float) -> str:
    """The summary `hlm-train prepare` prints."""
    t = manifest["timing"]
    kind = "SYNTHETIC data" if manifest["synthetic"] else manifest["source"]
    lines = [
        str(shard),
        f"  {manifest['dataset']} ({kind}), tokenizer {manifest['tokenizer']}, vocab {manifest['vocab_size']}",
        f"  {count_line(manifest)}",
        *(f"  {line}" for line in skipped_lines(manifest)),
        f"  {split_line(manifest.get('split'))}",
        f"  decode {t['decode_s']:.2f} s, tokenize {t['tokenize_s']:.2f} s, write {t['write_s']:.2f} s "
        f"(as built); this call {call_s:.2f} s",
    ]
    return "\n".join(lines)
