"""The vectorised MIT annotation reader against wfdb.rdann on real files (every field that matters)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import wfdb

from trainer.data.errors import DataError
from trainer.data.labels import CODE_SYMBOLS, IS_BEAT
from trainer.data.mitann import decode_annotations, read_annotations

FILES = [
    ("mitdb", "100", "atr"),
    ("mitdb", "203", "atr"),  # many rhythm changes (aux notes)
    ("mitdb", "207", "atr"),
    ("nsrdb-annotations", "16265", "atr"),
    ("sddb-annotations", "30", "ari"),  # SKIPs over gaps, ST episodes in aux
    ("sddb-annotations", "30", "atr"),
]


@pytest.mark.parametrize(("db", "record", "ext"), FILES)
def test_same_as_wfdb(physionet: Path, db: str, record: str, ext: str) -> None:
    ref = wfdb.rdann(str(physionet / db / record), ext)
    ours = read_annotations(physionet / db / f"{record}.{ext}")
    assert np.array_equal(ours.sample, ref.sample)
    assert [CODE_SYMBOLS[int(c)] for c in ours.code] == list(ref.symbol)
    aux = [""] * len(ours)
    for i, text in zip(ours.aux_index, ours.aux_text, strict=True):
        aux[i] = text
    assert aux == [a.rstrip("\x00") for a in ref.aux_note]


def test_beat_count_of_record_100(physionet: Path) -> None:
    ann = read_annotations(physionet / "mitdb" / "100.atr")
    assert int(IS_BEAT[ann.code].sum()) == 2273  # PhysioNet's published count for record 100


def test_truncated_file_is_a_clear_error(physionet: Path, tmp_path: Path) -> None:
    data = (physionet / "mitdb" / "203.atr").read_bytes()
    ann = decode_annotations(data)
    # Cut inside the first AUX note: the reader must say so rather than return garbage.
    first_aux_word = int(np.flatnonzero((np.frombuffer(data, "<u2") >> 10) == 63)[0])
    bad = tmp_path / "203.atr"
    bad.write_bytes(data[: 2 * first_aux_word + 4])
    with pytest.raises(DataError, match=r"203\.atr: truncated annotation file: an AUX note at byte [\d,]+ needs"):
        read_annotations(bad)
    assert len(ann) > 0


def test_file_cut_between_entries_is_truncated(physionet: Path, tmp_path: Path) -> None:
    """Cut at 1,000 bytes, 101.atr still decodes into whole entries: only the missing end word tells."""
    bad = tmp_path / "101.atr"
    bad.write_bytes((physionet / "mitdb" / "101.atr").read_bytes()[:1000])
    with pytest.raises(DataError, match=r"101\.atr: truncated annotation file: 1,000 bytes end without the "
                                        r"end-of-file marker \(a zero word\), after [\d,]+ annotations, the last at sample"):
        read_annotations(bad)
    with pytest.raises(DataError, match=r"0 bytes end without the end-of-file marker"):
        decode_annotations(b"")


def test_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nothere\.atr: annotation file not found"):
        read_annotations(tmp_path / "nothere.atr")
