"""Where a configuration's efficiency went: its overhead split into seconds, per part of the step time.

For an N-worker run against its group's 1x1 baseline, both at the baseline's work (see cockpit.forecast.analysis):

    O = TN' - T1/N                        TN' = TN / work  (work = samplesN / samples1)
    term(part) = partN / work - part1 / N   for part in data_wait, compute, comm, optimizer, other

The trainer records each run's T as the exact sum of the five parts (rank 0), so the terms add up to O.
A result whose parts do not add up to its T (hand-written, or from an older trainer) gets the difference
as an explicit `unaccounted` term instead of having it hidden in another one. docs/analysis.md has the
formulas and the advice behind each term.

Printed, the terms add up to the printed O too: every place that shows them (the verdicts, the run
detail's waterfall, the report's table and figures, the headless lines) rounds them with
:func:`shown_split`, to hundredths of a second that sum to O's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Any, TypeVar

K = TypeVar("K")

PARTS = ("data_wait", "compute", "comm", "optimizer", "other")
# the overhead's terms: the parts, the host-bound seconds split out of compute (cockpit.figures.host_bound; zero
# unless both the run and its baseline have a host-bound figure), and what the parts leave unexplained
TERMS = (*PARTS, "host_bound", "unaccounted")
TERM_LABELS = {
    "compute": "compute",
    "host_bound": "host-bound (GPU idle)",
    "comm": "exposed all-reduce",
    "data_wait": "data wait",
    "optimizer": "optimizer",
    "other": "other loop time",
    "unaccounted": "unaccounted",
}
SHORT_LABELS = {**TERM_LABELS, "comm": "all-reduce", "other": "other", "host_bound": "host-bound"}
# the words people use for each term: in the TUI's filter any of them finds the others (verdict~comm finds
# "all-reduce", verdict~loader finds "data wait"); the labels above are among them
TERM_WORDS = {
    "comm": ("comm", "communication", "all-reduce", "allreduce", "all reduce", "exposed all-reduce"),
    "data_wait": ("data", "loader", "input", "data wait", "dataloader"),
    "compute": ("compute", "gpu", "worker"),
    "host_bound": ("host-bound", "host bound", "host", "launch", "kernel launch"),
    "optimizer": ("optimizer", "optimiser", "optim"),
    "other": ("other", "other loop time"),
}
FIXED_COSTS = ("startup_s", "prepare_s", "eval_s", "checkpoint_s")
STRAGGLER_SHARE = 0.05  # an excess above this share of T is named in the verdict


def term_words(word: str) -> tuple[str, ...]:
    """Every word (lower case) that names the same term as `word`, or just `word` when it names none."""
    w = word.strip().lower()
    return next((words for words in TERM_WORDS.values() if w in words), (w,))


def comm_kinds(rec: dict[str, Any]) -> list[tuple[str, float]]:
    """(kind, exposed seconds) of each collective a run issued (its row's comm_<kind>_s, which add up to its
    comm_s: all_reduce, all_gather, reduce_scatter, broadcast), those with time in them, in the row's order."""
    return [(k.removeprefix("comm_").removesuffix("_s"), float(v)) for k, v in rec.items()
            if k.startswith("comm_") and k.endswith("_s") and k != "comm_s" and isinstance(v, int | float)
            and v == v and v > 0]


def term_label(term: str, rec: dict[str, Any]) -> str:
    """A term's label for one run: the comm term named by the collectives the run issued ("exposed all-gather
    and reduce-scatter" under FSDP, "exposed all-reduce" under DDP or where the kinds were not recorded)."""
    kinds = [k for k, _ in comm_kinds(rec)]
    if term != "comm" or not kinds or kinds == ["all_reduce"]:
        return TERM_LABELS[term]
    return "exposed " + " and ".join(k.replace("_", "-") for k in kinds)


