"""A plain PyTorch loop whose model is compiled with `torch.compile` (an MLP on random data, the compiled model
wrapped in DDP when torchrun starts several processes), knowing nothing of runcontract: the tests study it
unmodified through `python -m runcontract.attach`. BACKEND is torch.compile's (`inductor`, its default, compiles
C++ on a CPU; `aot_eager` traces forward and backward without generating code).

    python compiled_loop.py [STEPS] [BACKEND]     (under torchrun: one process per worker)
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
backend = sys.argv[2] if len(sys.argv) > 2 else "inductor"
BATCH = 64

distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.compile(torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 2)),
                      backend=backend)
if distributed:
    model = DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(4096, 32), torch.randint(0, 2, (4096,)))
sampler = torch.utils.data.DistributedSampler(data) if distributed else None
loader = torch.utils.data.DataLoader(data, batch_size=BATCH, sampler=sampler, shuffle=sampler is None)
for step, (x, y) in enumerate(loader):
    if step == steps:
        break
    loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
if distributed:
    dist.destroy_process_group()
