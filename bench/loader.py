"""DataLoader throughput over prepared shards versus what the model consumes (tokens/s).

  python bench/loader.py [--data-root ../shared/data/physionet] [--windows 128 1024] [--workers 0 1 2]

Prepares mitdb with `samples` (or the synthetic dataset with --synthetic) into a cache, then for each
window: tokens/s the DataLoader delivers with 0, 1, 2 worker processes (shuffled, batch 64, the first
batch excluded: it includes worker start-up), also through the trainer's masking wrapper when it is
importable, and tokens/s a small HLM trains on (forward + backward + AdamW, one CPU thread).
The ratio loader/model is the head-room: >= 20 means input is not the bottleneck.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trainer.data.dataset import WindowDataset, load_manifest  # noqa: E402
from trainer.data.prepare import prepare_dataset  # noqa: E402


def loader_rate(ds, batch: int, workers: int, tokens: int) -> float:  # noqa: ANN001
    """Tokens/s delivered by a shuffled DataLoader, first batch excluded."""
    window = ds[0][0].shape[0]
    n_batches = max(4, tokens // (batch * window))
    dl = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, drop_last=True,
                    persistent_workers=workers > 0, generator=torch.Generator().manual_seed(0))
    it = iter(dl)
    next(it)
    t0 = time.perf_counter()
    got = 0
    for _ in range(n_batches):
        try:
            x = next(it)[0]
        except StopIteration:
            it = iter(dl)
            x = next(it)[0]
        got += x.numel()
    return got / (time.perf_counter() - t0)


def model_rate(vocab: int, window: int, batch: int, layers: int, d_model: int, heads: int) -> float | None:
    """Tokens/s of training steps of an HLM on one CPU thread; None if the model is not available."""
    try:
        from trainer.model import HeartLanguageModel, ModelConfig
    except ImportError:
        return None
    torch.manual_seed(0)
    model = HeartLanguageModel(ModelConfig(vocab_size=vocab, max_len=window, layers=layers, d_model=d_model,
                                           heads=heads))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(4, vocab, (batch, window))
    target = torch.where(torch.rand(batch, window) < 0.15, x, torch.full_like(x, -100))
    steps, elapsed = 0, 0.0
    for i in range(8):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        model(x, target).backward()
        opt.step()
        if i >= 1:  # the first step allocates
            steps += 1
            elapsed += time.perf_counter() - t0
        if elapsed > 5.0:
            break
    return steps * batch * window / elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data" / "physionet")
    ap.add_argument("--synthetic", action="store_true", help="use the synthetic dataset instead of mitdb")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "hlm-bench-tokens")
    ap.add_argument("--windows", type=int, nargs="+", default=[128, 1024])
    ap.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=4_000_000, help="tokens to pull per loader measurement")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    data = None if args.synthetic else args.data_root / "mitdb"
    if data is not None and not (data / "RECORDS").exists():
        print(f"{data}: not found (give --data-root or --synthetic)", file=sys.stderr)
        return 2
    shard = prepare_dataset(data, {"name": "samples"}, args.cache, workers=1)
    m = load_manifest(shard)
    print(f"shards: {shard} ({m['dataset']}, {m['totals']['beats']:,} beats, vocab {m.vocab_size})")
    try:
        from trainer.data.batches import MaskedWindows
    except ImportError:
        MaskedWindows = None  # noqa: N806
    models = {"small (2x64)": (2, 64, 4), "default (4x256)": (4, 256, 4)}
    for window in args.windows:
        ds = WindowDataset(shard, window, "foundation")
        consume = {name: model_rate(m.vocab_size, window, args.batch, *cfg) for name, cfg in models.items()}
        for name, rate in consume.items():
            if rate:
                print(f"W={window:5}  model {name:16} trains on {rate:>12,.0f} tokens/s (1 thread)")
        sources = [("windows", ds)]
        if MaskedWindows is not None:
            sources.append(("+masking", MaskedWindows(ds, m.mask_id, 0.15, 8, 0)))
        for label, source in sources:
            for w in args.workers:
                rate = loader_rate(source, args.batch, w, args.tokens)
                ratios = "  ".join(f"{rate / c:6.1f}x {n.split()[0]}" for n, c in consume.items() if c)
                print(f"W={window:5}  loader {label:9} workers={w}  {rate:>12,.0f} tokens/s   loader/model: {ratios}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
