"""Record-level train/test splits: MIT-BIH's inter-patient DS1/DS2, otherwise a fixed 80/20 by name.

Pure Python (no torch) so the cockpit and reports can show which records a run trained on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from trainer.data.errors import DataError

# AAMI EC57 inter-patient split (de Chazal et al. 2004); paced records excluded.
DS1 = ("101 106 108 109 112 114 115 116 118 119 122 124 201 203 205 207 208 209 215 220 223 230").split()
DS2 = ("100 103 105 111 113 117 121 123 200 202 210 212 213 214 219 221 222 228 231 232 233 234").split()
PACED = ("102", "104", "107", "217")
MITDB = frozenset(DS1) | frozenset(DS2) | frozenset(PACED)
SPLITS = ("train", "test", "all")
TEST_FRACTION = 0.2


def is_mitdb(names: Iterable[str]) -> bool:
    """True when every record name is an MIT-BIH Arrhythmia record (so DS1/DS2 applies)."""
    names = list(names)
    return bool(names) and all(n in MITDB for n in names)


def split_names(names: Iterable[str], split: str) -> list[str]:
    """Records of a split. MIT-BIH: train = DS1, test = DS2, paced excluded (also from "all").
    Other data: sorted by name, the last ceil(20%) are test (none when there is only one record)."""
    alias = {"ds1": "train", "ds2": "test"}.get(split.lower(), split)
    if alias not in SPLITS:
        raise DataError(f"split: unknown split {split!r} (expected one of: {', '.join(SPLITS)}, DS1, DS2)")
    ordered = sorted(set(names))
    if is_mitdb(ordered):
        pick = {"train": DS1, "test": DS2, "all": DS1 + DS2}[alias]
        return [n for n in ordered if n in pick]
    n_test = math.ceil(TEST_FRACTION * len(ordered)) if len(ordered) > 1 else 0
    cut = len(ordered) - n_test
    return {"train": ordered[:cut], "test": ordered[cut:], "all": ordered}[alias]
