"""PhysioNet-style folders: which records exist, their headers, signals and annotations.

A decoded record is a `Record`, the one in-memory form that both real data (via wfdb) and the
synthetic generator produce, so both go through the same tokenizers.
"""

from __future__ import annotations

import glob
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainer.data import headers
from trainer.data.errors import DataError
from trainer.data.labels import RHYTHM_CODE, rhythm_class
from trainer.data.mitann import Annotations, read_annotations

ANNOTATOR_PREFERENCE = ("atr", "ari")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class Record:
    """One decoded record: an optional lead (digital units), its rate, and its annotations."""

    name: str
    fs: float
    ann: Annotations
    signal: np.ndarray | None = None  # int, digital ADC units (None: annotation-only)
    lead: str = ""
    adc_gain: float = 1.0
    baseline: float = 0.0
    source: str = ""  # the header file (or "synthetic") for messages
    extra: dict[str, object] = field(default_factory=dict)


def list_records(folder: Path) -> list[str]:
    """Record names from the folder's RECORDS file, else from its *.hea files (sorted)."""
    if not folder.is_dir():
        raise DataError(f"{folder}: data folder not found (expected a PhysioNet-style folder with RECORDS or *.hea)")
    records_file = folder / "RECORDS"
    if records_file.is_file():
        names = [line.strip() for line in records_file.read_text(errors="replace").splitlines()]
        names = [n for n in names if n and not n.startswith("#")]
    else:
        names = sorted(p.name[: -len(".hea")] for p in folder.glob("*.hea"))
    if not names:
        raise DataError(f"{folder}: no records (no RECORDS file and no *.hea files)")
    return names


def safe_name(record: str) -> str:
    """A file-name-safe form of a record name (records may live in sub-folders: p00/p000001)."""
    return _SAFE_NAME.sub("_", record.replace("/", "__"))


def resolve_annotator(folder: Path, record: str, annotator: str) -> Path:
    """The annotation file of a record: the named annotator, or with "auto" the first that exists of
    the folder's ANNOTATORS list, then atr, then ari."""
    base = folder / record
    if annotator != "auto":
        path = base.parent / f"{base.name}.{annotator}"
        if not path.is_file():
            raise DataError(f"{path}: annotation file not found (annotator {annotator!r}); {_beside(base)}")
        return path
    # The database's own ANNOTATORS order first (sddb lists the complete .ari before the partial .atr).
    candidates: list[str] = []
    listing = folder / "ANNOTATORS"
    if listing.is_file():
        candidates += [line.split()[0] for line in listing.read_text(errors="replace").splitlines() if line.strip()]
    candidates += list(ANNOTATOR_PREFERENCE)
    for ext in candidates:
        path = base.parent / f"{base.name}.{ext}"
        if path.is_file():
            return path
    tried = ", ".join("." + c for c in dict.fromkeys(candidates))
    raise DataError(f"{base}.hea: no annotation file found (tried {tried}); {_beside(base)}")


NOT_ANNOTATIONS = frozenset({"hea", "dat", "mat", "edf", "xyz", "xws", "png", "pdf", "txt", "csv", "json"})


def annotation_extensions(base: Path) -> list[str]:
    """Extensions of the files beside a record's header that may be annotation files (not header, not
    signal files the header names, not common non-WFDB files)."""
    header = base.parent / f"{base.name}.hea"
    signals = set(_signal_files(header)) if header.is_file() else set()
    found = []
    for path in sorted(base.parent.glob(f"{glob.escape(base.name)}.*")):
        ext = path.name[len(base.name) + 1:]
        if path.is_file() and ext and "." not in ext and ext.lower() not in NOT_ANNOTATIONS and path.name not in signals:
            found.append(ext)
    return found


def _beside(base: Path) -> str:
    """What the 'no annotation file' errors suggest: the extensions present and how to pick one."""
    exts = annotation_extensions(base)
    if not exts:
        return f"no other file beside {base.name}.hea could hold annotations"
    pick = exts[0]
    return (f"beside {base.name}.hea: {', '.join('.' + e for e in exts)}; choose one with the annotator option "
            f"(hlm-train --annotator {pick}, cockpit demo --annotator {pick}, "
            f"study file [data.tokenizer] annotator = \"{pick}\")")


def input_files(folder: Path, record: str, annotator: str, with_signal: bool) -> list[Path]:
    """Every file a record's tokens depend on (header, annotations, and signal files when used)."""
    header = folder / f"{record}.hea"
    if not header.is_file():
        raise DataError(f"{header}: header file not found (record {record!r} listed but missing)")
    read_fs(header)  # a corrupt record line is named as such before anything else is checked
    files = [header, resolve_annotator(folder, record, annotator)]
    if with_signal and _is_multi_segment(header):
        raise DataError(f"{header}: multi-segment record; the samples tokenizer reads single-segment records "
                        "(the beats tokenizer reads any)")
    if with_signal:
        headers.check_signal_files(header)  # formats known, files present, sizes = the header's count
        files += [header.parent / name for name in _signal_files(header)]
    return files


FULL_HASH_LIMIT = 16 << 20  # bytes; larger files are fingerprinted, not read whole
EDGE_BYTES = 4 << 20


