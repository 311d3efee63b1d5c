"""A plain loop with a GradScaler that knows nothing of runcontract: at the iterations named on the command line
its loss is made infinite, so the scaler finds inf gradients and skips that optimizer step.

    python scaler_skips.py ITERATIONS [SKIPPED_ITERATION ...]
"""

import sys

import torch

iterations = int(sys.argv[1])
skipped = {int(i) for i in sys.argv[2:]}
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(iterations * 8, 16), torch.randint(0, 2, (iterations * 8,)))
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for i, (x, y) in enumerate(torch.utils.data.DataLoader(data, batch_size=8)):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    if i in skipped:
        loss = loss * float("inf")
    scaler.scale(loss).backward()
    scaler.step(optimizer)  # skipped where the gradients hold inf
    scaler.update()
    optimizer.zero_grad()
print(f"scale {scaler.get_scale()}")
