"""Bytes in people's words, one way everywhere (the work directory's space, the study's footprint)."""

from __future__ import annotations


def size_words(n: float) -> str:
    """Bytes in decimal units (kB, MB, GB, TB), three figures: what `df -H` and the quota tools' users read."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} TB"
