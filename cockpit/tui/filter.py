"""The scaling view's filter language: `eff<0.6 verdict~comm state=done window=256 fast`.

Pure Python: a typed filter is parsed once (`parse_filter`) into terms that name columns of the column
table (cockpit.tui.columns) in the screen's words, and a row passes when every term matches (`matches`).
docs/tui.md describes the grammar; tests/tui/test_filter_examples.py runs every documented example.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cockpit.figures import explain
from cockpit.store.snapshot import DONE_STATES, FAILED_STATES, ConfigRow
from cockpit.study.spec import config_label
from cockpit.tui.columns import RUNNING, field_value, state_word
from runcontract.axes import AXIS, AXIS_KEYS, LABEL_ORDER, SCALE_AXES

# the names the filter accepts for each field: the screen's own words first (headers, the header bar's states);
# an axis's names are the axes table's (runcontract/axes.py)
FILTER_FIELDS: dict[str, tuple[str, ...]] = {
    **{name: AXIS[name].names for name in (*LABEL_ORDER, *reversed(SCALE_AXES)) if name != "scale"},
    "workers": ("workers", "N"),
    "scale": ("nodes×GPUs", "nodes×workers", "nodesxgpus", "scale"),
    "state": ("state",),
    "time": ("T", "time", "train_time"),
    "t_same_work": ("T/work", "t_same_work"),
    "work": ("work",),
    "speedup": ("speedup", "S"),
    "efficiency": ("eff", "efficiency", "E"),
    "overhead": ("overhead", "O"),
    "tokens": ("tokens", "tokens/s", "tok/s"),
    "verdict": ("verdict", "why"),
    "quality": ("quality", "F1", "macro-F1"),
    "mfu": ("mfu", "MFU"),
    "energy": ("energy", "kWh"),
    "explanation": ("explanation",),
    "id": ("id", "config_id"),
}
FIELD_BY_NAME = {name.lower(): key for key, names in FILTER_FIELDS.items() for name in names}
NUMERIC_FIELDS = frozenset({*(k.name for k in AXIS_KEYS if int in k.kind or float in k.kind), "workers", "time",
                            "t_same_work", "work", "speedup", "efficiency", "overhead", "tokens", "quality", "mfu",
                            "energy"})
# the header's counters and the table say "done", "failed", "pending": each names a set of states
STATE_SETS = {
    "done": DONE_STATES, "completed": DONE_STATES, "failed": FAILED_STATES,
    "running": frozenset(RUNNING), "pending": frozenset({"pending", "submitting", "requeued", "suspended", "held"}),
    "not submitted": frozenset({"not_submitted"}), "not_submitted": frozenset({"not_submitted"}),
}
TERM_TEXT_FIELDS = frozenset({"verdict", "explanation"})  # where verdict~comm also finds "all-reduce"
_TERM = re.compile(r"^([^\s<>=!~]+)\s*(<=|>=|!=|!~|=|<|>|~)\s*(.*)$")


@dataclass(frozen=True)
class Term:
    """One filter term: `field op value`, or a bare word (field None) matched anywhere in the row's text."""

    text: str
    field: str | None = None
    op: str = "~"
    value: object = ""


@dataclass(frozen=True)
class Filter:
    terms: tuple[Term, ...] = ()
    errors: tuple[str, ...] = ()  # one message per term that was not understood (and is not applied)


