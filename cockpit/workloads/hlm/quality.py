"""A run's model quality, read from its result.json `eval`: the one place every quality figure comes from.

A speedup that costs accuracy is not a speedup: the same fine-tune on N workers takes fewer, larger steps
when the epochs are fixed, and may learn less. So each analysed run carries its quality beside its T, and
the run detail shows what the figure is made of. Every classification figure is recomputed from the
confusion matrix with `trainer.scoring.scores` (the trainer's own formula), so the per-class scores, the
macro-F1 and the matrix on one screen always agree and can be checked against each other by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trainer.scoring.scores import MAIN_CLASSES, class_scores

MACRO_F1_NSVF = "macro-F1 (N,S,V,F)"  # the published inter-patient figure: Q has a handful of beats
MACRO_F1 = "macro-F1"
MASKED_LOSS = "masked loss"  # a foundation run: mean cross-entropy over its masked tokens, nats


@dataclass(frozen=True)
class ClassScore:
    name: str
    support: int
    sensitivity: float | None
    ppv: float | None
    f1: float | None


@dataclass(frozen=True)
class RecordErrors:
    """One test record's misclassified beats and its largest confusions ("S->N", count), largest first."""

    record: str
    beats: int
    errors: int
    confusions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Quality:
    """One run's quality figure with the inputs it is computed from.

    `value` is NaN and `problem` says why when result.json's eval cannot be read (a hand-edited or
    truncated file): the run keeps its place in every table, with the reason beside it.
    """

    metric: str
    value: float
    split: str
    samples: int
    inputs: str  # the value's inputs in words, e.g. "mean F1 of N 0.951, S 0.402, V 0.880, F 0.021"
    accuracy: float | None = None
    classes: tuple[ClassScore, ...] = ()
    class_names: tuple[str, ...] = ()
    confusion: tuple[tuple[int, ...], ...] = ()
    records: tuple[RecordErrors, ...] = ()  # every scored record, most errors first
    problem: str = ""

    @property
    def higher_is_better(self) -> bool:
        return higher_is_better(self.metric)

    def change(self, baseline: Quality | None) -> float:
        """This run's value minus the baseline's (NaN when the two do not measure the same thing)."""
        if baseline is None or baseline.metric != self.metric or baseline.split != self.split:
            return math.nan
        return self.value - baseline.value


def quality_of(result: dict[str, Any]) -> Quality | None:
    """The quality in a result.json dict; None when the run was not scored (`train.eval = false`)."""
    ev = result.get("eval")
    if ev is None:
        return None
    if not isinstance(ev, dict):
        return _unreadable(f"result.json eval: expected an object, found {type(ev).__name__}")
    if "confusion" in ev:
        return _classification(ev)
    if "masked_loss" in ev:
        return _masked(ev)
    return _unreadable("result.json eval: expected `confusion` (fine-tune) or `masked_loss` (foundation), found "
                       f"{', '.join(sorted(ev)) or 'no keys'}")


def _classification(ev: dict[str, Any]) -> Quality:
    classes = ev.get("classes")
    if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
        return _unreadable(f"result.json eval.classes: expected a list of class names, found {classes!r}")
    problem = _matrix_problem(ev["confusion"], len(classes), "eval.confusion")
    if problem:
        return _unreadable(problem)
    confusion = [list(map(int, row)) for row in ev["confusion"]]
    s = class_scores(confusion, classes)
    nsvf = s["macro_f1_nsvf"] is not None
    metric = MACRO_F1_NSVF if nsvf else MACRO_F1
    averaged = [c for c in (MAIN_CLASSES if nsvf else classes) if s["f1"][c] is not None]
    value = s["macro_f1_nsvf"] if nsvf else s["macro_f1"]
    inputs = "mean F1 of " + ", ".join(f"{c} {s['f1'][c]:.3f}" for c in averaged)
    by_record = ev.get("by_record") or {}
    records, problems = [], []
    if not isinstance(by_record, dict):
        problems.append(f"result.json eval.by_record: expected an object, found {type(by_record).__name__}")
        by_record = {}
    for name, m in by_record.items():
        problem = _matrix_problem(m, len(classes), f"eval.by_record.{name}")
        if problem:
            problems.append(problem)
        else:
            records.append(_record_errors(str(name), m, classes))
    records.sort(key=lambda r: (-r.errors, r.record))
    return Quality(
        metric=metric, value=math.nan if value is None else float(value), split=str(ev.get("split", "test")),
        samples=int(s["samples"]), inputs=inputs, accuracy=s["accuracy"],
        classes=tuple(ClassScore(c, s["support"][c], s["sensitivity"][c], s["ppv"][c], s["f1"][c]) for c in classes),
        class_names=tuple(classes), confusion=tuple(tuple(row) for row in confusion), records=tuple(records),
        problem="; ".join(problems))


