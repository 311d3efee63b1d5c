"""A plain Accelerate script with gradient accumulation that knows nothing of runcontract, studied unmodified
through `python -m runcontract.attach` (docs/workloads.md, "Accelerate"): STEPS optimizer steps of ACCUMULATE
micro-batches of 32 per process, from a loader with more batches than that, stopped by counting the steps.

    python accelerate_accumulate.py [STEPS] [ACCUMULATE]     (under torchrun: one process per worker)
"""

import sys

import torch
from accelerate import Accelerator

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
accumulate = int(sys.argv[2]) if len(sys.argv) > 2 else 2
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=accumulate)
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(4096 * accelerator.num_processes, 16),
                                      torch.randint(0, 2, (4096 * accelerator.num_processes,)))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
done = 0
for x, y in loader:
    with accelerator.accumulate(model):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        accelerator.backward(loss)
        optimizer.step()  # AcceleratedOptimizer: steps only when the accumulated gradients are synchronised
        optimizer.zero_grad()
    if accelerator.sync_gradients:
        done += 1
        if done == steps:
            break
accelerator.print(f"optimizer steps: {done}")
