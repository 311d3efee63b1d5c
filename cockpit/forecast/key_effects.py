"""What each swept key did: configurations that differ in one key only, side by side, in seconds.

The second paper's questions (pinned memory on or off, fp32 against bf16, DataParallel against DDP) are each one
key swept with everything else held; the scaling table answers them only by reading two rows apart. Here each
pair of analysed runs (cockpit.forecast.analysis rows) that differs in exactly one non-scale key, at the same
nodes x workers, is one effect: T of each, the samples of each, the time per sample of the changed run over the
reference's, and each part of T moved, in seconds at the changed run's samples (the reference's part x
samples_changed / samples_reference, so a larger batch is not charged for doing more work). A change within
UNREPEATED_NOISE of T (or within the spread of the study's repeats of the reference) is said to be so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cockpit.figures.explain import PARTS
from cockpit.forecast.advice.options import UNREPEATED_NOISE
from cockpit.study.spec import AXES, SCALE_AXES
from cockpit.workloads.base import value_word, workload_keys
from runcontract.axes import AXIS_KEY

PART_WORDS = dict(zip(PARTS, ("data wait", "compute", "communication", "optimizer", "other"), strict=True))


@dataclass(frozen=True)
class KeyEffect:
    """One key changed from `before` to `after`, everything else (and the scale) the same."""

    key: str
    before: Any
    after: Any
    reference: dict[str, Any]  # the analysis row with `before`
    changed: dict[str, Any]  # the analysis row with `after`

    @property
    def per_sample_ratio(self) -> float:
        """(T / samples) of the changed run over the reference's: below 1 the change made each sample faster."""
        a, b = self.reference, self.changed
        if not all(_finite(v) and v > 0 for v in (a["train_time_s"], a["samples"], b["train_time_s"], b["samples"])):
            return math.nan
        return (b["train_time_s"] / b["samples"]) / (a["train_time_s"] / a["samples"])

    @property
    def part_changes(self) -> dict[str, float]:
        """Seconds each part of T moved: the changed run's minus the reference's at the changed run's samples."""
        a, b = self.reference, self.changed
        scale = b["samples"] / a["samples"] if _finite(a["samples"]) and a["samples"] > 0 else 1.0
        return {part: b[f"{part}_s"] - a[f"{part}_s"] * scale for part in PARTS
                if _finite(a.get(f"{part}_s")) and _finite(b.get(f"{part}_s"))}

    @property
    def within_noise(self) -> bool:
        """The change in T per sample is within what one configuration's runs differ by (UNREPEATED_NOISE)."""
        ratio = self.per_sample_ratio
        return not _finite(ratio) or abs(ratio - 1.0) <= UNREPEATED_NOISE

    def words(self) -> str:
        """`pin_memory false → true: time per sample x0.54 (T 3.57 → 1.92 s at 320 → 320 samples); compute -1.62 s,
        data wait -0.01 s` and, within the noise, that it is."""
        a, b = self.reference, self.changed
        moved = sorted(self.part_changes.items(), key=lambda kv: -abs(kv[1]))
        parts = ", ".join(f"{PART_WORDS[p]} {v:+.2f} s" for p, v in moved if abs(v) >= 0.005) or "no part moved"
        text = (f"{self.key} {value_word(self.before)} → {value_word(self.after)}: time per sample x{self.per_sample_ratio:.2f} "
                f"(T {a['train_time_s']:.2f} → {b['train_time_s']:.2f} s at {a['samples']:g} → {b['samples']:g} "
                f"samples); {parts}")
        if self.within_noise:
            text += (f"; within the {UNREPEATED_NOISE:.0%} one configuration's runs differ by on a shared machine: "
                     "no measured effect")
        return text


def key_effects(rows: list[dict[str, Any]]) -> list[KeyEffect]:
    """Every pair of completed runs that differ in exactly one non-scale axis or workload key, at the same scale;
    the reference is the run with the axis's default, else the lesser value (_order), so each pair is listed once."""
    done = [r for r in rows if r.get("status") == "completed" and _finite(r.get("train_time_s"))]
    keyed = [(r, _identity(r)) for r in done]
    out: list[KeyEffect] = []
    for i, (a, ka) in enumerate(keyed):
        for b, kb in keyed[i + 1:]:
            differ = [k for k in ka.keys() | kb.keys() if ka.get(k) != kb.get(k)]
            if len(differ) != 1 or differ[0] in SCALE_AXES:  # the scale's effect is the scaling table's
                continue
            key = differ[0]
            ref, chg = (a, b) if _order(key, ka.get(key)) <= _order(key, kb.get(key)) else (b, a)
            before, after = _identity(ref).get(key), _identity(chg).get(key)
            out.append(KeyEffect(key, before, after, ref, chg))
    out.sort(key=lambda e: (e.key, _order(e.key, e.before), _order(e.key, e.after), e.reference.get("nodes", 1),
                            e.reference.get("gpus_per_node", 1)))
    return out


def _identity(row: dict[str, Any]) -> dict[str, Any]:
    """A row's keys by name: the axes (the scale included, so only like scales pair) and its workload's keys."""
    keys = workload_keys(row)
    return {**{a: row.get(a) for a in AXES}, **{k: v for k, v in keys.items() if k not in SCALE_AXES}}


def _order(key: str, value: Any) -> tuple[int, int, str]:
    """An axis's default first (fp32 before bf16), then false before true, numbers by size, words as written."""
    default = 0 if key in AXIS_KEY and value == AXIS_KEY[key].default else 1
    if isinstance(value, bool):
        return (default, 0, str(int(value)))
    if isinstance(value, int | float):
        return (default, 1, f"{float(value):020.6f}")
    return (default, 2, str(value))


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
