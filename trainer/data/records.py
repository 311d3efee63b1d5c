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

from trainer.config_keys import ANNOTATOR_PREFERENCE
from trainer.data import headers
from trainer.data.errors import DataError
from trainer.data.labels import IS_BEAT, RHYTHM_CODE, rhythm_class
from trainer.data.mitann import Annotations, read_annotations

_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class Record:
    """One decoded record: an optional lead (digital units), its rate, and its annotations.

    `fs` is the rate of `signal`: a lead stored at N samples per frame runs at N times the header's
    (frame) rate. Annotation times count at `ann_fs`, the annotation file's own time resolution or else
    the header's frame rate; `beat_positions` converts them to `fs`.
    """

    name: str
    fs: float
    ann: Annotations
    signal: np.ndarray | None = None  # int, digital ADC units (None: annotation-only)
    lead: str = ""
    adc_gain: float = 1.0
    baseline: float = 0.0
    source: str = ""  # the header file (or "synthetic") for messages
    extra: dict[str, object] = field(default_factory=dict)
    ann_fs: float = 0.0  # rate of ann.sample (0: the same as fs)
    length: int | None = None  # samples at fs the record holds (None: unknown, or len(signal))
    invalid_value: int | None = None  # the digital value that marks an invalid sample (a gap)

    @property
    def time_base(self) -> float:
        """The rate annotation times count at."""
        return self.ann_fs or self.fs

    def samples_held(self) -> int | None:
        """How many samples at `fs` the record holds, when known."""
        return len(self.signal) if self.signal is not None else self.length

    def beat_positions(self, sample: np.ndarray, rate: float) -> np.ndarray:
        """Annotation times as sample indices at `rate` Hz (rounded to the nearest sample)."""
        if abs(rate - self.time_base) < 1e-9:
            return sample.astype(np.int64)
        return np.rint(sample * (rate / self.time_base)).astype(np.int64)


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
        edf = sorted(p.name for p in folder.glob("*.edf"))
        if edf:
            raise DataError(f"{folder}: no WFDB headers, only EDF files ({_short_list(edf)}); {edf_hint(edf[0])}")
        raise DataError(f"{folder}: no records (no RECORDS file and no *.hea files)")
    return names


def edf_hint(edf_name: str) -> str:
    """How to turn an EDF file into a WFDB record: EDF is not read directly (wfdb's EDF reader fails on
    multi-rate EDF files and carries no beat annotations)."""
    stem = edf_name[: -len(".edf")] if edf_name.endswith(".edf") else edf_name
    return (f"EDF is not read directly: convert it with the WFDB software's edf2mit "
            f"(edf2mit -i {edf_name} -r {stem}), then put a beat annotation file ({stem}.atr) beside {stem}.hea")


def _short_list(names: list[str], limit: int = 4) -> str:
    return ", ".join(names[:limit]) + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def safe_name(record: str) -> str:
    """A file-name-safe form of a record name (records may live in sub-folders: p00/p000001)."""
    return _SAFE_NAME.sub("_", record.replace("/", "__"))


def resolve_annotator(folder: Path, record: str, annotator: str) -> Path:
    """The annotation file of a record: the named annotator, or with "auto" the first that exists of
    the folder's ANNOTATORS list, then ANNOTATOR_PREFERENCE (auto_annotators)."""
    base = folder / record
    if annotator != "auto":
        path = base.parent / f"{base.name}.{annotator}"
        if not path.is_file():
            raise DataError(f"{path}: annotation file not found (annotator {annotator!r}); {_beside(base)}")
        return path
    candidates = auto_annotators(folder)
    for ext in candidates:
        path = base.parent / f"{base.name}.{ext}"
        if path.is_file():
            return path
    tried = ", ".join("." + c for c in candidates)
    raise DataError(f"{base}.hea: no annotation file found (tried {tried}); {_beside(base)}")


def auto_annotators(folder: Path) -> list[str]:
    """The annotators "auto" tries, in order: the folder's ANNOTATORS list (sddb lists the complete .ari
    before the partial .atr), then ANNOTATOR_PREFERENCE."""
    candidates: list[str] = []
    listing = folder / "ANNOTATORS"
    if listing.is_file():
        candidates += [line.split()[0] for line in listing.read_text(errors="replace").splitlines() if line.strip()]
    return list(dict.fromkeys([*candidates, *ANNOTATOR_PREFERENCE]))


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
    """What the 'no annotation file' errors suggest: the extensions present, ranked by how many beats
    each places inside the signal, and how to pick the best one (never a file without beats)."""
    ranked = rank_annotators(base)
    if not ranked:
        return f"no other file beside {base.name}.hea could hold annotations"
    listed = ", ".join("." + ext for ext, _ in ranked)
    if ranked[0][1] <= 0:
        return f"beside {base.name}.hea: {listed}; none of them places a beat inside the signal"
    pick = ranked[0][0]
    counts = ", ".join(f".{ext} {n:,}" if n > 0 else f".{ext} {'none' if n == 0 else 'unreadable'}"
                       for ext, n in ranked)
    return (f"beside {base.name}.hea: {listed}; choose one with the annotator option "
            f"(hlm-train --annotator {pick}, cockpit demo --annotator {pick}, "
            f"study file [data.tokenizer] annotator = \"{pick}\")"
            + (f"; beats inside the signal: {counts}" if len(ranked) > 1 else ""))


