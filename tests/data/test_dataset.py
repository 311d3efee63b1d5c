"""WindowDataset and the record splits over real and synthetic shards."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from trainer.data.dataset import WindowDataset, load_manifest, split_records
from trainer.data.errors import DataError
from trainer.data.prepare import prepare_dataset
from trainer.data.shards import array_path
from trainer.data.splits import DS1, DS2, PACED


@pytest.fixture
def samples_shard(mitdb_copy: Path, cache: Path) -> Path:
    return prepare_dataset(mitdb_copy, {"name": "samples"}, cache)


def test_windows_are_centred_on_beats(samples_shard: Path) -> None:
    ds = WindowDataset(samples_shard, 256, "beat", ["100"])
    file = load_manifest(samples_shard)["records"][0]["file"]
    stream = np.load(array_path(samples_shard, file, "tokens"))
    beats = np.load(array_path(samples_shard, file, "beats"))
    labels = np.load(array_path(samples_shard, file, "labels"))
    assert len(ds) == int((labels >= 0).sum())
    for i in (5, 100, len(ds) - 5):
        tokens, label = ds[i]
        assert tokens.dtype == torch.long and tokens.shape == (256,)
        b = beats[labels >= 0][i]
        assert torch.equal(tokens, torch.from_numpy(stream[b - 128 : b + 128].astype(np.int64)))
        assert label == labels[labels >= 0][i]


def test_edge_windows_are_padded(samples_shard: Path) -> None:
    ds = WindowDataset(samples_shard, 1024, "foundation", ["100"])
    m = load_manifest(samples_shard)
    first_beat = int(np.load(array_path(samples_shard, load_manifest(samples_shard)["records"][0]["file"], "beats"))[0])
    tokens, label = ds[0]
    assert label == -1 and len(ds) == m["records"][0]["n_beats"]
    assert torch.all(tokens[: 512 - first_beat] == m.pad_id) and torch.all(tokens[512 - first_beat :] != m.pad_id)
    tokens, _ = ds[len(ds) - 1]
    assert tokens.shape == (1024,)


def test_tasks_select_labelled_items(tmp_path: Path) -> None:
    shard = prepare_dataset(None, {"name": "samples"}, tmp_path, synthetic_params={"records": 3, "seconds": 120})
    m = load_manifest(shard)
    found, beat, rhythm = (WindowDataset(shard, 128, t) for t in ("foundation", "beat", "rhythm"))
    assert len(found) == m["totals"]["beats"] and set(found.labels.tolist()) == {-1}
    assert beat.class_counts().tolist()[:3] == m["totals"]["class_counts"][:3]
    assert len(rhythm) == sum(m["totals"]["rhythm_counts"]) and rhythm.labels.min() >= 0


def test_beats_windows_tile_records(tmp_path: Path) -> None:
    shard = prepare_dataset(None, {"name": "beats"}, tmp_path, synthetic_params={"records": 4, "seconds": 300})
    m = load_manifest(shard)
    ds = WindowDataset(shard, 64, "foundation")
    assert len(ds) == sum(r["n_tokens"] // 64 for r in m["records"])
    first = np.load(array_path(shard, m["records"][0]["file"], "tokens"))
    assert torch.equal(ds[1][0], torch.from_numpy(first[64:128].astype(np.int64)))
    half = WindowDataset(shard, 64, "foundation", stride=32)
    assert len(half) == sum((r["n_tokens"] - 64) // 32 + 1 for r in m["records"])
    rhythm = WindowDataset(shard, 64, "rhythm")
    rh = np.load(array_path(shard, m["records"][0]["file"], "rhythm"))
    assert rhythm[0][1] == rh[32]  # label of a tiled window = rhythm at its centre beat


def test_loader_workers_give_the_same_batches(samples_shard: Path) -> None:
    ds = WindowDataset(samples_shard, 128, "beat")
    batches = [list(DataLoader(ds, batch_size=64, num_workers=n)) for n in (0, 2)]
    assert len(batches[0]) == len(batches[1]) > 10
    for (xa, ya), (xb, yb) in zip(*batches, strict=True):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_bad_dataset_arguments(samples_shard: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"record\(s\) 555 not in dataset 'mitdb'"):
        WindowDataset(samples_shard, 128, "beat", ["100", "555"])
    with pytest.raises(DataError, match="unknown task 'segment'"):
        WindowDataset(samples_shard, 128, "segment")
    with pytest.raises(DataError, match="manifest.json: not found"):
        WindowDataset(tmp_path, 128, "beat")


def test_mitbih_inter_patient_split() -> None:
    all_records = {"records": [{"name": n} for n in sorted(DS1 + DS2 + list(PACED))]}
    assert split_records(all_records, "train") == sorted(DS1) and split_records(all_records, "DS2") == sorted(DS2)
    assert not set(PACED) & set(split_records(all_records, "all"))
    some = {"records": [{"name": n} for n in ("100", "101", "102")]}
    assert split_records(some, "train") == ["101"] and split_records(some, "test") == ["100"]


def test_other_datasets_split_80_20_by_name() -> None:
    m = {"records": [{"name": f"synthetic-{i:03d}"} for i in (7, 1, 0, 3, 2, 5, 4, 6)]}
    assert split_records(m, "test") == ["synthetic-006", "synthetic-007"]
    assert len(split_records(m, "train")) == 6
    assert split_records({"records": [{"name": "only"}]}, "test") == []
    with pytest.raises(DataError, match="unknown split 'validation'"):
        split_records(m, "validation")
