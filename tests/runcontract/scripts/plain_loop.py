"""A plain PyTorch loop with the explicit way in (docs/workloads.md's first example, run by the tests)."""

import sys

import torch

import runcontract

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(steps * 8, 16), torch.randint(0, 2, (steps * 8,)))
loader = torch.utils.data.DataLoader(data, batch_size=8)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

with runcontract.Run() as run:
    run.gradients(model.parameters())  # comm.grad_bytes: lets the cockpit predict N workers from this run
    for x, y in run.data(loader):
        with run.part("compute"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
        with run.part("optimizer"):
            opt.step()
            opt.zero_grad()
        run.step(samples=len(x), loss=loss.item())
        if run.should_stop:
            torch.save(model.state_dict(), "checkpoint.pt")
            run.checkpointed()
            break