def rank_annotators(base: Path) -> list[tuple[str, int]]:
    """The candidate annotation files beside a record with how many beats each places inside the
    signal (its own time resolution honoured), most first; -1 for a file that does not decode."""
    header = base.parent / f"{base.name}.hea"
    try:
        fs = read_fs(header)
        frames = record_frames(header)
    except DataError:
        fs, frames = 0.0, None
    counts = []
    for ext in annotation_extensions(base):
        try:
            ann = read_annotations(base.parent / f"{base.name}.{ext}")
        except DataError:
            counts.append((ext, -1))
            continue
        sample = ann.sample[IS_BEAT[ann.code]]
        inside = sample >= 0
        if frames is not None and fs:
            inside &= sample * fs < frames * (ann.fs or fs)
        counts.append((ext, int(inside.sum())))
    return sorted(counts, key=lambda c: -c[1])


def input_files(folder: Path, record: str, annotator: str, with_signal: bool) -> list[Path]:
    """Every file a record's tokens depend on (header, annotations, and signal files when used)."""
    header = folder / f"{record}.hea"
    if not header.is_file():
        edf = header.with_suffix(".edf")
        if edf.is_file():
            raise DataError(f"{header}: header file not found, only {edf.name}; {edf_hint(edf.name)}")
        raise DataError(f"{header}: header file not found (record {record!r} listed but missing)")
    read_fs(header)  # a corrupt record line is named as such before anything else is checked
    files = [header, resolve_annotator(folder, record, annotator)]
    if with_signal and is_multi_segment(header):
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


def record_frames(header: Path) -> int | None:
    """Frames the record holds (a multi-segment header's count covers its segments), None if unknown."""
    return headers.sample_count(header) if is_multi_segment(header) else headers.record_length(header)


def is_multi_segment(header: Path) -> bool:
    """A header whose record line names segments (`name/segments ...`): its signal lies in other records."""
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


def lead_rate(header: Path, lead: int | str) -> float:
    """The rate one lead is sampled at: the record's frame rate times the lead's samples per frame (a lead
    stored `212x4` runs at four times the header's rate); the lead by index or name, as the tokenizer says."""
    specs = headers.signal_specs(header)
    if isinstance(lead, str) and not lead.isdigit():
        names = headers.lead_names(header)
        if lead not in names:
            raise DataError(f"{header}: lead {lead!r} not in this record (leads: {', '.join(names)})")
        channel = names.index(lead)
    else:
        channel = int(lead)
        if not 0 <= channel < len(specs):
            raise DataError(f"{header}: lead index {channel} out of range (record has {len(specs)} signals)")
    return read_fs(header) * specs[channel].per_frame


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
    frames = record_frames(header)
    rec = Record(name=record, fs=fs, ann=ann, source=str(header), extra={"ann_path": str(ann_path)},
                 ann_fs=ann.fs or fs, length=frames)
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
    spec = headers.signal_specs(header)[channel]
    try:
        # A lead with several samples per frame is read at its own rate, not averaged per frame.
        sig = wfdb.rdrecord(base, channels=[channel], physical=False, return_res=32,
                            smooth_frames=spec.per_frame == 1)
    except Exception as exc:
        raise DataError(f"{header}: cannot read signal ({type(exc).__name__}: {exc})") from None
    data = np.asarray(sig.d_signal)[:, 0] if spec.per_frame == 1 else np.asarray(sig.e_d_signal[0])
    if data.size == 0:
        raise DataError(f"{header}: record has no samples")
    expected = (head.sig_len or 0) * spec.per_frame
    if expected and data.size != expected:  # compressed formats, checked only once decoded
        raise DataError(f"{header}: decoded {data.size:,} samples of lead {names[channel] if names else channel}, "
                        f"the header says {expected:,}")
    rec.signal = data.astype(np.int64, copy=False)
    rec.fs = rec.fs * spec.per_frame
    rec.length = data.size
    rec.invalid_value = headers.INVALID_SAMPLE.get(spec.fmt)
    rec.extra["samples_per_frame"] = spec.per_frame
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
