"""Classification scores from a confusion matrix: pure Python, so the trainer's evaluation and the
cockpit's quality view compute every per-class figure with the same formula."""

from __future__ import annotations

from typing import Any

MAIN_CLASSES = ("N", "S", "V", "F")  # the AAMI classes inter-patient results are compared on (Q is ~0.1%)
JUDGED_SUPPORT = 100  # a class with fewer beats than this in a validation part is not judged on them


def class_scores(confusion: list[list[int]], classes: list[str]) -> dict[str, Any]:
    """Per-class sensitivity (recall), positive predictivity (precision), F1; macro-F1; accuracy.

    `confusion[i][j]` counts samples of true class i predicted as j. A class absent from the test set has
    sensitivity None and is left out of macro-F1 (it would otherwise count as 0 for a question not asked).
    """
    n = len(classes)
    total = sum(sum(row) for row in confusion)
    sens: dict[str, float | None] = {}
    ppv: dict[str, float | None] = {}
    f1: dict[str, float | None] = {}
    for i, name in enumerate(classes):
        tp = confusion[i][i]
        actual = sum(confusion[i])
        predicted = sum(confusion[r][i] for r in range(n))
        se = tp / actual if actual else None
        pp = tp / predicted if predicted else (0.0 if actual else None)
        sens[name], ppv[name] = se, pp
        if se is None:
            f1[name] = None
        elif pp is None or se + pp == 0:
            f1[name] = 0.0
        else:
            f1[name] = 2 * se * pp / (se + pp)
    present = [v for v in f1.values() if v is not None]
    main = [v for c in MAIN_CLASSES if c in f1 and (v := f1[c]) is not None]
    return {
        "classes": classes,
        "support": {name: sum(confusion[i]) for i, name in enumerate(classes)},
        "sensitivity": sens,
        "ppv": ppv,
        "f1": f1,
        "macro_f1": sum(present) / len(present) if present else None,
        # over N, S, V, F when the classes are AAMI beat classes (None otherwise): the published figure
        "macro_f1_nsvf": (sum(main) / len(main) if main and all(c in classes for c in MAIN_CLASSES) else None),
        "accuracy": sum(confusion[i][i] for i in range(n)) / total if total else None,
        "confusion": confusion,
        "samples": total,
    }


def judged_macro_f1(scores: dict[str, Any], min_support: int | None = None) -> tuple[float, list[str]]:
    """Macro-F1 over the classes a part holds at least `min_support` of, and those classes.

    A choice made on a validation part (the step kept, the class decision) can only weigh what it holds
    enough of: mitdb DS1 + svdb's validation patients hold a handful of F and Q beats, whose F1 of 0 or 0.3
    is one beat's luck and would otherwise count as much as S's. Fewer than two such classes: every class
    present (the plain macro-F1), so a small part still has a criterion. `min_support`: JUDGED_SUPPORT."""
    least = JUDGED_SUPPORT if min_support is None else min_support
    judged = [c for c in scores["classes"] if scores["support"][c] >= least and scores["f1"][c] is not None]
    if len(judged) < 2:
        judged = [c for c in scores["classes"] if scores["f1"][c] is not None]
    return (sum(scores["f1"][c] for c in judged) / len(judged) if judged else 0.0), judged


def false_alarms_per_hour(confusion: list[list[int]], classes: list[str], hours: float | None) -> dict[str, float | None]:
    """Per class: beats of any other class called this class, per hour of recording (None without hours).

    The figure a monitor's user lives with, and the one a database whose beats are all one class (a rhythm
    database: sensitivity and +P of the other classes are undefined there) still gives per class.
    """
    n = len(classes)
    return {name: (sum(confusion[r][i] for r in range(n) if r != i) / hours if hours else None)
            for i, name in enumerate(classes)}
