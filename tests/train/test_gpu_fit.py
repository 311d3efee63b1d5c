"""The largest model per GPU (cockpit.forecast.gpu_fit) counts parameters as the trainer's model has them, shards model
states by the prediction's one formula, and its fit is the largest shape at or under the GPU's memory; the
alpha-beta pricing says where its latency came from; a change is advised only with a gain beyond the noise."""

from __future__ import annotations

import pytest

from cockpit.forecast import gpu_fit
from cockpit.forecast.advice.options import gain_unclear
from cockpit.forecast.prediction import DEFAULT_LATENCY_S, Link, Links, memory_per_rank, merge, strategy_comm
from trainer.model import HeartLanguageModel, ModelConfig


@pytest.mark.parametrize("layers, d_model, vocab, window, classes", [(2, 64, 260, 64, 0), (3, 96, 300, 128, 5)])
def test_parameters_are_the_models_own_count(layers: int, d_model: int, vocab: int, window: int, classes: int):
    model = HeartLanguageModel(ModelConfig(vocab_size=vocab, max_len=window, layers=layers, d_model=d_model,
                                           heads=4, num_classes=classes))
    assert gpu_fit.parameters(layers, d_model, vocab, window, classes) == sum(p.numel() for p in model.parameters())


def test_the_fit_is_the_largest_shape_under_the_gpu_and_sharding_raises_it():
    a100 = 40e9
    fits = {(s, n): gpu_fit.largest_fitting(a100, s, n, batch=8, window=512, vocab=260)
            for s in ("ddp", "zero1", "fsdp", "fsdp_noreshard") for n in (1, 2, 4)}
    for f in fits.values():
        assert f.shape is not None and f.memory is not None and f.next_memory is not None
        assert f.memory["peak_bytes"] <= a100 < f.next_memory["peak_bytes"]
        assert gpu_fit.LADDER.index(f.next_shape) == gpu_fit.LADDER.index(f.shape) + 1
    assert {fits[(s, 1)].shape for s in ("ddp", "zero1", "fsdp")} == {fits[("ddp", 4)].shape}  # one worker: whole
    order = [gpu_fit.LADDER.index(fits[k].shape) for k in (("ddp", 4), ("zero1", 4), ("fsdp", 2), ("fsdp", 4))]
    assert order == sorted(order) and order[0] < order[-1]
    assert [fits[(s, 4)].bytes_per_param for s in ("ddp", "zero1", "fsdp")] == [16, 4 + 4 + 8 / 4, 16 / 4]
    # bf16 activations take half the bytes: never a smaller fit
    half = gpu_fit.largest_fitting(a100, "ddp", 1, batch=8, window=512, vocab=260, element_bytes=2)
    assert gpu_fit.LADDER.index(half.shape) >= gpu_fit.LADDER.index(fits[("ddp", 1)].shape)


def test_the_fit_and_the_prediction_shard_by_one_formula():
    """memory_per_rank of a baseline holding 16 bytes per parameter gives the fit's model states per rank."""
    n = gpu_fit.parameters(2, 64, 260, 64)
    base = {"model": {"layers": 2}, "memory": {"params_bytes": 4 * n, "grads_bytes": 4 * n,
                                               "optimizer_bytes": 8 * n, "peak_bytes": 16 * n}}
    for strategy in ("ddp", "zero1", "fsdp", "fsdp_noreshard"):
        predicted = memory_per_rank(base, 2, strategy)
        fit = gpu_fit.memory_of(2, 64, batch=8, window=64, vocab=260, classes=0, workers=2, strategy=strategy,
                                element_bytes=4)
        assert predicted is not None
        for k in ("params_bytes", "grads_bytes", "optimizer_bytes", "model_states_bytes", "gathered_bytes"):
            assert predicted[k] == fit[k], (strategy, k)


