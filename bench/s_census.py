"""Which patients hold S beats of record 232's kind? A census of every record's S beats by the run they sit in.

DS2's S sensitivity is mostly record 232's: 1,382 of its 1,837 S beats, most of them in short runs over a slow
sinus rhythm. A model learns such beats only from training patients that hold them, and a choice made on
validation patients judges them only if those patients hold them. This reads the annotation files alone (no
signal, no model) and counts, for each record, its S beats (AAMI: A a J S) by the length of the unbroken run of
S beats each belongs to: alone, a pair, a short run (3 to SHORT_MAX beats) or a sustained one (longer: a
tachycardia, a rhythm of its own), with the longest run and the median interval before N beats and before S
beats. Records are listed by their S beats in short runs, each with its part of the study (mitdb's DS1 trains,
DS2 tests; every other database trains). Nothing is trained or chosen.

    python bench/s_census.py                          # mitdb and svdb beside the repository (under 1 s)
    python bench/s_census.py --data DIR [DIR ...] --top 12
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from quality import DEFAULT_DATA as PHYSIONET  # noqa: E402  (the bench's data beside the repository)

from trainer.data.errors import DataError  # noqa: E402
from trainer.data.labels import AAMI_OF_CODE, BEAT_CLASSES, IS_BEAT  # noqa: E402
from trainer.data.mitann import read_annotations  # noqa: E402
from trainer.data.records import read_fs  # noqa: E402
from trainer.data.splits import DS1, DS2  # noqa: E402

DEFAULT_DATA = (PHYSIONET / "mitdb", PHYSIONET / "svdb")
SHORT_MAX = 40  # the longest run counted as short: 232's longest is 36 beats
N, S = BEAT_CLASSES.index("N"), BEAT_CLASSES.index("S")
KINDS = ("alone", "pair", "short run", "sustained")


def run_lengths(is_s: np.ndarray) -> np.ndarray:
    """Each beat's length of the unbroken run of S beats it belongs to (0 for a beat that is not S)."""
    edges = np.flatnonzero(np.diff(np.r_[0, is_s.astype(np.int8), 0]))
    out = np.zeros(len(is_s), dtype=np.int64)
    for start, stop in zip(edges[::2], edges[1::2], strict=True):
        out[start:stop] = stop - start
    return out


def kind_counts(lengths: np.ndarray) -> dict[str, int]:
    """S beats by KINDS from their run lengths."""
    return {"alone": int((lengths == 1).sum()), "pair": int((lengths == 2).sum()),
            "short run": int(((lengths >= 3) & (lengths <= SHORT_MAX)).sum()),
            "sustained": int((lengths > SHORT_MAX).sum())}


def part_of(database: str, record: str) -> str:
    if database != "mitdb":
        return "train"
    return "train (DS1)" if record in DS1 else "test (DS2)" if record in DS2 else "excluded"


def record_row(folder: Path, record: str) -> dict[str, Any]:
    """One record's census (DataError naming the file if its annotations or header are unreadable)."""
    ann = read_annotations(folder / f"{record}.atr")
    beat = IS_BEAT[ann.code]
    classes = AAMI_OF_CODE[ann.code[beat]]
    fs = ann.fs or read_fs(folder / f"{record}.hea")
    rr = np.diff(ann.sample[beat]) / fs  # the interval before each beat but the first
    is_s = classes == S
    lengths = run_lengths(is_s)

    def median_before(cls: int) -> float:
        """The median interval before the beats of class `cls` (NaN when the record has none)."""
        of = rr[classes[1:] == cls]
        return float(np.median(of)) if len(of) else float("nan")

    return {"record": f"{folder.name}/{record}", "part": part_of(folder.name, record), "beats": int(beat.sum()),
            "S": int(is_s.sum()), **kind_counts(lengths), "longest": int(lengths.max(initial=0)),
            "N RR s": median_before(N), "S RR s": median_before(S)}


def census(folders: list[Path]) -> list[dict[str, Any]]:
    """Every record of the folders with a header and beat annotations (`.atr`), by S beats in short runs (most
    first)."""
    rows = [record_row(f, p.stem) for f in folders for p in sorted(f.glob("*.hea")) if p.with_suffix(".atr").is_file()]
    return sorted(rows, key=lambda r: (-r["short run"], r["record"]))


def lines(rows: list[dict[str, Any]], top: int) -> list[str]:
    head = (f"{'record':<12}{'part':<13}{'beats':>7}{'S':>7}" + "".join(f"{k:>11}" for k in KINDS)
            + f"{'longest':>9}{'N RR s':>8}{'S RR s':>8}")
    out = [head]
    for r in rows[:top]:
        out.append(f"{r['record']:<12}{r['part']:<13}{r['beats']:>7,}{r['S']:>7,}"
                   + "".join(f"{r[k]:>11,}" for k in KINDS)
                   + f"{r['longest']:>9,}{r['N RR s']:>8.2f}{r['S RR s']:>8.2f}")
    short = [r["short run"] for r in rows if r["part"].startswith("train")]
    out.append(f"training records ({len(short)}): S beats in short runs {sum(short):,} in all, at most "
               f"{max(short, default=0):,} in one (a short run: 3 to {SHORT_MAX} S beats in a row)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, nargs="+", default=list(DEFAULT_DATA), metavar="DIR",
                    help="WFDB folders (the folder's name is the database's: mitdb's records split DS1/DS2)")
    ap.add_argument("--top", type=int, default=10, help="how many records to list (default 10)")
    args = ap.parse_args()
    try:
        print("\n".join(lines(census(args.data), args.top)))
    except DataError as exc:
        sys.exit(f"s_census: {exc}")


if __name__ == "__main__":
    main()
