"""Compute per step as a function of the samples in it, from the study's baselines at several batch sizes
(docs/prediction.md, "Compute per sample at another batch size").

A configuration at another batch size than its baseline's is priced from that baseline. Where the study
recorded 1x1 baselines that differ only in batch size, their compute per step (breakdown_s compute / steps)
against their samples per worker and step x = batch_size x grad_accum gives the line

    compute per step = a + b x        (two batch sizes: through both; more: least squares)

and the configuration's compute per step is the baseline's x (a + b x') / (a + b x): a fixed cost per step
(a, the launches and the small batch that underfills a GPU) stays, the per-sample cost b grows with the batch.
With one batch size recorded, the line goes through the two points of a baseline's batch probe where it took one
(`train.batch_probe`: one forward and backward at its batch b and at 2b, timed at start-up; result.json
`batch_probe`, trainer/run/batch_probe.py), at x = b and 2b times grad_accum; without one, compute per sample is
assumed constant (the factor x' / x), and the prediction says so. Pure Python over result.json dicts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ComputeLine:
    """compute per step = a + b x samples per worker and step, fitted over the baselines at `samples` (each x)."""

    a: float
    b: float
    samples: tuple[float, ...]
    probe_s: float | None = None  # a baseline's batch probe drew it (its start-up seconds), not several baselines

    def at(self, x: float) -> float:
        return self.a + self.b * x

    def factor(self, x_new: float, x_base: float) -> float | None:
        """Compute per step at x_new over compute per step at x_base, by the line; None where the line gives
        no positive time at either (extrapolated below its fixed cost)."""
        new, old = self.at(x_new), self.at(x_base)
        return new / old if new > 0 and old > 0 else None

    def words(self) -> str:
        points = ", ".join(f"{x:g}" for x in self.samples)
        line = f"compute per step {self.a * 1e3:.3g} ms + {self.b * 1e3:.3g} ms x samples per step"
        if self.probe_s is not None:
            return f"{line}, through the baseline's batch probe at {points} samples per step ({self.probe_s:.2f} s of start-up)"
        how = "through" if len(self.samples) == 2 else "least squares over"
        return f"{line}, {how} the baselines at {points} samples per step"


def samples_per_step(result: Mapping[str, Any]) -> float | None:
    """batch_size x grad_accum of a run's config (None where it has no batch size)."""
    cfg = result.get("config") or {}
    batch = cfg.get("batch_size")
    if not isinstance(batch, int | float) or batch <= 0:
        return None
    return float(batch) * float((cfg.get("train") or {}).get("grad_accum") or 1)


def compute_per_step(result: Mapping[str, Any]) -> float | None:
    """A run's compute seconds per step (breakdown_s compute / timing steps)."""
    steps = (result.get("timing") or {}).get("steps")
    compute = (result.get("breakdown_s") or {}).get("compute")
    if not isinstance(steps, int | float) or steps <= 0 or not isinstance(compute, int | float):
        return None
    return float(compute) / float(steps)


def probe_line(result: Mapping[str, Any]) -> ComputeLine | None:
    """The line through a run's batch probe (result.json `batch_probe`): one pass at b and at 2b, x grad_accum
    passes a step; None where it took none, or the probe failed."""
    probe = result.get("batch_probe") or {}
    sizes, seconds = probe.get("batch_sizes"), probe.get("compute_s")
    if not (isinstance(sizes, list) and isinstance(seconds, list) and len(sizes) == len(seconds) == 2):
        return None
    accum = float(((result.get("config") or {}).get("train") or {}).get("grad_accum") or 1)
    (x0, x1), (y0, y1) = (accum * float(n) for n in sizes), (accum * float(t) for t in seconds)
    if x1 <= x0 or y0 <= 0 or y1 <= 0:
        return None
    b = (y1 - y0) / (x1 - x0)
    return ComputeLine(y0 - b * x0, b, (x0, x1), float(probe.get("probe_s") or 0.0))


def fit(baselines: Iterable[Mapping[str, Any]]) -> ComputeLine | None:
    """The least-squares line of compute per step over samples per step of 1x1 baselines that differ only in
    batch size (exact through two); with fewer than two distinct batch sizes, the line of a baseline's batch
    probe (probe_line), else None."""
    baselines = list(baselines)
    points = [(x, y) for r in baselines
              if (x := samples_per_step(r)) is not None and (y := compute_per_step(r)) is not None]
    xs = sorted({x for x, _ in points})
    if len(xs) < 2:
        return next((line for r in baselines if (line := probe_line(r)) is not None), None)
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    a = my - b * mx
    return ComputeLine(a, b, tuple(xs)) if math.isfinite(a) and math.isfinite(b) else None


def compute_factor(line: ComputeLine | None, base: Mapping[str, Any], batch_factor: float) -> tuple[float, str]:
    """Compute per step of a configuration with `batch_factor` times the baseline's samples per step, over the
    baseline's, and what it rests on in words: the line where there is one, else the batch factor itself
    (compute per sample constant)."""
    x = samples_per_step(base)
    if batch_factor == 1.0:
        return 1.0, ""
    if line is not None and x is not None and (f := line.factor(x * batch_factor, x)) is not None:
        return f, f"compute x{f:.2f} for x{batch_factor:g} samples per step ({line.words()})"
    return batch_factor, "compute per sample assumed constant across batch sizes (one batch size recorded)"
