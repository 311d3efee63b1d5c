"""Fixtures for training tests that go through the real command line and real (synthetic) token shards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runcontract.records import write_config

SYNTHETIC = {"records": 3, "seconds": 60}


@pytest.fixture(scope="session")
def token_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A token cache shared by the session: the synthetic shards are prepared once, on first use."""
    return tmp_path_factory.mktemp("tokens")


def write_run_config(run_dir: Path, cache: Path, **overrides: Any) -> Path:
    """config.json as the launcher writes it (cockpit.study.spec.Study.run_config), for a tiny CPU run."""
    train = {"steps": 40, "lr": 1e-3, "seed": 0, "device": "cpu", "metrics_interval_s": 0.2, "eval": True,
             **overrides.pop("train", {})}
    config = {
        "study": "tests", "config_id": run_dir.name, "group_id": "g", "dataset": "synthetic", "data_path": None,
        "synthetic": True, "synthetic_params": SYNTHETIC, "tokenizer": {"name": "samples"},
        "token_cache": str(cache), "prepare_workers": 1, "mode": "foundation", "window": 32,
        "precision": "fp32", "batch_size": 4, "cpus_per_task": 1, "gpus_per_node": 1, "nodes": 1,
        "model": {"layers": 1, "d_model": 16, "heads": 2, "dropout": 0.0}, "train": train, **overrides,
    }
    return write_config(run_dir, config)