def digest_files(files: list[Path], salt: str) -> str:
    """A digest of the inputs and the parameters: what decides whether a record's shard is stale.

    Files up to 16 MiB (headers, annotations, typical signal files) are hashed whole; larger ones by
    size, modification time and their first and last 4 MiB, so checking a multi-GB database stays
    cheap on every rank of every run.
    """
    h = hashlib.blake2b(salt.encode(), digest_size=16)
    for path in files:
        h.update(path.name.encode())
        size = path.stat().st_size
        with path.open("rb") as fh:
            if size <= FULL_HASH_LIMIT:
                while chunk := fh.read(1 << 22):
                    h.update(chunk)
            else:
                h.update(f"{size}:{path.stat().st_mtime_ns}".encode())
                h.update(fh.read(EDGE_BYTES))
                fh.seek(size - EDGE_BYTES)
                h.update(fh.read(EDGE_BYTES))
    return h.hexdigest()


def _is_multi_segment(header: Path) -> bool:
    for line in _read_text(header).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return "/" in line.split()[0]
    return False


def _signal_files(header: Path) -> list[str]:
    names: list[str] = []
    lines = [ln for ln in header.read_text(errors="replace").splitlines() if ln.strip() and not ln.startswith("#")]
    for line in lines[1:]:
        name = line.split()[0]
        if name != "~" and name not in names and not name.startswith("-"):
            names.append(name)
    return names


def read_fs(header: Path) -> float:
    """The sampling rate from a header's record line, with a clear error for a corrupt header."""
    header_text = _read_text(header)
    lines = [ln for ln in header_text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise DataError(f"{header}: corrupt header (no record line)")
    fields = lines[0].split()
    if len(fields) < 2 or not fields[1].isdigit():
        raise DataError(f"{header}: corrupt header (record line {lines[0]!r}: expected 'name nsig fs nsamp')")
    if len(fields) < 3:
        return 250.0  # WFDB default when the rate is omitted
    fs_text = fields[2].split("/")[0].split("(")[0]
    try:
        fs = float(fs_text)
    except ValueError:
        raise DataError(f"{header}: corrupt header (sampling rate {fields[2]!r} is not a number)") from None
    if not np.isfinite(fs) or fs <= 0:
        raise DataError(f"{header}: corrupt header (sampling rate {fields[2]!r} must be positive)")
    return fs


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None


def read_record(folder: Path, record: str, annotator: str, lead: int | str | None) -> Record:
    """Decode a record: annotations always; one lead's digital samples when `lead` is not None."""
    header = folder / f"{record}.hea"
    fs = read_fs(header)
    ann_path = resolve_annotator(folder, record, annotator)
    try:
        ann = read_annotations(ann_path)
    except DataError as exc:
        nsamp = headers.sample_count(header) if "truncated" in str(exc) else None
        if nsamp is None:
            raise
        raise DataError(f"{exc}; the record is {nsamp:,} samples long ({header.name})") from None
    rec = Record(name=record, fs=fs, ann=ann, source=str(header), extra={"ann_path": str(ann_path)})
    if lead is not None:
        _read_signal(rec, header, lead)
    return rec


def _read_signal(rec: Record, header: Path, lead: int | str) -> None:
    import wfdb  # heavy import (pandas); only where signals are read

    base = str(header.with_suffix(""))
    headers.check_signal_files(header)  # before wfdb, whose errors for these cases are numpy/KeyError text
    try:
        head = wfdb.rdheader(base)
    except Exception as exc:  # wfdb raises many types for malformed headers
        raise DataError(f"{header}: corrupt header ({exc})") from None
    names = list(head.sig_name or [])
    if isinstance(lead, str) and not lead.isdigit():
        if lead not in names:
            raise DataError(f"{header}: lead {lead!r} not in this record (leads: {', '.join(names)})")
        channel = names.index(lead)
    else:
        channel = int(lead)
        if not 0 <= channel < head.n_sig:
            raise DataError(f"{header}: lead index {channel} out of range (record has {head.n_sig} signals)")
    try:
        sig = wfdb.rdrecord(base, channels=[channel], physical=False, return_res=32)
    except Exception as exc:
        raise DataError(f"{header}: cannot read signal ({type(exc).__name__}: {exc})") from None
    data = np.asarray(sig.d_signal)[:, 0]
    if data.size == 0:
        raise DataError(f"{header}: record has no samples")
    if head.sig_len and data.size != head.sig_len:  # compressed formats, checked only once decoded
        raise DataError(f"{header}: decoded {data.size:,} samples of lead {names[channel] if names else channel}, "
                        f"the header says {head.sig_len:,}")
    rec.signal = data
    rec.lead = names[channel] if channel < len(names) else str(channel)
    rec.adc_gain = float(sig.adc_gain[0] or 200.0)
    rec.baseline = float(sig.baseline[0] or 0)


def rhythm_per_annotation(ann: Annotations) -> tuple[np.ndarray, np.ndarray]:
    """Rhythm changes of a record: (sample of each change, rhythm class index)."""
    if not len(ann.aux_index):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8)
    idx = ann.aux_index
    is_rhythm = ann.code[idx] == RHYTHM_CODE
    classes = np.array([rhythm_class(t) for t in ann.aux_text], dtype=np.int8)
    keep = is_rhythm & (classes >= 0)
    return ann.sample[idx[keep]], classes[keep]
