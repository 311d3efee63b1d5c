"""The Hugging Face `transformers` way in: `RunContractCallback`, a `TrainerCallback`.

    from runcontract.hf import RunContractCallback
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[RunContractCallback()])
    trainer.train(resume_from_checkpoint=...)   # as the script already does

It writes the run directory for the Trainer's run (result.json `attribution.mode` = "callback"). The parts are
measured by the same torch hooks as the no-edit mode (runcontract.hooks: a step is one optimizer step, the
DataLoader's batches, forward and backward, DDP's all-reduce wait), installed when the callback is made (before
the Trainer builds DDP); the callback adds what only the Trainer knows: the loss, the samples and tokens, and
checkpoint-on-signal: on SIGTERM/SIGUSR1 it asks the Trainer to save a checkpoint and stop
(`control.should_save`, `control.should_training_stop`); once the Trainer saved it, the run ends with
exit.json code 75 and the process exits 75 at the end of `train()` (run the script again with
`resume_from_checkpoint=True` to go on). Needs `transformers` (the `workloads` extra).
"""

import atexit
import math
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from runcontract.contract import EXIT_CHECKPOINTED
from runcontract.hooks import TorchHooks
from runcontract.run import Run


class RunContractCallback(TrainerCallback):
    """Pass in `Trainer(callbacks=[...])`. `run`: a Run of your own (default: Run(mode="callback"))."""

    def __init__(self, run: Run | None = None) -> None:
        self.run = run or Run(mode="callback")
        self.hooks = TorchHooks(self.run).install()
        self.run.__enter__()
        self._saved_after_stop = False
        atexit.register(self._ended_early)

    def _ended_early(self) -> None:
        """The process ends without on_train_end (train() raised): exit.json says so, no result."""
        self.run.fail(1, "the process ended before the Trainer's train() finished (see the log)")

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       model: Any = None, **kwargs: Any) -> None:
        if model is not None and self.run.grad_bytes is None:
            self.run.gradients(model.parameters())

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                    **kwargs: Any) -> None:
        if self.run.should_stop:
            control.should_save = True
            control.should_training_stop = True

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        if self.run.should_stop:
            self._saved_after_stop = True
            self.run.checkpointed(path=f"{args.output_dir}/checkpoint-{state.global_step}")

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
               logs: dict[str, float] | None = None, **kwargs: Any) -> None:
        loss = (logs or {}).get("loss")
        if isinstance(loss, int | float) and math.isfinite(loss):
            self.run.loss = float(loss)

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                     **kwargs: Any) -> None:
        self.hooks.remove()
        self.hooks.notes()
        steps = self.run.ledger.steps
        self.run.samples = steps * args.per_device_train_batch_size * args.gradient_accumulation_steps
        tokens = getattr(state, "num_input_tokens_seen", 0) or 0
        world = max(self.run.world_size, 1)
        self.run.tokens = int(tokens) // world  # the Trainer counts every rank's; the run adds them up again
        self.run.measured["trainer_global_step"] = state.global_step
        if self.run.should_stop and not self._saved_after_stop:
            self.run.not_separated.append("checkpoint: a stop signal arrived but the Trainer saved no checkpoint")
        code = self.run.finish()
        atexit.unregister(self._ended_early)
        if code == EXIT_CHECKPOINTED:
            raise SystemExit(EXIT_CHECKPOINTED)
