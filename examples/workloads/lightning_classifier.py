"""A PyTorch Lightning fit with runcontract's Lightning callback (docs/workloads.md, "A Lightning Trainer"): an MLP
on random data; a stop signal saves Lightning's checkpoint in the run directory, and running the same run
directory again resumes from it.

    python lightning_classifier.py [STEPS]      (under torchrun: one process per worker)
"""

import os
import sys

import pytorch_lightning as pl
import torch

from runcontract.lightning import RunContractCallback

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20


class Classifier(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(2048, 32), torch.randint(0, 2, (2048,)))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
callback = RunContractCallback()  # before the Trainer: its hooks see the DDP the Trainer builds
workers = int(os.environ.get("WORLD_SIZE", "1"))
trainer = pl.Trainer(max_steps=steps, accelerator="cpu", devices=workers, strategy="ddp" if workers > 1 else "auto",
                     callbacks=[callback], logger=False, enable_checkpointing=False, enable_progress_bar=False)
trainer.fit(Classifier(), loader, ckpt_path=callback.ckpt_path)  # None, or the checkpoint a stop signal left