def comm_split(term: str, seconds: float, rec: dict[str, Any]) -> str:
    """The comm term's seconds split by kind in proportion to the run's exposed seconds per kind, as printed
    (hundredths that add up to the term's): ` (all-gather 0.40 s, reduce-scatter 0.20 s)`; "" for another
    term or a run with one kind."""
    kinds = comm_kinds(rec)
    total = sum(v for _, v in kinds)
    if term != "comm" or len(kinds) < 2 or total <= 0:
        return ""
    _, shown = shown_split(seconds, [(k, seconds * v / total) for k, v in kinds])
    return " (" + ", ".join(f"{k.replace('_', '-')} {v:.2f} s" for k, v in shown) + ")"


def attribution(run: dict[str, Any], base: dict[str, Any], n: int, work: float) -> dict[str, float]:
    """Seconds each part added to the overhead (negative: it saved time); keys `loss_<part>_s`."""
    terms = {f"loss_{p}_s": _num(run.get(f"{p}_s")) / work - _num(base.get(f"{p}_s")) / n for p in PARTS}
    hn, h1 = run.get("host_bound_s", math.nan), base.get("host_bound_s", math.nan)
    if hn == hn and h1 == h1:  # split out of compute: the terms still add up to O
        terms["loss_host_bound_s"] = hn / work - h1 / n
        terms["loss_compute_s"] -= terms["loss_host_bound_s"]
    else:
        terms["loss_host_bound_s"] = math.nan  # no term: a CPU run, or a GPU run without the evidence
    o = run["train_time_s"] / work - base["train_time_s"] / n
    rest = o - sum(v for v in terms.values() if v == v)
    terms["loss_unaccounted_s"] = rest if abs(rest) > 1e-6 * max(1.0, abs(o)) else 0.0
    return terms


def compute_ratio(run: dict[str, Any], base: dict[str, Any], n: int, work: float) -> float:
    """Per-sample compute of a worker relative to the baseline's: (computeN / work) / (compute1 / N)."""
    c1 = _num(base.get("compute_s"))
    return (_num(run.get("compute_s")) / work) / (c1 / n) if c1 > 0 else math.nan


def advice(term: str, rec: dict[str, Any]) -> str:
    """What to change when `term` is the largest loss; specific to the device the run used."""
    if term == "host_bound":
        return ("the GPU idles while the host issues its kernels: more work per kernel (batch_size) or fewer "
                "launches (train.compile)")
    if term == "compute":
        ratio = rec.get("compute_ratio", math.nan)
        head = f"per-sample compute {ratio:.2f}x the baseline's" if ratio == ratio else "compute grew"
        if rec.get("device") == "cuda":
            return f"{head}: the per-GPU batch may be too small to fill the GPU; raise batch_size"
        return f"{head}: workers share cores and memory bandwidth; give each its own cores (cpus_per_task) and bind them"
    sharded = [k.replace("_", "-") for k, _ in comm_kinds(rec) if k != "all_reduce"]
    if term == "comm" and sharded:
        return (f"the strategy's {' and '.join(sharded)} wait on the step: fewer, larger steps (grad_accum, "
                "batch_size), a faster link, or strategy ddp where the model fits")
    return {
        "comm": "overlap more of the all-reduce with backward (bucket_cap_mb), use a faster link, "
                "or all-reduce less often (grad_accum)",
        "data_wait": "the input pipeline falls behind: more loader workers (cpus_per_task)",
        "optimizer": "the optimizer step does not shrink with more workers: a larger batch_size means fewer steps",
        "other": "loop time outside the measured phases (logging, host syncs, the stop vote): fewer, larger steps",
        "unaccounted": "the result's parts do not add up to its T: rerun with the current trainer",
    }[term]


def ranked_terms(rec: dict[str, Any]) -> list[tuple[str, float]]:
    """(term, seconds) with a non-zero size, largest loss first."""
    terms = [(t, rec.get(f"loss_{t}_s", math.nan)) for t in TERMS]
    terms = [(t, v) for t, v in terms if v == v and abs(v) >= 0.0005]
    return sorted(terms, key=lambda tv: -tv[1])


def hundredths(value: float) -> int:
    """`value` in hundredths as `f"{value:.2f}"` prints it (half to even on the exact binary value)."""
    return int((Decimal(value) * 100).to_integral_value(ROUND_HALF_EVEN))


