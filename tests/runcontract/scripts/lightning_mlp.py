"""A plain PyTorch Lightning script (automatic optimization, an MLP on random data) that knows nothing of
runcontract: the tests study it unmodified through `python -m runcontract.attach`.

    python lightning_mlp.py [STEPS] [adam|lbfgs] [ACCUMULATE]     (under torchrun: one process per worker)

ACCUMULATE: Lightning's `accumulate_grad_batches` (1: an optimizer step per batch).
"""

import os
import sys

import pytorch_lightning as pl
import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
optimizer = sys.argv[2] if len(sys.argv) > 2 else "adam"
accumulate = int(sys.argv[3]) if len(sys.argv) > 3 else 1
WIDTH, BATCH = 256, 256


class MLP(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH),
                                       torch.nn.ReLU(), torch.nn.Linear(WIDTH, 2))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        if optimizer == "lbfgs":
            return torch.optim.LBFGS(self.parameters(), lr=0.1, max_iter=4)
        return torch.optim.Adam(self.parameters(), lr=1e-3)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(4096, 64), torch.randint(0, 2, (4096,)))
loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True)
workers = int(os.environ.get("WORLD_SIZE", "1"))
trainer = pl.Trainer(max_steps=steps, accelerator="cpu", devices=workers, strategy="ddp" if workers > 1 else "auto",
                     accumulate_grad_batches=accumulate, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(MLP(), loader)
