"""WFDB header facts checked before any signal is decoded: sample count, storage formats, file sizes.

wfdb trusts the header: a signal file shorter than the header says fails deep inside numpy
(`operands could not be broadcast together ...`), a longer one is silently cut to the header's
length, an unknown format is a bare `KeyError`. Checking the sizes here turns each of those into a
message that names the file and gives the expected and the found number of samples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from trainer.data.errors import DataError

# Bytes per sample of every storage format wfdb reads (wfdb.io._signal.BYTES_PER_SAMPLE); None: compressed
# (FLAC), whose length is checked after decoding instead.
BYTES_PER_SAMPLE: dict[int, float | None] = {
    8: 1, 16: 2, 24: 3, 32: 4, 61: 2, 80: 1, 160: 2, 212: 1.5, 310: 4 / 3, 311: 4 / 3,
    508: None, 516: None, 524: None,
}
# The digital value that marks an invalid sample (a gap; NaN in physical units) in each format (WFDB
# signal(5), as wfdb.io._signal.INVALID_SAMPLE_VALUE); format 8 stores differences and has none.
INVALID_SAMPLE: dict[int, int | None] = {
    8: None, 16: -(2**15), 24: -(2**23), 32: -(2**31), 61: -(2**15), 80: -(2**7), 160: -(2**15),
    212: -(2**11), 310: -(2**9), 311: -(2**9), 508: -(2**7), 516: -(2**15), 524: -(2**23),
}
_FORMAT = re.compile(r"(\d+)(?:x(\d+))?(?::(\d+))?(?:\+(\d+))?$")


@dataclass(frozen=True)
class SignalSpec:
    """One signal line of a header: its file, storage format, samples per frame and byte offset."""

    file: str
    fmt: int
    per_frame: int
    offset: int


def record_line(header: Path) -> list[str]:
    """The fields of the header's record line (name, nsig, fs, nsamp, ...)."""
    for line in _text(header).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.split()
    raise DataError(f"{header}: corrupt header (no record line)")


def sample_count(header: Path) -> int | None:
    """Samples per signal that the header declares, or None when the header leaves it out."""
    fields = record_line(header)
    if len(fields) < 4:
        return None
    if not fields[3].isdigit():
        raise DataError(f"{header}: corrupt header (sample count {fields[3]!r} is not a whole number)")
    return int(fields[3])


def record_length(header: Path) -> int | None:
    """Frames in the record: the header's sample count, else what its uncompressed signal files hold
    (a header may leave the count out), else None (unknown: nothing to check positions against)."""
    nsamp = sample_count(header)
    if nsamp is not None:
        return nsamp
    specs = [s for s in signal_specs(header) if s.file != "~"]
    held = []
    for name in dict.fromkeys(s.file for s in specs):
        in_file = [s for s in specs if s.file == name]
        path = header.parent / name
        per_sample = [BYTES_PER_SAMPLE.get(s.fmt) for s in in_file]
        if not path.is_file() or any(b is None for b in per_sample):
            return None
        frame = sum(b * s.per_frame for b, s in zip(per_sample, in_file, strict=True) if b is not None)
        held.append(int(max(path.stat().st_size - in_file[0].offset, 0) // frame))
    return min(held) if held else None


def signal_specs(header: Path) -> list[SignalSpec]:
    """The signal lines of a single-segment header (empty for annotation-only headers without any)."""
    lines = [ln for ln in _text(header).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    specs = []
    for number, line in enumerate(lines[1:]):
        fields = line.split()
        if len(fields) < 2:
            raise DataError(f"{header}: corrupt header (signal {number} line {line!r} has no storage format)")
        match = _FORMAT.match(fields[1])
        if not match:
            raise DataError(f"{header}: corrupt header (signal {number}: storage format {fields[1]!r} "
                            "is not a WFDB format such as 212 or 16)")
        fmt, per_frame, _skew, offset = match.groups()
        specs.append(SignalSpec(fields[0], int(fmt), int(per_frame or 1), int(offset or 0)))
    return specs


def lead_names(header: Path) -> list[str]:
    """Each signal's description (its lead name: the fields after the block size), "" where it has none."""
    lines = [ln for ln in _text(header).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return [" ".join(line.split()[8:]) for line in lines[1:]]


def check_signal_files(header: Path) -> None:
    """Every signal file exists, has a supported format and holds exactly the header's sample count."""
    if sample_count(header) == 0:
        raise DataError(f"{header}: the record holds no samples (its sample count is 0, as in the layout "
                        "header of a multi-segment record)")
    specs = signal_specs(header)
    for number, spec in enumerate(specs):
        if spec.fmt not in BYTES_PER_SAMPLE:
            known = ", ".join(str(f) for f in BYTES_PER_SAMPLE)
            raise DataError(f"{header}: unsupported storage format {spec.fmt} for signal {number} "
                            f"({spec.file}); readable formats: {known}")
    nsamp = sample_count(header)
    for name in dict.fromkeys(s.file for s in specs if s.file != "~"):
        path = header.parent / name
        if not path.is_file():
            raise DataError(f"{path}: signal file not found (named in {header.name}; "
                            "annotation-only folders need --tokenizer beats)")
        in_file = [s for s in specs if s.file == name]
        per_sample = [BYTES_PER_SAMPLE[s.fmt] for s in in_file]
        if nsamp is None or any(b is None for b in per_sample):
            continue  # no count to compare with, or compressed: checked after decoding
        frame = sum(b * s.per_frame for b, s in zip(per_sample, in_file, strict=True) if b is not None)
        size = path.stat().st_size - in_file[0].offset
        held = int(size // frame) if size > 0 else 0
        # 310 and 311 pack three samples into 4 bytes and pad the last group: up to 2 samples of slack.
        slack = 2 if any(s.fmt in (310, 311) for s in in_file) else 0
        if held < nsamp or held > nsamp + slack:
            fmts = "/".join(sorted({str(s.fmt) for s in in_file}))
            raise DataError(
                f"{path}: holds {held:,} samples per signal, the header {header.name} says {nsamp:,} "
                f"({path.stat().st_size:,} bytes, {len(in_file)} signal(s) in format {fmts}); "
                + ("the file is truncated" if held < nsamp else "the header's sample count is too small"))


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
