"""The Heart Language Model: a small bidirectional transformer over ECG tokens.

One encoder serves both phases: the foundation phase predicts masked tokens through a language-model head
tied to the token embedding, the fine-tune phase pools the encoder output into a classification head.
Plain PyTorch with `scaled_dot_product_attention` so that every backend (CPU, CUDA flash/mem-efficient
kernels) is used without extra dependencies.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from trainer.config_keys import BY_NAME, ModelKeys, check_model

_M = ModelKeys()  # the [model] table's defaults

IGNORE_INDEX = -100


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of one HLM; stored in every checkpoint so fine-tuning can rebuild the encoder."""

    vocab_size: int
    max_len: int
    # the architecture keys, their defaults and their rules are the [model] table's (trainer/config_keys/)
    layers: int = _M.layers
    d_model: int = _M.d_model
    heads: int = _M.heads
    dropout: float = _M.dropout
    num_classes: int = 0  # 0 = no classification head (foundation)
    pool: str = _M.pool  # what feeds the class head: "mean" of every position, or "centre" (one position)
    centre: int = 0  # the position "centre" pooling reads: the classified beat's own token
    # the rhythm gate train.calibrate may choose: [position, first token id, class] - where the token at
    # `position` is at least that id, the class is never called (trainer.scoring.calibration); None: no gate
    gate: list[int] | None = None

    def __post_init__(self) -> None:
        for key in ("vocab_size", "max_len"):
            if getattr(self, key) < 1:
                raise ValueError(f"model.{key} must be >= 1, got {getattr(self, key)}")
        for key in ("layers", "d_model", "heads", "dropout", "pool"):
            problem = BY_NAME[key].problem(getattr(self, key))
            if problem:
                raise ValueError(f"model.{key}: {problem}")
        problem = check_model({"d_model": self.d_model, "heads": self.heads})
        if problem:
            raise ValueError(problem)
        if self.num_classes < 0:
            raise ValueError(f"num_classes must be >= 0, got {self.num_classes}")
        if not 0 <= self.centre < self.max_len:
            raise ValueError(f"model centre position {self.centre} is outside the sequence (0..{self.max_len - 1})")
        if self.gate is not None and (len(self.gate) != 3 or not 0 <= self.gate[0] < self.max_len
                                      or not 0 <= self.gate[2] < self.num_classes):
            raise ValueError(f"model gate {self.gate}: expected [position < {self.max_len}, token id, class < "
                             f"{self.num_classes}]")

    def to_dict(self) -> dict:
        return asdict(self)


class SelfAttention(nn.Module):
    """Multi-head bidirectional self-attention (no causal mask: the whole window is context)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        # No bias: a key bias cannot change attention (softmax is shift-invariant), so its gradient is pure
        # rounding noise that Adam's normalisation would turn into full-size updates.
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    """Pre-norm transformer block: stable at any depth without warm-up tricks."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model),
            nn.GELU(),
            nn.Linear(4 * cfg.d_model, cfg.d_model),
            nn.Dropout(cfg.dropout),
        )
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.ln1(x)))
        return x + self.mlp(self.ln2(x))