def split_hundredths(total: float, values: Sequence[float]) -> tuple[int, list[int]]:
    """`total` and the `values` that add up to it, in hundredths, so that the shown values add up to the
    shown total exactly: the total as `.2f` prints it, each value by largest remainder.

    Each value is first rounded down (towards minus infinity, so a saving, -0.074, starts at -0.08 and a
    loss, 0.074, at 0.07: signed values are treated alike); the hundredths still missing from the total go
    one each to the values that lost the most in rounding down, and hundredths too many (possible only when
    the values do not add up to the total, e.g. after leaving out sub-millisecond ones) are taken from
    those that lost the least. Ties go to the larger value by size, then to the earlier one."""
    target = hundredths(total)
    exact = [Decimal(v) * 100 for v in values]
    shown = [int(e.to_integral_value(ROUND_FLOOR)) for e in exact]
    if not shown:
        return target, shown
    lost = [e - s for e, s in zip(exact, shown, strict=True)]
    order = sorted(range(len(shown)), key=lambda i: (-lost[i], -abs(values[i]), i))
    missing = target - sum(shown)
    for k in range(abs(missing)):
        if missing > 0:
            shown[order[k % len(order)]] += 1
        else:
            shown[order[-1 - k % len(order)]] -= 1
    return target, shown


def shown_split(total: float, parts: Sequence[tuple[K, float]]) -> tuple[float, list[tuple[K, float]]]:
    """`total` and its `parts` (key, seconds) as printed with two decimals: values that add up exactly
    (see :func:`split_hundredths`); the one rounding of every place that prints a split of O or of T."""
    shown_total, shown = split_hundredths(total, [v for _, v in parts])
    return shown_total / 100, [(k, h / 100) for (k, _), h in zip(parts, shown, strict=True)]


def shown_terms(rec: dict[str, Any]) -> tuple[float, list[tuple[str, float]]]:
    """O and :func:`ranked_terms` as printed: hundredths that add up to O's (largest loss first)."""
    return shown_split(rec.get("overhead_s", math.nan), ranked_terms(rec))


def short_label(term: str, rec: dict[str, Any] | None = None) -> str:
    """A term's short label; the comm term by the run's collectives as term_label names them."""
    if term == "comm" and rec is not None:
        return term_label(term, rec).removeprefix("exposed ")
    return SHORT_LABELS[term]


def short_terms(terms: list[tuple[str, float]], shown: int = 2,
                rec: dict[str, Any] | None = None) -> list[tuple[str, float]]:
    """(short label, seconds) that still add up to O: the `shown` largest terms by size (a saving can be
    among them), in ranked order, and the others summed as "rest" unless there is only one of them.
    Give it :func:`shown_terms`' values, so that the rest is the sum of what the full sentence prints."""
    if len(terms) <= shown + 1:
        return [(short_label(t, rec), v) for t, v in terms]
    biggest = set(sorted(range(len(terms)), key=lambda i: -abs(terms[i][1]))[:shown])
    kept = [(short_label(t, rec), v) for i, (t, v) in enumerate(terms) if i in biggest]
    rest = sum(round(v * 100) for i, (_, v) in enumerate(terms) if i not in biggest) / 100
    return [*kept, ("rest", rest)]


