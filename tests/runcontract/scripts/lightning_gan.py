"""A tiny GAN in PyTorch Lightning (manual optimization, a generator and a discriminator, each with its own
Adam, both stepping in every training_step) that knows nothing of runcontract: the tests study it unmodified
through `python -m runcontract.attach` (docs/workloads.md, "Two optimizers"). Lightning's global step counts
each optimizer's steps, so `max_steps=STEPS` is STEPS / 2 training iterations.

    python lightning_gan.py [STEPS]     (under torchrun: one process per worker)
"""

import os
import sys

import pytorch_lightning as pl
import torch
from torch import nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
LATENT, BATCH = 8, 64


class GAN(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.generator = nn.Sequential(nn.Linear(LATENT, 64), nn.ReLU(), nn.Linear(64, 16))
        self.discriminator = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        fake = self.generator(torch.randn(real.shape[0], LATENT, device=self.device))
        ones = torch.ones(real.shape[0], 1, device=self.device)
        zeros = torch.zeros(real.shape[0], 1, device=self.device)
        bce = nn.functional.binary_cross_entropy_with_logits

        d_loss = bce(self.discriminator(real), ones) + bce(self.discriminator(fake.detach()), zeros)
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()

        g_loss = bce(self.discriminator(fake), ones)
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.log_dict({"d_loss": d_loss, "g_loss": g_loss})

    def configure_optimizers(self):
        return (torch.optim.Adam(self.generator.parameters(), lr=2e-4),
                torch.optim.Adam(self.discriminator.parameters(), lr=2e-4))


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(4096, 16) * 0.5 + 1.0)
loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True)
workers = int(os.environ.get("WORLD_SIZE", "1"))
# the discriminator's loss gives the generator no gradient: DDP must be told some parameters go unused
strategy = "ddp_find_unused_parameters_true" if workers > 1 else "auto"
trainer = pl.Trainer(max_steps=steps, accelerator="cpu", devices=workers, strategy=strategy,
                     logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(GAN(), loader)
