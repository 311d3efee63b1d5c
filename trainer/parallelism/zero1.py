"""ZeRO stage 1 (`zero1`): DDP for the gradients plus torch's ZeroRedundancyOptimizer. Each worker keeps and
updates the optimizer state of its share of the parameters, then broadcasts its updated share, timed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch
from torch.distributed.optim import ZeroRedundancyOptimizer

from trainer.parallelism.layout import Layout, adamw_options

if TYPE_CHECKING:
    from torch import nn

    from trainer.measure.timing import CommMeter
    from trainer.parallelism.distributed import Dist
    from trainer.settings import Settings


class _TimedZero(ZeroRedundancyOptimizer):
    """ZeroRedundancyOptimizer whose broadcast of the updated shards (after the local step) is timed."""

    meter: CommMeter

    def _sync_params(self) -> None:  # torch's stub for the class leaves its private methods out
        nbytes = sum(p.numel() * p.element_size() for group in self.param_groups for p in group["params"])
        with self.meter.timed("broadcast", nbytes):
            super()._sync_params()  # type: ignore[misc]


class ZeroLayout(Layout):
    """The parameters and gradients whole on every rank, the optimizer state in shares."""

    def optimizer(self, groups: list[dict[str, Any]], s: Settings, meter: CommMeter,
                  impl: dict[str, bool]) -> torch.optim.Optimizer:
        optimizer = _TimedZero(groups, optimizer_class=torch.optim.AdamW, **adamw_options(s, impl))
        optimizer.meter = meter
        return optimizer

    def local_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        """The local optimizer: the state of this rank's share."""
        return cast(ZeroRedundancyOptimizer, optimizer).optim

    def checkpoint_state(self, raw: nn.Module, optimizer: torch.optim.Optimizer,
                         d: Dist) -> tuple[dict[str, Any], dict[str, Any]]:
        """The optimizer state consolidated on rank 0 first (torch saves it no other way)."""
        cast(ZeroRedundancyOptimizer, optimizer).consolidate_state_dict(to=0)
        return raw.state_dict(), optimizer.state_dict() if d.is_main else {}


def layout(strategy: str) -> Layout:
    return ZeroLayout()
