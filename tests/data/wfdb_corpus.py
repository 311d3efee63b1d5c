"""The WFDB reference library's own test corpus (../shared/data/wfdb-sample-data) as prepare cases.

Every record of the corpus and of its multi-segment folders, with each annotator it has; a record
without any annotation file gets a generated one (`gen`: a beat a second, at most 1,000, written with
wfdb.wrann into a folder of links to the record's files), so its signal is read too. A multi-frame
record's generated beats count at its fastest lead's rate and say so (`## time resolution`), the way
WFDB's high-resolution annotators write them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.studies import SHARED_DATA
from trainer.data import headers
from trainer.data import records as rec_io

CORPUS = SHARED_DATA / "wfdb-sample-data"
GENERATED = "gen"
MAX_GENERATED = 1000  # beats in a generated annotation file (wfdb's Python reader takes ~10 us a beat)


@dataclass(frozen=True)
class Case:
    """One prepare call: a folder, a record in it and an annotator."""

    folder: Path
    record: str
    annotator: str

    @property
    def label(self) -> str:
        where = self.folder.relative_to(CORPUS.parent) if self.folder.is_relative_to(CORPUS.parent) else self.folder.name
        return f"{where}/{self.record}.{self.annotator}"


def corpus_folders() -> list[Path]:
    """The corpus folder and each multi-segment folder in it."""
    return [CORPUS, *sorted(p for p in (CORPUS / "multi-segment").iterdir() if p.is_dir())]


def cases(work: Path) -> list[Case]:
    """Every (record, annotator) of the corpus; records without annotations get generated ones in a
    linked copy of their folder under `work`."""
    out: list[Case] = []
    for folder in corpus_folders():
        linked: Path | None = None
        for record in rec_io.list_records(folder):
            annotators = rec_io.annotation_extensions(folder / record)
            if annotators:
                out += [Case(folder, record, ext) for ext in annotators]
                continue
            if linked is None:
                linked = _linked_copy(folder, work / folder.name)
            _write_generated(linked, record)
            out.append(Case(linked, record, GENERATED))
    return out


def _linked_copy(folder: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for path in folder.iterdir():
        if path.is_file():
            (dst / path.name).symlink_to(path)
    return dst


def _write_generated(folder: Path, record: str) -> None:
    """A normal beat every second of the record, or every n-th second for a long one (one at its first sample for a record shorter than that
    or without samples: a layout header holds none, which must be refused); none for a record of unknown
    length."""
    import wfdb

    header = folder / f"{record}.hea"
    fs = rec_io.read_fs(header)
    frames = rec_io.record_frames(header)
    if frames is None:
        return
    per_frame = 1 if rec_io.is_multi_segment(header) else max((s.per_frame for s in headers.signal_specs(header)), default=1)
    rate = fs * per_frame
    step = max(1, round(rate), frames * per_frame // MAX_GENERATED)
    sample = np.arange(min(step // 2, max(frames * per_frame - 1, 0)), max(frames * per_frame, 1), step, dtype=np.int64)
    wfdb.wrann(record, GENERATED, sample, symbol=["N"] * len(sample), write_dir=str(folder),
               fs=rate if per_frame > 1 else None)
