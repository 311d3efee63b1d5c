"""A DDP loop that knows nothing of runcontract and calls a collective of its own each step (the loss averaged
over the workers for its log), which the no-edit mode cannot tell from compute.

    torchrun --nproc-per-node 2 own_collectives.py [STEPS]
"""

import sys

import torch
import torch.distributed as dist

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
dist.init_process_group("gloo")
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(steps * 16, 16), torch.randint(0, 2, (steps * 16,)))
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                                                      torch.nn.Linear(32, 2)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in torch.utils.data.DataLoader(data, batch_size=16):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    logged = loss.detach().clone()
    dist.all_reduce(logged)  # the script's own collective: its time is in `other`
print(f"mean loss {logged.item() / dist.get_world_size():.3f}")
dist.destroy_process_group()
