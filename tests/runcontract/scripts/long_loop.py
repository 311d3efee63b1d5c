"""A plain loop that trains until it is stopped, printing its progress (no runcontract in it)."""

import torch

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 8)), batch_size=8)
step = 0
while True:
    for (x,) in loader:
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        step += 1
        if step % 100 == 0:
            print(f"step {step}", flush=True)