def ranks_of(result: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Each rank's breakdown (`breakdown_by_rank` of result.json, or as the store read it from each rank's
    metrics: cockpit.store.telemetry.followed_ranks), with its total and its host ("" if not known); None if
    not recorded."""
    raw = result.get("breakdown_by_rank")
    if not isinstance(raw, list) or not raw:
        return None
    out = []
    for r in raw:
        if not isinstance(r, dict):
            return None
        parts = {p: _num(r.get(p)) for p in PARTS}
        out.append({"rank": r.get("rank"), "host": str(r.get("host") or ""), **parts, "total": sum(parts.values())})
    return sorted(out, key=lambda r: r["rank"] if isinstance(r["rank"], int) else 0)


def straggler(ranks: list[dict[str, Any]] | None) -> tuple[int, str, float] | None:
    """(rank, host, excess seconds) of the rank the others wait for, or None with fewer than two ranks.

    In a synchronous all-reduce every rank waits for the slowest one, so the rank that waits least is it;
    its excess is how much longer the other ranks (median) waited than it did.
    """
    if not ranks or len(ranks) < 2:
        return None
    slow = min(ranks, key=lambda r: r["comm"])
    others = [r["comm"] for r in ranks if r is not slow]
    return slow["rank"], slow["host"], statistics.median(others) - slow["comm"]


def verdicts(rec: dict[str, Any]) -> tuple[str, str]:
    """(short form for a table column, full sentence) naming the losses in seconds, largest first."""
    if rec.get("status") != "completed":
        return "", rec.get("note", "")
    gpu = f". {rec['host_bound_note'][0].upper()}{rec['host_bound_note'][1:]}" if rec.get("host_bound_note") else ""
    if rec.get("startup_note"):  # runcontract.judge.startup_note: T a small share of the run's wall time
        gpu += f". {rec['startup_note'][0].upper()}{rec['startup_note'][1:]}"
    if rec.get("baseline"):
        parts = [(p, v) for p, v in t_parts(rec) if v > 0]
        t1, parts = shown_split(rec["train_time_s"], parts)
        shares = ", ".join(f"{SHORT_LABELS[p]} {v:.2f} s" for p, v in parts)
        text = f"baseline: T1 = {t1:.2f} s"
        host = dict(parts).get("host_bound")
        short = f"{text}, host-bound {host:.2f} s" if host else text
        return short, (f"{text} ({shares})" if shares else text) + gpu
    o = rec.get("overhead_s", math.nan)
    if o != o:
        return rec.get("note", ""), rec.get("note", "") + gpu
    lost = 1.0 - rec["efficiency"]
    terms = ranked_terms(rec)
    if o <= 0 or not terms:  # no term of at least half a millisecond: nothing to name
        text = f"no loss: T at the baseline's work {rec['t_same_work_s']:.2f} s, T1/N {rec['t1_over_n_s']:.2f} s"
        return text, text + gpu
    o, terms = shown_terms(rec)  # printed: hundredths that add up to O's
    short = f"lost {lost:.0%} = {o:.2f} s: " + ", ".join(f"{v:+.2f} s {label}" for label, v in short_terms(terms, rec=rec))
    pieces = []
    for t, v in terms:
        piece = f"{v:+.2f} s {term_label(t, rec)}{comm_split(t, v, rec)}"
        if t == "compute" and rec.get("compute_ratio") == rec.get("compute_ratio"):
            piece += f" (per-sample compute {rec['compute_ratio']:.2f}x the baseline's)"
        pieces.append(piece)
    largest = terms[0][0]
    full = (f"lost {lost:.0%} ({o:.2f} s over T1/N = {rec['t1_over_n_s']:.2f} s): " + ", ".join(pieces)
            + f". Largest: {term_label(largest, rec)}: {advice(largest, rec)}")
    ps = rec.get("predicted_speedup")
    if ps is not None and ps == ps:
        full += (f". Should have achieved S = {ps:.2f}x (T/work {rec['predicted_t_same_work_s']:.2f} s, predicted "
                 f"from the baseline); measured T/work is {rec['prediction_error']:+.0%} against that")
    slow = rec.get("straggler_rank")
    if slow is not None and rec.get("straggler_excess_s", 0.0) > STRAGGLER_SHARE * rec["train_time_s"]:
        where = f" on {rec['straggler_host']}" if rec.get("straggler_host") else ""
        full += (f". Straggler: rank {slow}{where}; the other ranks waited {rec['straggler_excess_s']:.2f} s "
                 "longer in all-reduce than it did")
    return short, full + gpu


def t_parts(rec: dict[str, Any]) -> list[tuple[str, float]]:
    """T's parts of one run in seconds, with its host-bound seconds split out of compute where it has them
    (cockpit.figures.host_bound): they add up to T as the parts do."""
    out = []
    host = rec.get("host_bound_s", math.nan)
    for p in PARTS:
        v = rec.get(f"{p}_s", math.nan)
        if v != v:
            continue
        if p == "compute" and host == host and host > 0:
            out += [("compute", v - host), ("host_bound", host)]
        else:
            out.append((p, v))
    return out


def _num(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(out) else out
