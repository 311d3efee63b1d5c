"""A vectorised reader of the MIT (WFDB) annotation format.

`wfdb.rdann` walks the file in Python (~200k annotations/s); long Holter files hold millions of
beats. Here the file is one uint16 array; only the rare multi-word entries (SKIP: a 32-bit time
jump, AUX: a text note such as a rhythm change) are visited in Python, everything else is numpy.

A file that does not end with the end-of-file word was cut short (a partial copy or download) and is an
error, never a silently shorter record.

Times are in the annotation file's own time resolution: a NOTE at sample 0 whose text is
`## time resolution: N` (what `wrann` and WFDB's high-resolution mode write) says they count at N Hz;
without it they count frames of the record (the header's rate). `Annotations.fs` keeps N (None without).

Format (WFDB annot(5)): each 16-bit little-endian word holds a 6-bit code (top) and a 10-bit
value (bottom). Codes 1..49 are annotations whose value is the time increment; 59 SKIP is followed
by a 32-bit increment (high word first); 60 NUM, 61 SUB, 62 CHN modify the preceding annotation;
63 AUX is followed by `value` bytes of text (padded to a word); the word 0 ends the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainer.data.errors import DataError

SKIP, NUM, SUB, CHN, AUX = 59, 60, 61, 62, 63
NOTE = 22  # a comment annotation; at sample 0 it may define the file's time resolution
_TIME_RESOLUTION = re.compile(r"## time resolution: (\d+\.?\d*)")


@dataclass
class Annotations:
    """Decoded annotations: sample index, MIT code and the sparse aux notes of one record."""

    sample: np.ndarray  # int64, sample index of each annotation
    code: np.ndarray  # uint8, MIT annotation code
    aux_index: np.ndarray  # int64, which annotations carry an aux note
    aux_text: list[str]  # their notes, NULs stripped
    fs: float | None = None  # the file's own time resolution in Hz (None: the record's frame rate)

    def __len__(self) -> int:
        return len(self.sample)


def read_annotations(path: Path) -> Annotations:
    """Decode one annotation file; DataError naming the file if it is missing or malformed."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: annotation file not found") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read annotation file ({exc.strerror})") from None
    try:
        return decode_annotations(data)
    except DataError as exc:
        raise DataError(f"{path}: {exc}") from None


def decode_annotations(data: bytes) -> Annotations:
    """Decode the bytes of an MIT-format annotation file (see the module docstring)."""
    if len(data) % 2:
        data = data[:-1]
    words = np.frombuffer(data, dtype="<u2")
    n = len(words)
    code = (words >> 10).astype(np.uint8)
    value = (words & 0x3FF).astype(np.int64)
    irregular = np.flatnonzero((code == SKIP) | (code == AUX) | (words == 0))

    # Walk the chain of entries: plain runs of one-word entries between the multi-word ones.
    seg_start: list[int] = []
    seg_end: list[int] = []
    skip_pos: list[int] = []
    skip_val: list[int] = []
    aux_pos: list[int] = []
    aux_text: list[str] = []
    pos, ended = 0, False
    while pos < n:
        k = int(np.searchsorted(irregular, pos, side="left"))
        j = int(irregular[k]) if k < len(irregular) else n
        if j > pos:
            seg_start.append(pos)
            seg_end.append(j)
        if j >= n or words[j] == 0:
            ended = j < n
            break
        if code[j] == SKIP:
            if j + 2 >= n:
                raise DataError(f"truncated annotation file: a SKIP entry at byte {2 * j:,} runs past the "
                                f"end of the file ({len(data):,} bytes)")
            jump = (int(words[j + 1]) << 16) | int(words[j + 2])
            if jump >= 1 << 31:
                jump -= 1 << 32
            skip_pos.append(j)
            skip_val.append(jump)
            pos = j + 3
        else:  # AUX
            length = int(value[j])
            end = 2 * (j + 1) + length
            if end > len(data):
                raise DataError(f"truncated annotation file: an AUX note at byte {2 * j:,} needs {length} "
                                f"bytes, the file ends at byte {len(data):,}")
            aux_pos.append(j)
            aux_text.append(data[2 * (j + 1) : end].decode("latin-1").rstrip("\x00"))
            pos = j + 1 + (length + 1) // 2

    # Mark the words that are one-word entries on the chain, then keep the annotations among them.
    mark = np.zeros(n + 1, dtype=np.int32)
    np.add.at(mark, np.asarray(seg_start, dtype=np.int64), 1)
    np.add.at(mark, np.asarray(seg_end, dtype=np.int64), -1)
    on_chain = np.cumsum(mark[:n]) > 0
    ann_pos = np.flatnonzero(on_chain & (code <= 49))
    dt = value[ann_pos]
    if skip_pos:
        target = np.searchsorted(ann_pos, np.asarray(skip_pos), side="left")
        ok = target < len(ann_pos)
        np.add.at(dt, target[ok], np.asarray(skip_val, dtype=np.int64)[ok])
    sample = np.cumsum(dt)
    if not ended:  # WFDB writes a zero word last; without it the file was cut short
        last = f", the last at sample {int(sample[-1]):,}" if len(sample) else ""
        raise DataError(f"truncated annotation file: {len(data):,} bytes end without the end-of-file "
                        f"marker (a zero word), after {len(sample):,} annotations{last}")
    if aux_pos:
        owner = np.searchsorted(ann_pos, np.asarray(aux_pos), side="left") - 1
        keep = owner >= 0
        aux_index = owner[keep].astype(np.int64)
        texts = [t for t, kept in zip(aux_text, keep, strict=True) if kept]
    else:
        aux_index = np.zeros(0, dtype=np.int64)
        texts = []
    codes = code[ann_pos]
    return Annotations(sample=sample, code=codes, aux_index=aux_index, aux_text=texts,
                       fs=_time_resolution(sample, codes, aux_index, texts))


def _time_resolution(sample: np.ndarray, code: np.ndarray, aux_index: np.ndarray, texts: list[str]) -> float | None:
    """The rate a `## time resolution: N` NOTE at sample 0 declares (as wfdb.rdann reads it), else None."""
    for index, text in zip(aux_index.tolist(), texts, strict=True):
        if sample[index] != 0:
            break  # definitions come first, at sample 0
        match = _TIME_RESOLUTION.match(text) if code[index] == NOTE else None
        if match and float(match.group(1)) > 0:
            return float(match.group(1))
    return None
