"""docs/study-keys.md is the key registry's own output, and the registry's every key is on it."""

from __future__ import annotations

from pathlib import Path

import cockpit.study.tables as study_tables
import runcontract.axes as axes
import trainer.config_keys as registry
from cockpit.study.key_doc import COMMAND, markdown, tables, toml_value
from runcontract.keys import ConfigKey

PAGE = Path(__file__).resolve().parents[2] / "docs" / "study-keys.md"


def test_the_page_is_what_the_registry_generates() -> None:
    assert PAGE.read_text(encoding="utf-8") == markdown(), f"docs/study-keys.md is stale: run `{COMMAND}`"


def test_every_key_of_every_registry_table_is_on_the_page() -> None:
    """A table added to the registry and left out of the page's tables() fails here."""
    documented = {(k.section, k.name) for t in tables() for k in t.keys}
    declared = {(k.section, k.name) for module in (registry, study_tables, axes) for value in vars(module).values()
                if isinstance(value, tuple) for k in value if isinstance(k, ConfigKey)}
    assert declared and declared <= documented, sorted(declared - documented)
    assert not [k.dest for t in tables() for k in t.keys if not k.help], "a key without help"


def test_a_row_says_type_default_bounds_unit_and_help() -> None:
    rows = markdown().splitlines()
    window = [r for r in rows if r.startswith("| `window` | integer")]
    assert window == ["| `window` | integer | `256` | an integer >= 2 | tokens | window | tokens per training window |",
                      "| `window` | integer | `256` | an integer >= 2 | tokens | tokens per training window |"]
    budget = next(r for r in rows if r.startswith("| `node_hour_budget`"))
    assert "`unset` | a number >= 0 | node-hours |" in budget
    assert [toml_value(v) for v in (None, True, "fp32", 3e-4, 1e-9, [], {"A": 1})] == \
        ["unset", "true", '"fp32"', "0.0003", "1e-09", "[]", "{A = 1}"]