class HeartLanguageModel(nn.Module):
    """Token + learned position embedding, a stack of blocks, and either an LM head or a class head."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        if cfg.num_classes:
            self.head = nn.Linear(cfg.d_model, cfg.num_classes)
        else:
            self.lm_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.apply(_init_weights)
        # Fine-tune class weights: a plain tensor, not a buffer, so DDP does not broadcast it every step.
        self.class_weight: torch.Tensor | None = None

    def set_class_weights(self, weights: list[float] | None, device: torch.device) -> None:
        self.class_weight = None if weights is None else torch.tensor(weights, dtype=torch.float32, device=device)

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Contextual embeddings [B, W, d] of a batch of token windows [B, W]."""
        w = tokens.shape[1]
        if w > self.cfg.max_len:
            raise ValueError(f"window {w} is longer than the model's max_len {self.cfg.max_len}")
        pos = torch.arange(w, device=tokens.device)
        x = self.drop(self.tok(tokens) + self.pos(pos))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Logits, or with `targets` the mean cross-entropy (one call, so DDP sees one forward).

        Foundation: logits [B, W, vocab] through the LM head tied to the token embedding; the loss is over
        masked positions (targets [B, W], IGNORE_INDEX elsewhere). Fine-tune: logits [B, classes] from the
        pooled encoder output (`pool`); the loss is over samples.
        """
        h = self.encode(tokens)
        if self.cfg.num_classes:
            logits = self.head(h[:, self.cfg.centre] if self.cfg.pool == "centre" else h.mean(dim=1))
            if self.cfg.gate is not None:
                logits = gated(logits, tokens, self.cfg.gate)
        elif targets is not None:
            # only the masked positions have targets: the LM head (the widest matrix) runs on those alone
            keep = targets != IGNORE_INDEX
            return F.cross_entropy(F.linear(h[keep], self.tok.weight, self.lm_bias).float(), targets[keep])
        else:
            logits = F.linear(h, self.tok.weight, self.lm_bias)
        if targets is None:
            return logits
        if self.cfg.num_classes and self.class_weight is not None:
            # Normalised by the sample count, not the weight sum, so the loss of a batch split over ranks
            # averages to the loss of the whole batch (DDP equivalence).
            # targets [B, 2]: the class and the loss weight group (train.af_group); [B]: the class weighs itself
            targets, group = targets.unbind(-1) if targets.dim() == 2 else (targets, targets)
            valid = targets != IGNORE_INDEX
            per = F.cross_entropy(logits.float(), targets, ignore_index=IGNORE_INDEX, reduction="none")
            return (per * self.class_weight[group.clamp(min=0)] * valid).sum() / valid.sum().clamp(min=1)
        return F.cross_entropy(logits.flatten(0, -2).float(), targets.flatten(), ignore_index=IGNORE_INDEX)

    def parameter_tensors(self) -> int:
        """The trainable tensors: what ZeRO-1 broadcasts one by one after each step (cockpit's prediction counts
        its calls by them)."""
        return sum(1 for p in self.parameters() if p.requires_grad)

    def num_parameters(self, non_embedding: bool = False) -> int:
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.tok.weight.numel() + self.pos.weight.numel()
        return n

    def flops_per_token(self, window: int) -> float:
        """Training FLOPs per token (forward + backward, PaLM appendix B): 6 N + 12 L d W."""
        n = self.num_parameters(non_embedding=True) + (0 if self.cfg.num_classes else self.tok.weight.numel())
        return 6.0 * n + 12.0 * self.cfg.layers * self.cfg.d_model * window


GATED_LOGIT = -1e4  # a gated class's logit: never the largest, still finite under autocast (bf16 and fp16 hold it)


def gated(logits: torch.Tensor, tokens: torch.Tensor, gate: list[int]) -> torch.Tensor:
    """`logits` [B, classes] with the gate's class set to GATED_LOGIT where the gate's token is at or past its id."""
    position, first, cls = gate
    shut = tokens[:, position] >= first
    column = torch.where(shut, torch.full_like(logits[:, cls], GATED_LOGIT), logits[:, cls])
    return torch.cat([logits[:, :cls], column[:, None], logits[:, cls + 1:]], dim=1)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)


def load_encoder(model: HeartLanguageModel, state: dict[str, torch.Tensor], source: str) -> list[str]:
    """Copy a foundation checkpoint's encoder into `model`; returns notes on what had to be adapted.

    Heads are not copied (the foundation has an LM head, the fine-tune a class head). A shorter position
    table than the fine-tune window is an error; a longer one is truncated, since positions are absolute.
    """
    notes: list[str] = []
    own = model.state_dict()
    for key, value in state.items():
        if key.startswith("head.") or key == "lm_bias":
            continue
        if key not in own:
            raise ValueError(f"{source}: parameter {key!r} does not exist in this model (different architecture?)")
        target = own[key]
        if key == "pos.weight" and value.shape[0] != target.shape[0]:
            if value.shape[0] < target.shape[0]:
                raise ValueError(
                    f"{source}: position table has {value.shape[0]} rows but the window needs {target.shape[0]}"
                )
            notes.append(f"position table truncated from {value.shape[0]} to {target.shape[0]}")
            value = value[: target.shape[0]]
        if value.shape != target.shape:
            raise ValueError(
                f"{source}: parameter {key!r} has shape {tuple(value.shape)}, this model expects {tuple(target.shape)}"
            )
        own[key] = value
    missing = [k for k in own if not k.startswith("head.") and k != "lm_bias" and k not in state]
    if missing:
        raise ValueError(f"{source}: missing encoder parameters {missing[:5]}")
    model.load_state_dict(own)
    return notes


def mask_blocks(tokens: torch.Tensor, mask_id: int, ratio: float, span: int, generator) -> tuple:
    """Masked-token inputs and targets for one window, masking whole spans of `span` tokens.

    Exactly round(ratio * W / span) spans are masked, so every window contributes the same number of
    targets: the per-sample mean loss is then the same whether the batch is split across ranks or not.
    `generator` is a numpy Generator seeded from (seed, epoch, sample index) so masks do not depend on
    which rank or worker draws the sample.
    """
    w = tokens.shape[0]
    span = max(1, min(span, w))
    n_blocks = w // span
    k = max(1, round(ratio * w / span))
    chosen = torch.from_numpy(generator.choice(n_blocks, size=min(k, n_blocks), replace=False))
    mask = torch.zeros(w, dtype=torch.bool)
    starts = chosen * span
    idx = (starts[:, None] + torch.arange(span)[None, :]).flatten()
    mask[idx] = True
    inputs = tokens.clone()
    inputs[mask] = mask_id
    targets = torch.full_like(tokens, IGNORE_INDEX)
    targets[mask] = tokens[mask]
    return inputs, targets