def _masked(ev: dict[str, Any]) -> Quality:
    try:
        loss, tokens = float(ev["masked_loss"]), int(ev.get("masked_tokens") or 0)
    except (TypeError, ValueError):
        return _unreadable(f"result.json eval.masked_loss: expected a number, found {ev['masked_loss']!r}")
    acc = ev.get("masked_accuracy")
    accuracy = float(acc) if isinstance(acc, int | float) else None
    inputs = f"mean cross-entropy over {tokens:,} masked tokens"
    if accuracy is not None:
        inputs += f", accuracy {accuracy:.3f}"
    return Quality(metric=MASKED_LOSS, value=loss, split=str(ev.get("split", "test")), samples=tokens,
                   inputs=inputs, accuracy=accuracy)


def _record_errors(name: str, m: list[list[int]], classes: list[str]) -> RecordErrors:
    cells = [(f"{classes[i]}->{classes[j]}", int(m[i][j])) for i in range(len(m)) for j in range(len(m))
             if i != j and m[i][j]]
    cells.sort(key=lambda c: (-c[1], c[0]))
    return RecordErrors(name, sum(map(sum, m)), sum(v for _, v in cells), tuple(cells))


def _matrix_problem(m: Any, n: int, key: str) -> str:
    """Why `m` is not an n x n matrix of counts ("" when it is)."""
    if not isinstance(m, list) or len(m) != n or not all(isinstance(row, list) and len(row) == n for row in m):
        shape = f"{len(m)} rows" if isinstance(m, list) else type(m).__name__
        return f"result.json {key}: expected a {n}x{n} matrix of counts (one row per class), found {shape}"
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for row in m for v in row):
        return f"result.json {key}: expected counts (integers >= 0)"
    return ""


def _unreadable(problem: str) -> Quality:
    return Quality(metric="quality", value=math.nan, split="", samples=0, inputs="", problem=problem)


def quality_words(row: dict[str, Any]) -> str:
    """An analysed row's quality in one phrase with its inputs and the baseline's figure beside it, e.g.
    "macro-F1 (N,S,V,F) 0.571 (mean F1 of N 0.95, ...); 1x1: 0.593, -0.022 worse" ("" when not scored)."""
    metric = row.get("quality_metric")
    if not metric:
        return ""
    if row.get("quality") != row.get("quality"):
        return f"{metric}: {row.get('quality_inputs') or 'not readable'}"
    text = f"{metric} {row['quality']:.3f} ({row['quality_inputs']})"
    change = row.get("quality_change", math.nan)
    if change == change and not row.get("baseline"):
        text += f"; 1x1: {row['quality_1']:.3f}, {change:+.3f} {direction(metric, change)}"
    return text


def higher_is_better(metric: str) -> bool:
    """Every metric but a loss."""
    return metric != MASKED_LOSS


def direction(metric: str, change: float) -> str:
    """"better", "worse" or "same" (below 0.0005, the printed precision) for a change of `metric`."""
    if abs(change) < 5e-4:
        return "same"
    return "better" if (change > 0) == higher_is_better(metric) else "worse"
