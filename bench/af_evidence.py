"""Can a beat's rhythm tell atrial fibrillation's N beats from S beats? What a rhythm gate could block, from the
records alone (no model, nothing trained).

The recipe's S false alarms sit inside DS2's atrial fibrillation, where every N beat comes early against its
neighbours. The rhythm gate (trainer.scoring.calibration) may stop S calls where the beat's irregularity that no repeating
pattern explains (rr_context's `af_irregularity`) is high, but validation never chooses it. This measures why, per
beat, for three kinds of beat in three groups of records (DS1 as training, svdb, DS2 as test):
  - irregularity: `af_irregularity` exactly as the model's context token holds it;
  - atrial lock (trainer.data.atrial_lock): how much of the P-wave window's energy (300 to 60 ms before the R
    peak) survives the median over the beats around the beat. A P wave locked to the QRS survives the median
    (sinus: 0.8-0.95); fibrillation waves are not locked to it and average out (0.01-0.15); shown as 1 - lock;
  - both: irregularity x (1 - lock)^2, the AF evidence of context `rr_af_lock` (trainer.data.rr_context).
Each feature's thresholds are set on the training side only: the values that reach 95%, 90% and 80% of DS1's N
beats inside AF (and AFL). The table says, at each, how many S beats, AF N beats and other N beats of each group
the gate would block (its N beats elsewhere do not matter: a gate only stops S calls). DS2 is scored, never used to set anything.

    python bench/af_evidence.py                     # every record of mitdb (paced ones apart) and svdb (about
                                                    # 4 min on 2 cores)
    python bench/af_evidence.py --only mitdb/201 mitdb/100 svdb/854   # a few records (seconds)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from quality import DEFAULT_DATA  # noqa: E402  (the bench's one data folder)

from trainer.data.atrial_lock import atrial_lock  # noqa: E402
from trainer.data.errors import DataError  # noqa: E402
from trainer.data.labels import AAMI_OF_CODE, AF_RHYTHMS, BEAT_CLASSES  # noqa: E402
from trainer.data.records import list_records, read_record  # noqa: E402
from trainer.data.rr_context import rr_features  # noqa: E402
from trainer.data.splits import DS2, PACED  # noqa: E402
from trainer.data.tokenizers import beat_arrays  # noqa: E402

DATABASES = ("mitdb", "svdb")
LEADS = ("MLII", 0)  # the lead read: MLII where a record has it, else its first
COVERAGE = (0.95, 0.90, 0.80)  # of DS1's AF N beats: where each feature's thresholds are set
KINDS = ("S", "N in AF", "other N")
SHOWN = ("S", "N in AF")  # the kinds the table shows: what a gate loses and what it is for
FEATURES = ("irregularity", "atrial lock", "both")


@dataclass
class Beats:
    """One record's beats: the group it belongs to, each beat's kind (an index of KINDS, -1 for V, F, Q) and
    each feature's value (high = more like fibrillation)."""

    group: str
    kind: np.ndarray
    values: dict[str, np.ndarray]


def group_of(database: str, record: str) -> str:
    """Which side a record is on: DS1 (training), svdb (training), DS2 (test)."""
    return database if database != "mitdb" else ("DS2" if record in DS2 else "DS1")


def read_beats(folder: Path, database: str, record: str) -> Beats:
    """The record's beats, kinds and features, from its annotations and one lead."""
    for lead in LEADS:
        try:
            rec = read_record(folder, record, "atr", lead)
            break
        except DataError as exc:
            if "not in this record" not in str(exc):
                raise
    assert rec.signal is not None
    sample, code, rhythm = beat_arrays(rec, str(rec.extra.get("ann_path", rec.source)))  # as the tokenizers read
    positions = rec.beat_positions(sample, rec.fs)
    cls = AAMI_OF_CODE[code]
    in_af = np.isin(rhythm, AF_RHYTHMS)
    n, s = BEAT_CLASSES.index("N"), BEAT_CLASSES.index("S")
    kind = np.select([cls == s, (cls == n) & in_af, cls == n], [0, 1, 2], default=-1)
    lock = atrial_lock(rec.signal, rec.fs, positions)
    features = np.nan_to_num(rr_features(np.diff(positions) / rec.fs * 1000.0, "rr_af_lock", lock))
    return Beats(group_of(database, record), kind, {"irregularity": features[:, -2], "atrial lock": 1.0 - lock,
                                                    "both": features[:, -1]})


def thresholds(beats: list[Beats], feature: str) -> list[float]:
    """The feature's values that reach COVERAGE of DS1's AF N beats: set on the training side only."""
    values = np.concatenate([np.zeros(0)] + [b.values[feature][b.kind == 1] for b in beats if b.group == "DS1"])
    if not len(values):
        raise SystemExit("no N beats inside atrial fibrillation among the DS1 records given: nothing to set the "
                         "thresholds on (mitdb's 201 and 203 hold them)")
    return [float(np.quantile(values, 1.0 - c)) for c in COVERAGE]


def blocked_table(beats: list[Beats]) -> list[str]:
    """For each feature and threshold, the beats of each kind and group a gate there would block: blocked/all."""
    groups = [g for g in ("DS1", "svdb", "DS2") if any(b.group == g for b in beats)]
    head = "| feature | threshold | DS1 AF N reached | " + " | ".join(f"{g} {k} blocked" for g in groups
                                                                        for k in SHOWN) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for feature in FEATURES:
        for coverage, t in zip(COVERAGE, thresholds(beats, feature), strict=True):
            cells = []
            for g in groups:
                for k in map(KINDS.index, SHOWN):
                    hit = sum(int(((b.values[feature] >= t) & (b.kind == k)).sum()) for b in beats if b.group == g)
                    total = sum(int((b.kind == k).sum()) for b in beats if b.group == g)
                    cells.append(f"{hit:,}/{total:,} ({hit / total:.0%})" if total else "-")
            lines.append(f"| {feature} | {t:.3f} | {coverage:.0%} | " + " | ".join(cells) + " |")
    return lines


def chosen(data: Path, only: list[str] | None) -> list[tuple[str, str]]:
    """(database, record) pairs: every record of DATABASES, paced mitdb records apart, or those named."""
    if only:
        pairs = []
        for name in only:
            database, _, record = name.partition("/")
            if database not in DATABASES or not (data / database / f"{record}.hea").is_file():
                raise SystemExit(f"--only {name}: no record {record!r} in {data / database} (expected "
                                 f"DATABASE/RECORD with DATABASE one of {', '.join(DATABASES)})")
            pairs.append((database, record))
        return pairs
    return [(db, r) for db in DATABASES for r in list_records(data / db) if not (db == "mitdb" and r in PACED)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding mitdb/ and svdb/")
    ap.add_argument("--only", nargs="+", metavar="DATABASE/RECORD", help="these records only, e.g. mitdb/201")
    args = ap.parse_args()
    beats = []
    for database, record in chosen(args.data, args.only):
        try:
            beats.append(read_beats(args.data / database, database, record))
        except DataError as exc:
            print(f"{database}/{record}: left out ({exc})")
    counts = {g: [sum(int((b.kind == k).sum()) for b in beats if b.group == g) for k in range(len(KINDS))]
              for g in ("DS1", "svdb", "DS2") if any(b.group == g for b in beats)}
    print("records: " + "; ".join(f"{g} {sum(b.group == g for b in beats)} ("
                                  + ", ".join(f"{c:,} {k}" for k, c in zip(KINDS, counts[g], strict=True)) + ")"
                                  for g in counts))
    print("\n".join(blocked_table(beats)))


if __name__ == "__main__":
    main()
