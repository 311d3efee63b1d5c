"""What the trainer creates is its owner's alone whatever the umask it was started with, or its project
group's when config.json names one: token shards, their lock and manifest, the directories above them, a
JSON-lines file (the local executor's and the job's runs are checked against another account in
tests/control/test_private_files.py)."""

from __future__ import annotations

import grp
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from runcontract.contract import SCHEMA_VERSION, ContractError
from runcontract.files import append_jsonl
from runcontract.modes import make_dirs, open_new, share_with

REPO = Path(__file__).resolve().parents[2]


def _modes(root: Path) -> set[tuple[str, int]]:
    return {("dir" if p.is_dir() else "file", stat.S_IMODE(p.stat().st_mode)) for p in [root, *root.rglob("*")]}


def _prepare(run_dir: Path, cache: Path, share_group: str | None) -> None:
    config = {"schema_version": SCHEMA_VERSION, "token_cache": str(cache), "synthetic": True, "synthetic_params": {"records": 2, "seconds": 20},
              "tokenizer": {"name": "samples", "vocab": 16}, **({"share_group": share_group} if share_group else {})}
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps(config))
    subprocess.run([sys.executable, "-m", "trainer", "prepare", "--run-dir", str(run_dir), "--no-progress"],
                   cwd=REPO, check=True, capture_output=True, umask=0)  # the loosest umask there is


def test_token_shards_are_private_whatever_the_umask(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _prepare(tmp_path / "run", cache, None)
    assert any(cache.rglob("*.tokens.npy"))
    assert _modes(cache) == {("dir", 0o700), ("file", 0o600)}


def test_a_share_group_gives_the_shards_to_that_group(tmp_path: Path) -> None:
    group = grp.getgrgid(os.getgid()).gr_name  # a group this account is in
    cache = tmp_path / "cache"
    _prepare(tmp_path / "run", cache, group)
    assert _modes(cache) == {("dir", 0o2750), ("file", 0o640)}
    assert {p.group() for p in [cache, *cache.rglob("*")]} == {group}


def test_the_policy_refuses_an_unknown_group_and_keeps_files_private(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="share_group 'no-such-group-hlm': no such Unix group"):
        share_with("no-such-group-hlm")
    share_with(None)
    old = os.umask(0)
    try:
        made = make_dirs(tmp_path / "a" / "b")
        append_jsonl(made / "metrics.jsonl", {"step": 1})
        with open_new(made / "stderr.log", "a") as handle:
            handle.write("line\n")
    finally:
        os.umask(old)
    assert _modes(tmp_path / "a") == {("dir", 0o700), ("file", 0o600)}
