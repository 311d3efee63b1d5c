"""CPU a training worker spends before its first step on imports, side by side in one run: torch alone, the
HLM trainer's worker as it starts (its first AdamW imports torch._dynamo, as every torch optimizer does), and
the same with what only some runs use added back: the sharded strategies' modules (FSDP, DTensor,
torch.distributed.checkpoint, ZeroRedundancyOptimizer) and scipy.signal (the atrial lock's filter).
torchrun's own launcher is timed too: every local or cluster job starts one.

    python bench/worker_startup.py [--repeats 7]

Each figure is the median CPU seconds (user + system) of fresh processes, measured from the parent with
getrusage(RUSAGE_CHILDREN); the processes run one after another, alternating between the variants.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKER = ("from trainer.run.train import run; import trainer.data.dataset; import torch; "
          "torch.optim.AdamW([torch.zeros(1, requires_grad=True)])")
VARIANTS = {
    "torch alone": "import torch",
    "worker as it starts": WORKER,
    "worker + sharded strategies' modules": f"{WORKER}; import trainer.parallelism.fsdp, trainer.parallelism.zero1",
    "worker + those + scipy.signal": f"{WORKER}; import trainer.parallelism.fsdp, trainer.parallelism.zero1, "
                                     "scipy.signal",
    "torchrun's launcher (imports)": "import torch.distributed.run",
}


def cpu_of(code: str) -> float:
    """CPU seconds of one fresh interpreter running `code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(args.repeats):
        for name, code in VARIANTS.items():
            cpu[name].append(cpu_of(code))
    print(f"load average before the last variant: {os.getloadavg()[0]:.2f}; {args.repeats} processes each")
    worker = statistics.median(cpu["worker as it starts"])
    for name, values in cpu.items():
        median = statistics.median(values)
        print(f"{name:40s} {median:5.2f} s CPU (min {min(values):.2f}, max {max(values):.2f}); "
              f"{median - worker:+.2f} s against the worker as it starts")


if __name__ == "__main__":
    main()
