"""The PyTorch Lightning way in: `RunContractCallback`, a Lightning `Callback` (docs/workloads.md).

    from runcontract.lightning import RunContractCallback
    callback = RunContractCallback()
    trainer = Trainer(..., callbacks=[callback])
    trainer.fit(model, loader, ckpt_path=callback.ckpt_path)   # None, or the checkpoint a stop signal left

It writes the run directory for the Trainer's fit (result.json `attribution.mode` = "callback"). The parts, the
steps and the samples are measured by the no-edit mode's torch hooks (runcontract.hooks: a step is an iteration
ended by an optimizer step, Lightning's closure timed as the step's, the batches the loader hands over, DDP's
all-reduce wait), installed when the callback is made, before the Trainer builds DDP; the callback adds the loss of
each training batch and checkpoint-on-signal: on SIGTERM/SIGUSR1 the workers agree, at the end of a training batch,
to stop; Lightning's own `trainer.save_checkpoint` writes `lightning-stop.ckpt` in the run directory, the fit ends,
the run ends with exit.json code 75 and the process exits 75. Run the same directory again: `callback.ckpt_path`
names that checkpoint, and T and the parts go on. Works with `lightning.pytorch` or `pytorch_lightning`, the one the
script imported (the `workloads` extra pins `pytorch-lightning`).
"""

from __future__ import annotations

import atexit
import importlib
import math
import sys
from typing import TYPE_CHECKING, Any

from runcontract.contract import EXIT_CHECKPOINTED, EXIT_FILE
from runcontract.files import ContractError, read_json
from runcontract.hooks import TorchHooks
from runcontract.run import Run

CHECKPOINT_FILE = "lightning-stop.ckpt"  # in the run directory: what a stop signal's save leaves


def _lightning() -> Any:
    """The Lightning package the script uses: the one already imported, else `lightning.pytorch`, else
    `pytorch_lightning` (a Trainer takes only its own package's callbacks)."""
    for name in ("pytorch_lightning", "lightning.pytorch"):
        if name in sys.modules:
            return sys.modules[name]
    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("runcontract.lightning needs PyTorch Lightning: pip install pytorch-lightning "
                      "(or the project's `workloads` extra)")


if TYPE_CHECKING:
    from pytorch_lightning import Callback
else:
    Callback = _lightning().Callback


def _is_sigterm_stop(exception: BaseException) -> bool:
    """Lightning's SIGTERMException: its loop ends the fit at a batch's end because a SIGTERM arrived."""
    package = _lightning().__name__
    exceptions = importlib.import_module(f"{package}.utilities.exceptions")
    stop = getattr(exceptions, "SIGTERMException", None)
    return stop is not None and isinstance(exception, stop)


class RunContractCallback(Callback):
    """Pass in `Trainer(callbacks=[...])`; give `ckpt_path=callback.ckpt_path` to `fit`. `run`: a Run of your own
    (default: Run(mode="callback"))."""

    def __init__(self, run: Run | None = None) -> None:
        self.run = run or Run(mode="callback")
        self.hooks = TorchHooks(self.run).install()
        self.run.__enter__()
        self.checkpoint = self.run.run_dir / CHECKPOINT_FILE
        self._ended = False
        self._saved = False  # this segment saved the checkpoint a stop signal asked for
        atexit.register(self._ended_early)

    @property
    def ckpt_path(self) -> str | None:
        """The checkpoint an earlier segment of this run saved on a stop signal (exit.json code 75), else None."""
        try:
            ended = read_json(self.run.run_dir / EXIT_FILE) or {}
        except ContractError:
            return None
        if ended.get("code") == EXIT_CHECKPOINTED and self.checkpoint.is_file():
            return str(self.checkpoint)
        return None

    def _ended_early(self) -> None:
        """The process ends without the fit's end (it raised): exit.json says so, no result."""
        self.run.fail(1, "the process ended before the Lightning Trainer's fit() finished (see the log)")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if self.run.grad_bytes is None:
            self.run.gradients(pl_module.parameters())

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is not None and hasattr(loss, "item"):
            value = float(loss.item())
            if math.isfinite(value):
                self.run.loss = value
        stop = self.run.should_stop
        if trainer.world_size > 1:  # every worker stops at the same batch, or none does
            stop = bool(trainer.strategy.reduce_boolean_decision(stop, all=False))
        if stop and not self._saved:
            self._save(trainer)
            trainer.should_stop = True
            trainer._signal_connector.received_sigterm = False  # the fit ends here, as should_stop says

    def _save(self, trainer: Any) -> None:
        """Lightning's checkpoint into the run directory, at the end of a training batch; the run ends with 75."""
        if not self.run.should_stop:
            self.run.request_stop("SIGTERM")  # another worker's signal
        self.hooks.flush()  # the batch's end ends the step its last optimizer step ended
        trainer.save_checkpoint(self.checkpoint)
        self.run.checkpointed(path=CHECKPOINT_FILE)
        self._saved = True

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        code = self._end()
        if code == EXIT_CHECKPOINTED:
            raise SystemExit(EXIT_CHECKPOINTED)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if self._ended:
            return
        if isinstance(exception, SystemExit) and (self._saved or _is_sigterm_stop(exception)):
            # Lightning's own stop: the signal came after this batch's on_train_batch_end had looked (or another
            # worker's did), so Lightning ends the fit at the batch's end with exit 0; save there, exit 75
            if not self._saved:
                self._save(trainer)
            exception.code = self._end()
            return
        self.hooks.remove()
        self.hooks.notes()
        self.run.fail(1, f"{type(exception).__name__}: {exception}")
        self._ended = True
        atexit.unregister(self._ended_early)

    def _end(self) -> int:
        self._ended = True
        self.hooks.remove()
        self.hooks.notes()
        code = self.run.finish()
        atexit.unregister(self._ended_early)
        return code
