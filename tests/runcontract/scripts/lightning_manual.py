"""A plain PyTorch Lightning script with manual optimization (an MLP on random data) that knows nothing of
runcontract: the tests study it unmodified through `python -m runcontract.attach`.

    python lightning_manual.py [STEPS]     (under torchrun: one process per worker)
"""

import os
import sys

import pytorch_lightning as pl
import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
BATCH = 64


class MLP(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 2))

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        self.log("loss", loss)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(4096, 32), torch.randint(0, 2, (4096,)))
loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True)
workers = int(os.environ.get("WORLD_SIZE", "1"))
trainer = pl.Trainer(max_steps=steps, accelerator="cpu", devices=workers, strategy="ddp" if workers > 1 else "auto",
                     logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(MLP(), loader)
