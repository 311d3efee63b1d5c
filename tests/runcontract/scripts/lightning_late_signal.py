"""A Lightning fit with runcontract's callback whose own SIGTERM comes just after the callback looked at the end
of a training batch: Lightning then ends the fit itself (its SIGTERMException, exit 0) unless the callback saves
there. The signal is sent from a later callback, so the order is the same on every run.

    python lightning_late_signal.py STEPS SIGNAL_AT_STEP
"""

import os
import signal
import sys

import pytorch_lightning as pl
import torch

from runcontract.lightning import RunContractCallback

steps, signal_at = int(sys.argv[1]), int(sys.argv[2])


class Classifier(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class SignalAfter(pl.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step == signal_at:
            os.kill(os.getpid(), signal.SIGTERM)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(1024, 32), torch.randint(0, 2, (1024,)))
loader = torch.utils.data.DataLoader(data, batch_size=32)
callback = RunContractCallback()
trainer = pl.Trainer(max_steps=steps, accelerator="cpu", devices=1, callbacks=[callback, SignalAfter()],
                     logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Classifier(), loader, ckpt_path=callback.ckpt_path)
