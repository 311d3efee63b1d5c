"""The one builder of the small studies the tests run: a one-layer model, a few CPU steps, tiny data.

Every section starts from the defaults below; a test passes only what it is about. In ``cluster``,
``model`` and ``train`` a key set to None is left out; ``data`` and ``sweep`` replace the defaults whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TINY_MODEL: dict[str, Any] = {"layers": 1, "d_model": 16, "heads": 2}
TINY_TRAIN: dict[str, Any] = {
    "steps": 10, "batch_size": 4, "window": 64, "device": "cpu", "eval": False, "metrics_interval_s": 0.2,
}
SYNTHETIC_DATA: dict[str, Any] = {"datasets": {"synthetic": {"synthetic": True, "records": 2, "seconds": 30}}}
REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()  # as the product names it, where ../shared is a link
PHYSIONET = SHARED_DATA / "physionet"


def mitdb_data(token_cache: Path | str, records: tuple[str, ...] = ("101",), root: Path = PHYSIONET) -> dict[str, Any]:
    """[data] for real MIT-BIH records (shared/data beside the checkout), tokens cached in ``token_cache``.
    Record 101 is in DS1, the training half of the inter-patient split the trainer applies to mitdb."""
    return {
        "token_cache": str(token_cache),
        "datasets": {"mitdb": {"path": str(root / "mitdb")}},
        "tokenizer": {"name": "samples", "vocab": 64, "records": list(records)},
    }


def study_raw(name: str, workdir: Path | str, *, cluster: dict[str, Any] | None = None,
              data: dict[str, Any] | None = None, model: dict[str, Any] | None = None,
              train: dict[str, Any] | None = None, sweep: dict[str, Any] | None = None,
              study: dict[str, Any] | None = None) -> dict[str, Any]:
    """The study as the dict a TOML file parses to (kind = "local" unless ``cluster`` says otherwise; ``study``:
    [study]'s keys beside the name)."""
    return {
        "study": _merged({"name": name}, study),
        "cluster": _merged({"kind": "local", "workdir": str(workdir)}, cluster),
        "data": data if data is not None else SYNTHETIC_DATA,
        "model": _merged(TINY_MODEL, model),
        "train": _merged(TINY_TRAIN, train),
        "sweep": sweep if sweep is not None else {"gpus_per_node": [1, 2]},
    }


def study_toml(name: str, workdir: Path | str, **sections: Any) -> str:
    """The study as TOML text (see :func:`study_raw` for the arguments)."""
    return to_toml(study_raw(name, workdir, **sections))


def write_study(path: Path, name: str, workdir: Path | str, **sections: Any) -> Path:
    """Write the study to ``path`` and return it."""
    path.write_text(study_toml(name, workdir, **sections))
    return path


def _merged(base: dict[str, Any], over: dict[str, Any] | None) -> dict[str, Any]:
    out = {**base, **(over or {})}
    return {k: v for k, v in out.items() if v is not None}


def to_toml(raw: dict[str, Any]) -> str:
    """TOML for nested dicts of strings, numbers, booleans and lists (all a study file holds)."""
    lines: list[str] = []

    def table(prefix: str, values: dict[str, Any]) -> None:
        lines.append(f"[{prefix}]")
        lines.extend(f"{k} = {_value(v)}" for k, v in values.items() if not isinstance(v, dict))
        for k, v in values.items():
            if isinstance(v, dict):
                table(f"{prefix}.{k}", v)

    for section, values in raw.items():
        table(section, values)
    return "\n".join(lines) + "\n"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} ({type(v).__name__}) as a TOML value")


def run_baseline_first(path: Path) -> Path:
    """`cockpit run --headless --json --baseline-first STUDY` in a process of its own, run in the study's folder with
    its store under `xdg/` there; its JSON lines kept in `events.jsonl` beside it. Returns the study's path."""
    tmp = path.parent
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp / "xdg")}
    res = subprocess.run([sys.executable, "-m", "cockpit", "run", "--headless", "--json", "--baseline-first",
                          str(path)], capture_output=True, text=True, timeout=600, cwd=tmp, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    (tmp / "events.jsonl").write_text(res.stdout)
    return path