def parse_filter(text: str) -> Filter:
    """`eff<0.6 verdict~comm state=running window=256 fast`: every term must match. Fields use the screen's
    names (`cpus`, `prec`, `eff`, `T`, `T/work`, `tokens`, `state=done`); `=` `!=` compare, `<` `<=` `>` `>=`
    compare numbers (`eff<60%` = `eff<0.6`), `~` `!~` match text; a bare word matches anywhere. A term
    naming an unknown field or a number that is not one is reported and left out."""
    terms: list[Term] = []
    errors: list[str] = []
    for word in _split(text):
        m = _TERM.match(word)
        if not m:
            terms.append(Term(word))
            continue
        name, op, raw = m.group(1).lower(), m.group(2), m.group(3).strip().strip('"').strip("'")
        key = FIELD_BY_NAME.get(name)
        if key is None:
            errors.append(f"unknown field {name!r} in {word!r} (left out): try window, cpus, state, eff, speedup, "
                          "T, verdict; ? lists every field")
            continue
        value: object = raw
        if op not in ("~", "!~") and (key in NUMERIC_FIELDS or op in ("<", "<=", ">", ">=")):
            number = _number(raw, percent=key == "efficiency")
            if number is None:
                errors.append(f"{word!r}: {raw!r} is not a number")
                continue
            value = number
        terms.append(Term(word, key, op, value))
    return Filter(tuple(terms), tuple(errors))


def filter_names() -> list[str]:
    """The first name of every filter field, for help and error messages."""
    return [names[0] for names in FILTER_FIELDS.values()]


def _split(text: str) -> list[str]:
    """Words, keeping `verdict~"exposed all-reduce"` in one piece."""
    out, quote, cur = [], "", ""
    for ch in text:
        if ch in "\"'" and (not quote or ch == quote):
            quote = "" if quote else ch
            cur += ch
        elif ch.isspace() and not quote:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def _number(raw: str, percent: bool = False) -> float | None:
    """A number as typed: `0.6`, `60%` (for eff), `1.5x`, `10s`, `50k`, `1.2M`."""
    text = raw.strip().lower().rstrip("x×s")
    scale = {"k": 1e3, "m": 1e6}.get(text[-1:], 1.0)
    text = text.rstrip("km")
    is_pct = text.endswith("%")
    try:
        value = float(text.rstrip("%")) * scale
    except ValueError:
        return None
    if percent and (is_pct or value > 1.5):  # eff<60% and eff<60 mean what eff<0.6 means
        return value / 100.0
    return value


def term_matches(row: ConfigRow, term: Term) -> bool:
    if term.field is None:  # a bare word; a term's word finds its other names too (comm: all-reduce)
        haystack = " ".join([config_label(row.values), row.state, state_word(row.state), row.verdict,
                             row.config_id]).lower()
        return any(word in haystack for word in explain.term_words(term.text))
    if term.field == "state" and term.op in ("=", "!="):
        want = str(term.value).lower()
        states = STATE_SETS.get(want, frozenset({want.replace(" ", "_")}))
        return (row.state in states) == (term.op == "=")
    have = field_value(row, term.field)
    if term.field == "scale" and isinstance(term.value, str):
        have = f"{row.values.get('nodes', 1)}x{row.values.get('gpus_per_node', 1)}"
        want = term.value.replace("×", "x")
        return (have == want) == (term.op == "=") if term.op in ("=", "!=") else _text_op(have, term)
    if term.op in ("~", "!~"):
        return _text_op("" if have is None else str(have), term)
    if isinstance(term.value, float):
        if not isinstance(have, int | float) or isinstance(have, bool) or have != have:
            return term.op == "!="
        return {"=": have == term.value, "!=": have != term.value, "<": have < term.value,
                "<=": have <= term.value, ">": have > term.value, ">=": have >= term.value}[term.op]
    equal = str(have).lower() == str(term.value).lower()
    return equal if term.op == "=" else not equal


def _text_op(have: str, term: Term) -> bool:
    """`~` / `!~`: on the verdict and the explanation a term's word stands for all its names
    (explain.TERM_WORDS: verdict~comm finds "all-reduce", verdict!~data leaves out "data wait")."""
    words = explain.term_words(str(term.value)) if term.field in TERM_TEXT_FIELDS else (str(term.value).lower(),)
    found = any(word in have.lower() for word in words)
    return found if term.op == "~" else not found


def matches(row: ConfigRow, terms: list[str] | Filter) -> bool:
    """Whether a row passes a filter (a parsed Filter, or words as typed)."""
    flt = terms if isinstance(terms, Filter) else parse_filter(" ".join(terms))
    return all(term_matches(row, t) for t in flt.terms)
