"""The axes are listed in one place: no module but the key registry (trainer/config_keys/) spells out a
collection of three or more sweep-axis names, so adding an axis is one field of AxisKeys and not a hunt
through the columns, the filter, the label, the plan table and the report."""

from __future__ import annotations

import ast
from pathlib import Path

from runcontract.axes import AXES
from trainer.config_keys import TOKENIZER_KEYS

REPO = Path(__file__).resolve().parents[2]
REGISTRY = REPO / "trainer" / "config_keys"  # the package: key.py, sections.py, study_tables.py, __init__.py


def _listings(names: set[str]) -> list[str]:
    """Every literal tuple, list or set, and every dict whose values are all text (a table of words per key),
    in cockpit/ and trainer/ naming 3+ of ``names``. A record's fields (a dict of values: result.json, a
    batch script's variables) and a table of facts the registry does not hold (the prediction model's
    effects, whose absent keys read "not predicted") are not listings."""
    found = []
    for path in sorted([*(REPO / "cockpit").rglob("*.py"), *(REPO / "trainer").rglob("*.py")]):
        if path.parent == REGISTRY:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                texts = all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in node.values)
                items = node.keys if texts else []
            else:
                items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else []
            words = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if len(words & names) >= 3:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {sorted(words & names)}")
    return found


def test_no_module_but_the_registry_lists_the_sweep_axes():
    assert _listings(set(AXES)) == []


def test_no_module_but_the_registry_lists_the_tokenizer_keys():
    assert _listings({k.name for k in TOKENIZER_KEYS} - {"name", "records"}) == []
