"""Every filter example the README, docs/tui.md, the help screen and the filter's placeholder give finds
rows of the recorded store, and the words people use for a term (comm, all-reduce, loader, ...) are one.

The examples are read out of those files here, not copied, so an example that stops matching (or a new
one that never did) fails this test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cockpit.tui import model
from cockpit.tui.filter import parse_filter
from cockpit.tui.help import FILTER_HELP

REPO = Path(__file__).resolve().parents[2]


def is_example(text: str) -> bool:
    """A filter example: it parses without an error and has at least one `field op value` term."""
    flt = parse_filter(text)
    return bool(flt.terms) and not flt.errors and any(t.field is not None for t in flt.terms)


def readme_examples() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    sentence = text[text.index("`/` filters"):]
    sentence = sentence[:sentence.index(";")]
    return [s for s in re.findall(r"`([^`]+)`", sentence) if is_example(s)]


def tui_doc_examples() -> list[str]:
    text = (REPO / "docs" / "tui.md").read_text(encoding="utf-8")
    bullet = text[text.index("- **Filter**"):]
    bullet = bullet[:bullet.index("\n- **")]
    return [s for s in (" ".join(m.split()) for m in re.findall(r"`([^`]+)`", bullet)) if is_example(s)]


def help_examples() -> list[str]:
    pieces = re.split(r"[();]|, | or |e\.g\. |\. ", FILTER_HELP)
    return [p.strip().rstrip(".") for p in pieces if is_example(p.strip().rstrip("."))]


def placeholder_examples() -> list[str]:
    source = (REPO / "cockpit" / "tui" / "scaling.py").read_text(encoding="utf-8")
    (placeholder,) = re.findall(r'placeholder="filter: (.*?) \(', source)
    return [placeholder] if is_example(placeholder) else []


SOURCES = {"README.md": readme_examples, "docs/tui.md": tui_doc_examples, "help screen": help_examples,
           "placeholder": placeholder_examples}


@pytest.mark.parametrize("source", SOURCES)
def test_every_documented_filter_example_finds_rows_of_the_recorded_store(recorded, source):
    examples = SOURCES[source]()
    assert examples, f"no filter example found in {source}"
    snap = recorded.snapshot()
    for example in examples:
        rows = model.scaling_rows(snap, query=example)
        assert rows, f"{source}: the example {example!r} finds no row of the recorded store"


def test_the_documented_examples_are_the_ones_read():
    """The extraction really reads the examples (a guard against a regex that silently finds less)."""
    assert readme_examples() == ["eff<0.6 verdict~comm state=done"]
    assert placeholder_examples() == ["eff<0.6 verdict~comm state=done"]
    assert {"window=256", "eff<60%", "tokens>50k", 'verdict!~"data wait"', "verdict~comm"} <= set(tui_doc_examples())
    assert {"eff<0.6 verdict~comm state=done", "prec=fp32", "T<10", "verdict!~data"} <= set(help_examples())


@pytest.mark.parametrize("word", ["comm", "communication", "all-reduce", "allreduce", "COMM"])
def test_the_names_of_the_all_reduce_are_one(recorded, word):
    snap = recorded.snapshot()
    named = {r.config_id for r in snap.configs if "all-reduce" in r.verdict}
    assert named  # the fixture's N-worker runs lose most in all-reduce
    assert {r.key for r in model.scaling_rows(snap, query=f"verdict~{word}")} == named
    assert {r.key for r in model.scaling_rows(snap, query=word)} >= named  # a bare word too
    assert not {r.key for r in model.scaling_rows(snap, query=f"verdict!~{word}")} & named


@pytest.mark.parametrize(("word", "label"), [("loader", "data wait"), ("input", "data wait"), ("data", "data wait"),
                                             ("gpu", "compute"), ("worker", "compute"), ("compute", "compute")])
def test_data_and_compute_words_find_their_term(recorded, word, label):
    snap = recorded.snapshot()
    named = {r.config_id for r in snap.configs if label in r.explanation}
    assert named
    assert {r.key for r in model.scaling_rows(snap, query=f"explanation~{word}")} >= named
