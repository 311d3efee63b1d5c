"""Fixtures for the data tests: small copies of real PhysioNet records that a test may damage."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def copy_records(src: Path, dst: Path, names: list[str], exts: tuple[str, ...]) -> Path:
    """Copy records (the given file extensions) into dst with a RECORDS file listing them."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in names:
        for ext in exts:
            if (src / f"{name}.{ext}").exists():
                shutil.copy2(src / f"{name}.{ext}", dst / f"{name}.{ext}")
    (dst / "RECORDS").write_text("".join(f"{n}\n" for n in names))
    return dst


@pytest.fixture
def mitdb_copy(physionet: Path, tmp_path: Path) -> Path:
    """Records 100 and 101 of the MIT-BIH Arrhythmia Database, copied so a test may corrupt them."""
    return copy_records(physionet / "mitdb", tmp_path / "mitdb", ["100", "101"], ("hea", "dat", "atr"))


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "tokens"


def convert_record(src: Path, record: str, dst: Path, name: str, fs: int, fmt: str, ext: str,
                   seconds: int = 60) -> int:
    """Write the first `seconds` of a real record at another rate, storage format and annotation
    extension under another name (how databases other than mitdb look); returns its beat count."""
    import numpy as np
    import wfdb
    from scipy.signal import resample_poly

    from trainer.data.labels import BEAT_SYMBOLS

    rec = wfdb.rdrecord(str(src / record), physical=False, sampto=seconds * rec_fs(src, record))
    ann = wfdb.rdann(str(src / record), "atr", sampto=seconds * rec.fs - 1)
    signal = resample_poly(rec.d_signal.astype(np.float64), fs, int(rec.fs), axis=0)
    lo, hi = (-2048, 2047) if fmt == "212" else (-32768, 32767)
    signal = np.clip(np.rint(signal), lo, hi).astype(np.int32)
    dst.mkdir(parents=True, exist_ok=True)
    wfdb.wrsamp(name, fs=fs, units=rec.units, sig_name=rec.sig_name, d_signal=signal, fmt=[fmt] * rec.n_sig,
                adc_gain=rec.adc_gain, baseline=rec.baseline, write_dir=str(dst))
    sample = np.minimum(np.rint(ann.sample * fs / rec.fs).astype(np.int64), len(signal) - 1)
    wfdb.wrann(name, ext, sample, symbol=ann.symbol, aux_note=ann.aux_note, write_dir=str(dst))
    return sum(1 for s in ann.symbol if s in BEAT_SYMBOLS)


def rec_fs(src: Path, record: str) -> int:
    return int(float((src / f"{record}.hea").read_text().split()[2]))
