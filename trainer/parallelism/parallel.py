"""Data parallelism, one code path per `strategy` (torchtitan's "parallelisms"; docs/strategies.md).

- `ddp`: DistributedDataParallel, a full replica per worker; gradients all-reduced per bucket through the
  timed comm hook (timing.CommMeter).
- `zero1` (zero1.py): DDP for the gradients plus torch's ZeroRedundancyOptimizer: each worker keeps and updates
  the optimizer state of its share of the parameters, then broadcasts its updated share (ZeRO stage 1).
- `fsdp` (fsdp.py): FSDP2 `fully_shard` per transformer block and at the root, `reshard_after_forward=True`:
  parameters, gradients and optimizer state sharded; parameters all-gathered before forward and again before
  backward, gradients reduce-scattered (ZeRO stage 3).
- `fsdp_noreshard`: the same with `reshard_after_forward=False`: the gathered parameters stay from forward to
  backward (one all-gather per step instead of two, full parameters held meanwhile; ZeRO-2-like).

With one process there is no process group and every strategy is the plain model with AdamW. Every collective a
strategy issues itself is timed per kind by the CommMeter (all_gather, reduce_scatter, broadcast), as DDP's
all-reduce buckets are. What differs in how the state lies across ranks (memory held, checkpoints, the whole
model for evaluation) is the strategy's `Layout` (layout.py), imported only by the runs that use it.
"""

from __future__ import annotations

import contextlib
import importlib
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from runcontract.axes import STRATEGY_SHARDS
from trainer.measure.timing import CommMeter, comm_hook
from trainer.model import HeartLanguageModel
from trainer.parallelism.distributed import Dist
from trainer.parallelism.layout import Layout
from trainer.settings import Settings

# The strategies whose state lies in shards, and the module of each one's Layout.
SHARDED_LAYOUTS = {"zero1": "trainer.parallelism.zero1", "fsdp": "trainer.parallelism.fsdp",
                   "fsdp_noreshard": "trainer.parallelism.fsdp"}


@dataclass
class Parallel:
    """A rank's model and optimizer as its strategy wraps them."""

    strategy: str  # as configured
    applied: str  # what runs: the strategy, or "none" with one process
    model: nn.Module  # what the step calls
    root: HeartLanguageModel  # the model itself (under FSDP its root FSDPModule, even when `model` is compiled)
    optimizer: torch.optim.Optimizer
    opt_kind: str  # "fused" or "foreach"
    mixed_precision: str | None  # FSDP's parameter/reduction dtype on GPU ("bf16"), else None
    layout: Layout  # how the state lies across ranks

    def accumulate(self, last_micro: bool) -> AbstractContextManager[Any]:
        """Around one micro-batch: gradients are synchronised only on the step's last one."""
        if isinstance(self.model, DDP) and not last_micro:
            return self.model.no_sync()
        self.layout.gradient_sync(self.root, last_micro)
        return contextlib.nullcontext()

    @property
    def sharded(self) -> tuple[str, ...]:
        return STRATEGY_SHARDS.get(self.applied, ())

    def held_bytes(self) -> dict[str, int]:
        """Bytes of parameters, gradients and optimizer state this rank holds (Layout.held_bytes)."""
        return self.layout.held_bytes(self.root, self.optimizer)


def layout_of(applied: str) -> Layout:
    """The strategy's Layout: the replicated one, or a sharded strategy's from its own module."""
    module = SHARDED_LAYOUTS.get(applied)
    return importlib.import_module(module).layout(applied) if module else Layout()


def parallelize(raw: HeartLanguageModel, s: Settings, d: Dist, meter: CommMeter) -> Parallel:
    """Wrap the model and build the optimizer the configured strategy's way (the model is on its device)."""
    strategy = s.axes.strategy
    applied = strategy if d.enabled else "none"
    layout = layout_of(applied)
    mixed = layout.wrap(raw, s, d, meter)
    model: nn.Module = raw
    if s.train.compile:
        # torch.compile is annotated as returning a plain callable; given a Module it returns an OptimizedModule
        model = torch.compile(raw)  # type: ignore[assignment]
    if applied in ("ddp", "zero1"):
        ddp = DDP(model, device_ids=[d.device.index] if d.device.type == "cuda" else None,
                  gradient_as_bucket_view=True, bucket_cap_mb=s.train.bucket_cap_mb or None)
        ddp.register_comm_hook(meter, comm_hook)
        model = ddp
    optimizer, opt_kind = _optimizer(raw, s, layout, meter)
    return Parallel(strategy, applied, model, raw, optimizer, opt_kind, mixed, layout)


def _optimizer(model: nn.Module, s: Settings, layout: Layout,
               meter: CommMeter) -> tuple[torch.optim.Optimizer, str]:
    """AdamW with weight decay on matrices only, the fused kernel where this torch has one, as the layout
    builds it (ZeRO-1: inside the ZeroRedundancyOptimizer)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups: list[dict[str, Any]] = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": s.train.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    last: Exception | None = None
    for kind in ("fused", "foreach"):
        try:
            return layout.optimizer(groups, s, meter, {kind: True}), kind
        except (RuntimeError, TypeError, ValueError) as exc:
            last = exc
    raise RuntimeError(f"AdamW could not be built: {last}")
