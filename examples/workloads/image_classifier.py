"""An image classifier in plain PyTorch, as the second paper's image workload: a small ResNet (defined here:
torchvision's wheels on PyPI need another torch than this project's) on scikit-learn's bundled handwritten
digits (1,797 8x8 images shipped inside the package: nothing is downloaded), resized to --size pixels and
given three channels, so the convolutions do the work of a realistic input size.

It imports nothing of the cockpit: a study runs it unmodified under `runcontract.attach` (mode = "hooks",
docs/workloads.md), which splits its steps into data wait, compute, communication and optimizer.

    torchrun --nproc-per-node 2 image_classifier.py --precision bf16 --pin-memory true --loader-workers 2 \
        --batch 32 --strategy ddp --steps 20 --size 64

--strategy: ddp (DistributedDataParallel), fsdp (FSDP2 fully_shard), dp (torch.nn.DataParallel: one process
driving every GPU of the node; refused in one line where the node has fewer than two GPUs or under torchrun
with several processes). --precision: autocast to fp16 or bf16 (fp32: none); fp16 on a GPU scales the loss.
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn

DTYPES = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}


class Block(nn.Module):
    """ResNet's basic block: two 3x3 convolutions and the shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                      if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.short(x))


class ResNet(nn.Module):
    """ResNet-10: a stem, four stages of one basic block (widths 16-128), global pooling, a linear head."""

    def __init__(self, classes: int = 10, width: int = 16) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        widths = [width, width * 2, width * 4, width * 8]
        self.stages = nn.Sequential(*(Block(cin, cout, 1 if i == 0 else 2)
                                      for i, (cin, cout) in enumerate(zip([width, *widths[:-1]], widths, strict=True))))
        self.head = nn.Linear(widths[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1), 1))


def digits(size: int) -> torch.utils.data.TensorDataset:
    """scikit-learn's digits as 3 x size x size images in [0, 1] and their labels."""
    d = load_digits()
    images = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    images = F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False).expand(-1, 3, -1, -1)
    return torch.utils.data.TensorDataset(images.contiguous(), torch.tensor(d.target))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precision", choices=tuple(DTYPES), default="fp32")
    p.add_argument("--pin-memory", choices=("true", "false"), default="false")
    p.add_argument("--loader-workers", type=int, default=0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--strategy", choices=("ddp", "fsdp", "dp"), default="ddp")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    if args.strategy == "dp" and (world > 1 or torch.cuda.device_count() < 2):
        print(f"image_classifier: strategy dp (DataParallel) drives several GPUs from one process: this node has "
              f"{torch.cuda.device_count()} GPU(s) and the launcher started {world} process(es); use ddp or fsdp",
              file=sys.stderr)
        return 2
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")
    torch.manual_seed(0)
    data = digits(args.size)
    sampler = torch.utils.data.DistributedSampler(data, world, rank, shuffle=True, seed=0) if world > 1 else None
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, sampler=sampler, shuffle=sampler is None,
                                         num_workers=args.loader_workers, pin_memory=args.pin_memory == "true",
                                         drop_last=True, persistent_workers=args.loader_workers > 0)
    model: nn.Module = ResNet().to(device)
    if args.strategy == "dp":
        model = nn.DataParallel(model)
    elif args.strategy == "fsdp" and world > 1:
        from torch.distributed.fsdp import fully_shard

        for stage in model.stages:
            fully_shard(stage)
        fully_shard(model)
    elif world > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    dtype = DTYPES[args.precision]
    scaler = torch.amp.GradScaler("cuda", enabled=cuda and dtype is torch.float16)
    step, epoch = 0, 0
    while step < args.steps:
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            step += 1
            if step >= args.steps:
                break
        epoch += 1
    if rank == 0:
        print(f"image_classifier: {step} steps, last loss {loss.item():.3f}")
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
