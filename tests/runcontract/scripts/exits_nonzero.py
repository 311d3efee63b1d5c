"""Trains two steps, then gives up with exit status 3 (as a script that finds its data missing would)."""

import sys

import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
print("no shards under /scratch/shards: nothing more to train on", file=sys.stderr)
sys.exit(3)
