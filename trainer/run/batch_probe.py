"""Compute at the run's batch and at twice it, timed at start-up (`train.batch_probe`; outside T).

A prediction at another batch size than its baseline ran prices compute per sample as the baseline's, and the
benches show that under-prices a doubled batch by about half (bench/README.md, the optimisation loop). One
1-worker run can measure the slope instead: forward and backward of its first windows at batch b and at 2b, the
least of PROBE_STEPS timed passes after one warm-up each, with the gradients, the random streams and the weights
left as they were (no optimizer step). cockpit/forecast/batch_fit.py draws the line through the two points.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset, default_collate

from trainer.measure.timing import Clock

PROBE_STEPS = 3  # timed passes per batch size, the least kept: what a pass costs when nothing else runs


def batch_probe(model: nn.Module, train: Dataset, batch_size: int, device: torch.device,
                autocast: Callable[[], Any], clock: Clock) -> dict[str, Any]:
    """result.json `batch_probe`: {batch_sizes [b, 2b], compute_s [seconds of one forward and backward at each],
    steps, probe_s}, or {error, probe_s} where the training split has fewer than 2b windows or 2b does not fit the
    device's memory."""
    t0 = time.perf_counter()
    sizes = [batch_size, 2 * batch_size]
    if len(train) < sizes[-1]:  # type: ignore[arg-type]  # Dataset: no __len__
        return {"error": f"the training split has {len(train)} windows, fewer than {sizes[-1]}",  # type: ignore[arg-type]
                "probe_s": time.perf_counter() - t0}
    states = (random.getstate(), np.random.get_state(), torch.get_rng_state(),
              torch.cuda.get_rng_state_all() if device.type == "cuda" else None)
    try:
        inputs, targets = default_collate([train[(0, i)] for i in range(sizes[-1])])
        inputs, targets = inputs.to(device), targets.to(device)
        seconds = [_least_pass(model, inputs[:n], targets[:n], autocast, clock) for n in sizes]
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return {"error": f"batch {sizes[-1]} does not fit the device's memory", "probe_s": time.perf_counter() - t0}
    finally:
        model.zero_grad(set_to_none=True)
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if states[3] is not None:
            torch.cuda.set_rng_state_all(states[3])
    return {"batch_sizes": sizes, "compute_s": seconds, "steps": PROBE_STEPS, "probe_s": time.perf_counter() - t0}


def _least_pass(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, autocast: Callable[[], Any],
                clock: Clock) -> float:
    """The least seconds of PROBE_STEPS forward-and-backward passes, after one untimed."""
    times = []
    for i in range(PROBE_STEPS + 1):
        start = clock.mark()
        with autocast():
            loss = model(inputs, targets)
        loss.backward()
        end = clock.mark()
        model.zero_grad(set_to_none=True)
        clock.sync()
        if i:
            times.append(clock.elapsed(start, end))
    return min(times)
