"""Record-level train/test splits that never put one patient on both sides.

MIT-BIH Arrhythmia records keep the AAMI inter-patient split (DS1 train, DS2 test). Any other
database is split by patient: explicitly (`test_records`), by a pattern that extracts the patient
id from the record name (`patient_pattern`), or by default from the name's shape when it carries a
patient id (`data_8_2` -> `data_8`, `patient001/s0010_re` -> `patient001`). The last 20 % of the
patients (rounded up) are test. Every split says how it was made and why (`Split.reason`), and the
manifest and result.json keep that sentence.

Pure Python (no torch) so the cockpit and reports can show which records a run trained on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from trainer.config_keys import SPLIT_KEYS
from trainer.data.errors import DataError

# AAMI EC57 inter-patient split (de Chazal et al. 2004); paced records excluded.
DS1 = ("101 106 108 109 112 114 115 116 118 119 122 124 201 203 205 207 208 209 215 220 223 230").split()
DS2 = ("100 103 105 111 113 117 121 123 200 202 210 212 213 214 219 221 222 228 231 232 233 234").split()
PACED = ("102", "104", "107", "217")
MITDB = frozenset(DS1) | frozenset(DS2) | frozenset(PACED)
SPLITS = ("train", "test", "all")
TEST_FRACTION = 0.2
_NUMBERED = re.compile(r"^(.+)_\d+$")  # data_8_2 -> data_8: a patient id followed by a recording number


@dataclass(frozen=True)
class Split:
    """Which records train, which test, which neither, and the sentence that says why."""

    train: list[str]
    test: list[str]
    excluded: list[str]
    method: str  # mitdb-inter-patient | test_records | patient_pattern | patient-in-name | one-record-per-patient
    reason: str
    patients: dict[str, str] = field(default_factory=dict)  # record -> patient id (empty for mitdb)

    def names(self, split: str) -> list[str]:
        """Records of "train", "test" or "all" (also "DS1"/"DS2")."""
        alias = {"ds1": "train", "ds2": "test"}.get(split.lower(), split)
        if alias not in SPLITS:
            raise DataError(f"split: unknown split {split!r} (expected one of: {', '.join(SPLITS)}, DS1, DS2)")
        return {"train": self.train, "test": self.test, "all": sorted(self.train + self.test)}[alias]

    def as_dict(self) -> dict[str, Any]:
        """The form kept in manifest.json and result.json."""
        return {"method": self.method, "reason": self.reason, "train": self.train, "test": self.test,
                "excluded": self.excluded, "patients": self.patients}


def is_mitdb(names: Iterable[str]) -> bool:
    """True when every record name is an MIT-BIH Arrhythmia record (so DS1/DS2 applies)."""
    names = list(names)
    return bool(names) and all(n in MITDB for n in names)


def check_options(options: Any, where: str = "split") -> dict[str, Any]:
    """Validate split options ({test_records: [...]} or {patient_pattern: "..."}); DataError naming the key."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise DataError(f"{where}: expected a table with test_records or patient_pattern, found {options!r}")
    unknown = sorted(set(options) - set(SPLIT_KEYS))
    if unknown:
        raise DataError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(SPLIT_KEYS)})")
    out = {k: v for k, v in options.items() if v is not None}
    if len(out) > 1:
        raise DataError(f"{where}: give test_records or patient_pattern, not both")
    records = out.get("test_records")
    if records is not None and (not isinstance(records, list) or not records
                                or not all(isinstance(r, str) and r for r in records)):
        raise DataError(f"{where}.test_records: expected a non-empty list of record names, found {records!r}")
    pattern = out.get("patient_pattern")
    if pattern is not None:
        if not isinstance(pattern, str) or not pattern:
            raise DataError(f"{where}.patient_pattern: expected a regular expression, found {pattern!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise DataError(f"{where}.patient_pattern: {pattern!r} is not a regular expression ({exc})") from None
    return out


def plan_split(names: Iterable[str], options: dict[str, Any] | None = None, where: str = "split") -> Split:
    """The split of these records under the given options (see the module docstring)."""
    opts = check_options(options, where)
    ordered = sorted(set(names), key=natural_key)
    if "test_records" in opts:
        wanted = list(dict.fromkeys(opts["test_records"]))
        unknown = [r for r in wanted if r not in ordered]
        if unknown:
            raise DataError(f"{where}.test_records: {', '.join(unknown)} not among the records "
                            f"({_short(ordered)})")
        test = [r for r in ordered if r in wanted]
        return Split([r for r in ordered if r not in wanted], test, [], "test_records",
                     f"test records given explicitly (test_records): {', '.join(test)}")
    if "patient_pattern" in opts:
        patients = _by_pattern(ordered, opts["patient_pattern"], where)
        return _grouped(ordered, patients, "patient_pattern",
                        f"records grouped by patient with patient_pattern {opts['patient_pattern']!r}")
    if is_mitdb(ordered) and any(n in DS1 for n in ordered):
        train = [n for n in ordered if n in DS1]
        test = [n for n in ordered if n in DS2]
        reason = ("every record is an MIT-BIH Arrhythmia record: AAMI inter-patient split, DS1 train, DS2 test, "
                  "paced records 102 104 107 217 excluded")
        if not test:
            reason += "; none of these records is in DS2, so the test split is empty"
        return Split(train, test, [n for n in ordered if n in PACED], "mitdb-inter-patient", reason)
    patients, how = default_patients(ordered)
    if patients:
        return _grouped(ordered, patients, "patient-in-name", f"records grouped by patient ({how})")
    how = ("every record is an MIT-BIH Arrhythmia record but none is in DS1, so the AAMI inter-patient split "
           "would leave nothing to train on; each record is its own patient" if is_mitdb(ordered) else
           "record names carry no patient id, so each record is its own patient; if one patient has "
           "several records, give patient_pattern or test_records")
    return _grouped(ordered, {n: n for n in ordered}, "one-record-per-patient", how)


def with_train_only(split: Split, names: list[str], databases: list[str]) -> Split:
    """`split` plus records that only ever train: another database's (`hlm-train --train-data`), each its own
    patient. The test split stays the first database's alone, so its figure stays comparable with every
    published one; validation draws from all training patients (trainer.run.sources.validation_split)."""
    if not names:
        return split
    clash = sorted(set(names) & set(split.train + split.test + split.excluded))
    if clash:
        raise DataError(f"train_data: record name(s) {', '.join(clash[:5])} appear in two databases")
    patients = {**split.patients, **{n: n for n in names}}
    reason = (f"{split.reason}; the {len(names)} records of {', '.join(databases)} train only (never test), "
              "each its own patient")
    return Split(split.train + list(names), split.test, split.excluded, f"{split.method}+train-data", reason,
                 patients)


def check_leaves_training(names: Iterable[str], options: dict[str, Any] | None = None, where: str = "split") -> None:
    """Refuse explicit test_records that take every record: a split with nothing to train on (checked before
    any record is tokenized; a mixed dataset's further databases train, so it is not asked there)."""
    wanted = set(check_options(options, where).get("test_records") or ())
    ordered = sorted(set(names), key=natural_key)
    if wanted and ordered and set(ordered) <= wanted:
        raise DataError(f"{where}.test_records: every record ({_short(ordered)}) is a test record; expected at least "
                        f"one left to train on")


def manifest_split(manifest: dict[str, Any], options: dict[str, Any] | None = None,
                   where: str = "split") -> Split:
    """The split of a shard folder's records: the first database's own split (MIT-BIH inter-patient when
    its records are MIT-BIH's, otherwise grouped by patient: trainer.data.splits), plus the records of a
    mixed dataset's further databases (`train_only` in the manifest, trainer.data.mixed) on the training
    side only."""
    records = manifest["records"]
    extra = [r["name"] for r in records if r.get("train_only")]
    base = plan_split([r["name"] for r in records if not r.get("train_only")], options, where)
    databases = list(dict.fromkeys(str(r.get("database")) for r in records if r.get("train_only")))
    return with_train_only(base, extra, databases)


def default_patients(names: list[str]) -> tuple[dict[str, str], str]:
    """Patient ids read from the names' shape, or ({}, "") when the names carry none.

    A shape counts only if it yields at least two patients and at least one with several records:
    otherwise it is a naming scheme, not patient ids.
    """
    for how, rule in (("the folder of each record, e.g. patient001/s0010_re -> patient001",
                       lambda n: n.rsplit("/", 1)[0] if "/" in n else None),
                      ("the name before its last '_<number>', e.g. data_8_2 -> data_8",
                       lambda n: m.group(1) if (m := _NUMBERED.match(n)) else None)):
        ids = {n: rule(n) for n in names}
        if all(ids.values()):
            groups = set(ids.values())
            if 2 <= len(groups) < len(names):
                return {n: str(p) for n, p in ids.items()}, how
    return {}, ""


def _by_pattern(names: list[str], pattern: str, where: str) -> dict[str, str]:
    regex = re.compile(pattern)
    patients = {}
    for name in names:
        m = regex.search(name)
        if not m:
            raise DataError(f"{where}.patient_pattern: {pattern!r} does not match record name {name!r}")
        if "patient" in regex.groupindex:
            patients[name] = m.group("patient")
        else:
            patients[name] = m.group(1) if regex.groups else m.group(0)
    return patients


def _grouped(names: list[str], patients: dict[str, str], method: str, how: str) -> Split:
    """The last ceil(20%) of the patients (natural order of their ids) are test; none of one patient."""
    ids = sorted(set(patients.values()), key=natural_key)
    n_test = math.ceil(TEST_FRACTION * len(ids)) if len(ids) > 1 else 0
    test_ids = set(ids[len(ids) - n_test:])
    test = [n for n in names if patients[n] in test_ids]
    train = [n for n in names if patients[n] not in test_ids]
    if n_test:
        reason = (f"{how}: {len(ids)} patients, the last {n_test} by patient id are test "
                  f"({', '.join(sorted(test_ids, key=natural_key))})")
    else:
        reason = f"{how}: only one patient ({ids[0] if ids else 'none'}), so nothing is left for a test split"
    return Split(train, test, [], method, reason, dict(patients))


def natural_key(name: str) -> list[Any]:
    """Sort key that orders data_8 before data_10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def split_names(names: Iterable[str], split: str, options: dict[str, Any] | None = None) -> list[str]:
    """Records of one split ("train", "test", "all"; "DS1"/"DS2"); see plan_split."""
    return plan_split(names, options).names(split)


def _short(names: list[str], limit: int = 8) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more
