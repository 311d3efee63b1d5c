"""How far each term of a prediction's T that the model prices, rather than the baseline measured, could be off:
its standard deviation in seconds (Prediction.term_sd), which cockpit.forecast.interval.for_terms adds to the
noise of the run and of its baseline. docs/prediction.md, "How sure a prediction is", states each rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from cockpit.forecast.interval import MODEL_SD, NOISE_PRIOR, REFIT_TERM, UPSIDE_TERM

# A strategy that wraps the model's parameters (FSDP: flat parameters, pre- and post-forward hooks, the gathers
# gloo runs on the training thread) adds compute the plain 1-worker baseline never ran: sd of 25% of the compute,
# until a run of that sharding refits it. Measured on 2 gloo ranks, FSDP's T over DDP's: +8% and +22%
# (fsdp_noreshard) in one pass, +24% and +57% in the next (bench/README.md).
WRAPPED_SD = 0.25
# CPU ranks sharing a node's cores (one node, or nodes a scheduler placed on one host): their compute runs longer
# than the start-up contention probe's slowdown says, and only ever longer: gloo's threads and the loaders take
# their CPU time from compute on cores the ranks already fill. On 2 gloo ranks of a 2-core machine, with the probe
# at x1.00-1.04, the 2-rank compute over the 1-rank baseline's ran x1.02-1.32 in the bench passes of 2026-11-29,
# and x0.97-1.51 in those of 2026-11-30 (bench/README.md, "What CPU ranks on shared cores cost": the test Slurm's
# nodes on this one host x0.97-1.51, the ddp row x0.90-1.07, the strategies x1.05-1.27, the examples up to
# x1.36; under 1 only by the run's noise). Up to half the compute again lengthens the interval's high side alone
# (interval.UPSIDE_TERM), until a run of the study refits compute. (Until 2026-11-30 this was a symmetric sd of
# 12% of the compute, which the image example's and the test Slurm's nodes' first predictions fell outside.)
# The start-up contention probe's slowdown widens this upside where it reads more, and does not move the centre:
# it read x1.47 once where the strategies' training compute ran x1.0.
SHARED_CORES_UPSIDE = 0.5
# Compute per sample at a batch size no baseline ran, taken as the baseline's: sd of 10% of that compute per
# doubling (or halving) of the batch, at most MODEL_SD. The optimisation loop's batch 16 from 8 gained +1.01 s
# measured against +0.49 s predicted on a ~10 s T (bench/README.md): 5% of T, within one sd.
BATCH_SD = 0.10


def batch_sd(batch_factor: float, compute_s: float) -> float:
    """The sd in seconds of `compute_s` priced at `batch_factor` times the batch it was measured at."""
    if batch_factor <= 0 or batch_factor == 1.0:
        return 0.0
    return min(MODEL_SD, BATCH_SD * abs(math.log2(batch_factor))) * compute_s


def centre_slowdown(probed: float, cpu_ranks_share: bool) -> float:
    """What the contention probe's `probed` slowdown multiplies a prediction's compute by: itself, except on CPU
    ranks sharing cores, where it widens the shared cores' upside instead (SHARED_CORES_UPSIDE)."""
    return 1.0 if cpu_ranks_share else probed


def contention_words(probed: float, ranks: int, cpu_ranks_share: bool) -> str:
    """The link words for the probe's slowdown on `ranks` ranks a node, as centre_slowdown prices it."""
    if probed == 1.0:
        return ""
    if cpu_ranks_share:
        return (f"; the contention probe read x{probed:.2f} for {ranks} CPU ranks on a node: priced as the shared "
                "cores' upside, not the centre")
    return f"; compute x{probed:.2f} for {ranks} ranks on a node (contention probe)"


def terms_sd(parts: Mapping[str, float], comm: Mapping[str, float], factors: Mapping[str, float], refit_runs: int,
             *, probed: float, batch_factor: float, cpu_ranks_share: bool, wraps: bool) -> dict[str, float]:
    """Each modelled term's sd in seconds, for a prediction with T's `parts` (seconds; one worker: no `comm`),
    `comm` its exposed seconds per collective kind and the wait for the slower rank, `factors` the per-step parts
    `refit_runs` finished runs refit:

      each collective and the wait: MODEL_SD x its seconds, / sqrt(1 + refit_runs) where those runs refit comm;
      refit (REFIT_TERM): the other parts they refit carry their noise, NOISE_PRIOR x those seconds / sqrt(runs);
      contention: MODEL_SD x the compute seconds the probe's `probed` slowdown added (centre_slowdown);
      shared cores: where CPU ranks share a node (`cpu_ranks_share`: one node, or nodes on one host),
          SHARED_CORES_UPSIDE x compute on the high side only (interval.UPSIDE_TERM: seconds, not an sd), or
          what the contention probe's `probed` slowdown adds where more (it does not move their centre);
      batch: batch_sd, where compute at another batch is taken per sample (1.0: no change, or a batch_fit line
          measured it);
      wrapping: WRAPPED_SD x compute for a strategy that shards the parameters (`wraps`).
    A run's refit of compute ends the shared cores' upside and wrapping."""
    out = {kind: MODEL_SD * seconds / math.sqrt(1 + (refit_runs if "comm" in factors else 0))
           for kind, seconds in comm.items()}
    compute = parts.get("compute", 0.0)
    refit_s = sum(parts.get(p, 0.0) for p in factors if p != "comm")
    if refit_s > 0 and refit_runs:
        out[REFIT_TERM] = NOISE_PRIOR * refit_s / math.sqrt(refit_runs)
    slowdown = centre_slowdown(probed, cpu_ranks_share)
    if slowdown > 1.0:
        out["contention"] = MODEL_SD * compute * (1 - 1 / slowdown)
    if cpu_ranks_share and "compute" not in factors:
        out[UPSIDE_TERM] = max(SHARED_CORES_UPSIDE, probed - 1.0) * compute
    if batch_sd(batch_factor, compute) > 0:
        out["batch"] = batch_sd(batch_factor, compute)
    if wraps and "compute" not in factors:
        out["wrapping"] = WRAPPED_SD * compute
    return out
