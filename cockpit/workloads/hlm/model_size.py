"""The HLM's parameter count from its shape, and a configuration's: what the disk footprint sizes its
checkpoints by and the GPU fit (cockpit.forecast.gpu_fit) its model states."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainer.config_keys import N_SPECIAL, TOKENIZER

FINETUNE_CLASSES = 5  # the fine-tune head's beat classes, N S V F Q (trainer.data.labels.BEAT_CLASSES)


def parameters(layers: int, d_model: int, vocab: int, max_len: int, classes: int = 0) -> int:
    """trainer.model.HeartLanguageModel's parameter count: token and position embeddings, per block
    12 d^2 + 10 d (attention's qkv and projection, the 4d MLP, two LayerNorms), the final LayerNorm, and the
    class head (or the LM head's bias: its weights are the token embedding's)."""
    head = classes * d_model + classes if classes else vocab
    return (vocab + max_len) * d_model + layers * (12 * d_model**2 + 10 * d_model) + 2 * d_model + head


def configuration_parameters(model: Mapping[str, Any], tokenizer: Mapping[str, Any], values: Mapping[str, Any]) -> int:
    """A configuration's parameter count: [model]'s shape, its dataset's tokenizer ([model] has no vocab: the
    tokenizer's bins and its special tokens are the embedding's rows), its window and its mode's head."""
    vocab = N_SPECIAL + int(tokenizer.get("vocab") or TOKENIZER["vocab"].default)
    classes = FINETUNE_CLASSES if values["mode"] == "finetune" else 0
    return parameters(int(model.get("layers") or 4), int(model.get("d_model") or 128), vocab, int(values["window"]),
                      classes)
