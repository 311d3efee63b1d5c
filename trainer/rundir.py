"""The trainer's own files in its run directory, beside the run-directory contract (runcontract: config.json,
result.json, exit.json, metrics and GPU samples, file modes, the full-disk rule): its checkpoints and weights,
its log, and what its other commands write.
"""

from __future__ import annotations

LOG_FILE = "train.log"
CHECKPOINT_FILE = "checkpoint.pt"
SHARDS_DIR = "checkpoint.shards"  # a sharded strategy's state beside checkpoint.pt: one folder per save, step-NNNNNNNN
MODEL_FILE = "model.pt"
ENSEMBLE_FILE = "ensemble.json"  # `hlm-train ensemble --out DIR`: DIR/ensemble.json, beside the run directories
EVALUATION_FILE = "evaluation.json"  # `hlm-train evaluate MODEL --data DIR`: a database scored by a trained model
