"""How a strategy lays the model and optimizer state across ranks, as the rest of a run needs to know it:
wrapping the model, building the optimizer, counting what a rank holds, saving and restoring it, and the whole
model for evaluation.

`Layout` is the replicated case (one process, or DDP): every rank holds everything. ZeRO-1 (`zero1.py`) and
FSDP (`fsdp.py`) override what differs, each in its own module, imported by the runs that use it: what a
strategy does to the state is read in one place, and no other module tests a model or optimizer for a
sharded type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from pathlib import Path

    from trainer.measure.timing import CommMeter
    from trainer.model import HeartLanguageModel
    from trainer.parallelism.distributed import Dist
    from trainer.settings import Settings


def adamw_options(s: Settings, impl: dict[str, bool]) -> dict[str, Any]:
    """AdamW's settings for every strategy: the learning rate, the betas, and `impl` (fused or foreach)."""
    return {"lr": s.train.lr, "betas": (0.9, 0.95), **impl}


class Layout:
    """Every rank holds the whole model and optimizer state (one process, or DDP)."""

    shards_state = False  # whether the state is saved shard by shard by every rank (`save_shards`)

    def wrap(self, raw: HeartLanguageModel, s: Settings, d: Dist, meter: CommMeter) -> str | None:
        """Shard the model in place where the strategy does; returns its mixed-precision dtype, if any."""
        return None

    def optimizer(self, groups: list[dict[str, Any]], s: Settings, meter: CommMeter,
                  impl: dict[str, bool]) -> torch.optim.Optimizer:
        """AdamW over the parameter groups, with the implementation flag `impl` (fused or foreach)."""
        return torch.optim.AdamW(groups, **adamw_options(s, impl))

    def gradient_sync(self, root: nn.Module, on: bool) -> None:
        """Before a micro-batch: whether its backward synchronises the gradients (DDP's is `no_sync`)."""

    def local_bytes(self, tensor: torch.Tensor) -> int:
        """Bytes of the tensor this rank holds."""
        return int(tensor.numel() * tensor.element_size())

    def local_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        """The optimizer whose state this rank holds."""
        return optimizer

    def held_bytes(self, raw: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
        """Bytes of parameters, gradients and optimizer state this rank holds, counted from the tensors (a
        shard by its local part). Call it with the gradients still present."""
        params = list(raw.parameters())
        state = [v for per_param in self.local_optimizer(optimizer).state.values() for v in per_param.values()
                 if isinstance(v, torch.Tensor)]
        out = {"params_bytes": sum(self.local_bytes(p) for p in params),
               "grads_bytes": sum(self.local_bytes(p.grad) for p in params if p.grad is not None),
               "optimizer_bytes": sum(self.local_bytes(v) for v in state)}
        out["model_states_bytes"] = sum(out.values())
        return out

    def total_norm(self, norm: torch.Tensor) -> torch.Tensor:
        """clip_grad_norm_'s result as a plain tensor."""
        return norm

    def checkpoint_state(self, raw: nn.Module, optimizer: torch.optim.Optimizer,
                         d: Dist) -> tuple[dict[str, Any], dict[str, Any]]:
        """Model and optimizer state for checkpoint.pt, whole on rank 0; every rank must call it."""
        return raw.state_dict(), optimizer.state_dict()

    def load_checkpoint_state(self, raw: nn.Module, optimizer: torch.optim.Optimizer, model_state: dict[str, Any],
                              optim_state: dict[str, Any]) -> None:
        """Load what `checkpoint_state` saved (every rank read checkpoint.pt): each keeps its own share."""
        raw.load_state_dict(model_state)
        optimizer.load_state_dict(optim_state)

    def save_shards(self, raw: nn.Module, optimizer: torch.optim.Optimizer, directory: Path) -> None:
        raise RuntimeError("this strategy keeps its state whole: it is saved in checkpoint.pt, not in shards")

    def load_shards(self, raw: nn.Module, optimizer: torch.optim.Optimizer, directory: Path) -> None:
        raise RuntimeError(f"{directory}: sharded state, but this run's strategy keeps its state whole")

    def full_weights(self, raw: nn.Module) -> dict[str, Any]:
        """The whole model's weights on every rank (every rank calls it)."""
        return raw.state_dict()

    def plain_model(self, raw: HeartLanguageModel) -> HeartLanguageModel:
        """The model for evaluation, unsharded."""
        return raw
