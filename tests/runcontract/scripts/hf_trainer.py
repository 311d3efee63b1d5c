"""A `transformers` Trainer fine-tune with the callback way in (docs/workloads.md's second example): a GPT-2-style
model built from a config (random weights, nothing downloaded) on a few token sequences."""

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from runcontract.hf import RunContractCallback

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2))
data = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (64, 32))]
args = TrainingArguments(output_dir="hf-out", max_steps=steps, per_device_train_batch_size=4, learning_rate=1e-3,
                         logging_steps=2, save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True)
Trainer(model=model, args=args, train_dataset=data, callbacks=[RunContractCallback()]).train()