def test_reference_gpu_is_the_sites_else_meluxinas():
    assert gpu_fit.reference_gpu("meluxina") == (40e9, "meluxina profile gpu_memory_gb = 40")
    gpu, words = gpu_fit.reference_gpu("local")
    assert gpu == 40e9 and "the study's site 'local' has none" in words


def test_latency_priced_from_its_source_else_the_default_said():
    unknown = Link(1e9, None, "preflight")
    assert unknown.priced_latency() == (DEFAULT_LATENCY_S, "latency 20 us by default (none measured or in the profile)")
    profile = Link(2e9, 10e-6, "site profile", "from the site profile's allreduce_latency_us")
    merged = merge(Links(intra_node=unknown), Links(intra_node=profile)).intra_node
    assert merged is not None and merged.busbw == 1e9 and merged.priced_latency()[0] == 10e-6
    # each of DDP's buckets pays 2(N-1) latency steps: smaller buckets are never free
    one, eight = (strategy_comm("ddp", 2, 1e6, unknown, buckets=k, groups=3, compute=0.0, on_cpu=True)["all_reduce"]
                  for k in (1, 8))
    assert eight - one == pytest.approx(2 * (2 - 1) * (8 - 1) * DEFAULT_LATENCY_S, rel=1e-9)


def test_a_gain_is_advised_only_beyond_the_repeats_spread():
    assert gain_unclear(2.0, 1.5, None) == ""
    assert gain_unclear(2.0, 1.5, (0.2, 3)) == ""
    assert "within the 0.60 s spread of T over 3 repeated runs" in gain_unclear(2.0, 1.5, (0.6, 3))
    assert gain_unclear(2.0, 2.1, None) == "predicted slower, T 2.00 s → 2.10 s"
    assert gain_unclear(2.0, 2.0, None) == "predicted no faster, T 2.00 s → 2.00 s"
    # no repeats: a gain within 10% of T is noise as far as one run can tell
    assert "within 10% of T (0.20 s)" in gain_unclear(2.0, 1.85, None)
    assert "within 10% of T" not in gain_unclear(2.0, 1.85, (0.1, 3))  # the study's own spread decides


def test_fsdp_gathers_for_every_micro_batch_ddp_synchronises_once():
    link = Link(1e9, 30e-6, "t")

    def comm(strategy: str, micro: float) -> dict[str, float]:
        return strategy_comm(strategy, 2, 4e6, link, buckets=2, groups=3, compute=0.0, on_cpu=True,
                             micro_batches=micro)

    one, two = comm("fsdp", 1), comm("fsdp", 2)
    assert two["all_gather"] == pytest.approx(2 * one["all_gather"]) and two["reduce_scatter"] == one["reduce_scatter"]
    assert comm("ddp", 2) == comm("ddp", 1) and comm("zero1", 2) == comm("zero1", 1)


def test_zero1_broadcasts_parameter_by_parameter_where_the_baseline_counted_its_tensors():
    """torch's ZeroRedundancyOptimizer broadcasts each trainable tensor on its own: 49 tensors are 49 calls, each
    (N-1) x the latency without a fit and one alpha with it; a baseline that counted none keeps one call per rank."""
    from dataclasses import replace

    link = Link(1e9, 30e-6, "t")
    bytes_term = (2 - 1) / 2 * 4e6 / 1e9

    def broadcast(tensors: int, on: Link = link) -> float:
        return strategy_comm("zero1", 2, 4e6, on, buckets=2, groups=3, compute=0.0, on_cpu=True,
                             tensors=tensors)["broadcast"]

    assert broadcast(0) == pytest.approx(bytes_term + 30e-6)
    assert broadcast(49) == pytest.approx(bytes_term + 49 * 30e-6)
    fitted = replace(link, fits={2: {"broadcast": (50e-6, 2e9)}})
    assert broadcast(49, fitted) == pytest.approx(49 * 50e-6 + 4e6 / 2e9)
    assert broadcast(0, fitted) == pytest.approx(2 * 50e-6 + 4e6 / 2e9)
