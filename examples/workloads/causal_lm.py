"""A causal language-model fine-tune through the `transformers` Trainer, as the second paper's LLM workload: a
GPT-2-style model built from a config (random weights: nothing is downloaded) on a text every Python ships,
CPython's own documentation topics (`pydoc_data.topics`, under the PSF License), read byte by byte (a 256-token
vocabulary, so no tokenizer is downloaded either).

The Trainer's steps are timed by runcontract's callback (mode = "callback", docs/workloads.md):

    torchrun --nproc-per-node 2 causal_lm.py --precision bf16 --pin-memory true --loader-workers 0 --batch 8 \
        --strategy ddp --steps 20 --seq 128

--strategy: ddp (the Trainer's DistributedDataParallel under torchrun), fsdp (the Trainer's fsdp="full_shard"),
dp (the Trainer's own DataParallel over every GPU of one process: refused in one line where the node has fewer
than two GPUs or under torchrun with several processes). --precision: fp16 needs a GPU (refused on CPU).
"""

import argparse
import os
import sys
from pydoc_data.topics import topics

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from runcontract.hf import RunContractCallback


def corpus(seq: int) -> list[dict[str, torch.Tensor]]:
    """The documentation topics as bytes, cut into sequences of `seq` tokens (labels = inputs: causal LM)."""
    text = "\n\n".join(topics[name] for name in sorted(topics)).encode("utf-8")
    ids = torch.tensor(list(text), dtype=torch.long)
    chunks = ids[: len(ids) // seq * seq].view(-1, seq)
    return [{"input_ids": c, "labels": c} for c in chunks]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32")
    p.add_argument("--pin-memory", choices=("true", "false"), default="false")
    p.add_argument("--loader-workers", type=int, default=0)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--strategy", choices=("ddp", "fsdp", "dp"), default="ddp")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    args = p.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    cuda = torch.cuda.is_available()
    if args.strategy == "dp" and (world > 1 or torch.cuda.device_count() < 2):
        print(f"causal_lm: strategy dp (DataParallel) drives several GPUs from one process: this node has "
              f"{torch.cuda.device_count()} GPU(s) and the launcher started {world} process(es); use ddp or fsdp",
              file=sys.stderr)
        return 2
    if args.precision == "fp16" and not cuda:
        print("causal_lm: precision fp16 needs a GPU (the Trainer's fp16 is CUDA's); use fp32 or bf16 here",
              file=sys.stderr)
        return 2
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=args.seq, n_embd=args.width,
                                       n_layer=args.layers, n_head=max(1, args.width // 64)))
    training = TrainingArguments(
        output_dir="hf-out", max_steps=args.steps, per_device_train_batch_size=args.batch, learning_rate=3e-4,
        logging_steps=max(1, args.steps // 4), save_strategy="no", report_to=[], use_cpu=not cuda,
        disable_tqdm=True, bf16=args.precision == "bf16", fp16=args.precision == "fp16",
        dataloader_pin_memory=args.pin_memory == "true", dataloader_num_workers=args.loader_workers,
        fsdp="full_shard" if args.strategy == "fsdp" and world > 1 else "", seed=0)
    Trainer(model=model, args=training, train_dataset=corpus(args.seq), callbacks=[RunContractCallback()]).train()
    return 0


if __name__ == "__main__":
    sys.exit(main())
