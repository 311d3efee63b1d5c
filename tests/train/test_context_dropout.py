"""train.context_dropout: a share of the training windows shows the mask token in place of its RR context tokens,
drawn anew each epoch, so the fine-tune also learns the class from the waveform; real mitdb records through the
product's command line."""

from __future__ import annotations

from pathlib import Path

import torch

from trainer.data.batches import HiddenContext, LabelledWindows

CONTEXT, MASK = 3, 99


def items(n: int) -> list[tuple[torch.Tensor, int]]:
    return [(torch.arange(10, 20) + k, k % 2) for k in range(n)]


def test_a_share_of_the_items_hides_its_context_tokens_and_keeps_the_rest():
    windows = items(2000)
    labelled = LabelledWindows(windows, seed=7, hidden=HiddenContext(CONTEXT, 0.3, MASK))
    hidden = 0
    for index in range(len(windows)):
        tokens, label = labelled[(0, index)]
        original = windows[index][0]
        assert torch.equal(tokens[CONTEXT:], original[CONTEXT:])  # the waveform is untouched
        assert int(label) == windows[index][1]
        if labelled.hides_context(0, index):
            hidden += 1
            assert tokens[:CONTEXT].tolist() == [MASK] * CONTEXT
        else:
            assert torch.equal(tokens, original)
        assert torch.equal(original, torch.arange(10, 20) + index)  # the dataset's own tensor is not written
    assert 0.25 < hidden / len(windows) < 0.35


def test_the_draw_depends_on_seed_epoch_and_index_only():
    a = LabelledWindows(items(500), seed=7, hidden=HiddenContext(CONTEXT, 0.5, MASK))
    b = LabelledWindows(items(500), seed=7, hidden=HiddenContext(CONTEXT, 0.5, MASK))
    first = [a.hides_context(0, i) for i in range(500)]
    assert first == [b.hides_context(0, i) for i in range(500)]  # another worker, rank or restart: the same
    assert first != [a.hides_context(1, i) for i in range(500)]  # anew each epoch
    assert not any(LabelledWindows(items(5)).hides_context(0, i) for i in range(5))  # off by default


def fine_tune(physionet: Path, tmp_path: Path, *flags: str) -> Path:
    from tests.data.conftest import copy_records
    from trainer.commands.cli import main

    data = copy_records(physionet / "mitdb", tmp_path / "db", ["101", "100"], ("hea", "atr", "dat"))
    run_dir = tmp_path / "run"
    main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(tmp_path / "c"),
          "--tokenizer", "samples", "--fs", "180", "--mode", "finetune", "--pool", "centre", "--window", "32",
          "--batch-size", "8", "--layers", "1", "--d-model", "16", "--heads", "2", "--steps", "3", "--device", "cpu",
          "--cpus-per-task", "1", "--num-workers", "0", *flags])
    return run_dir


def test_a_fine_tune_records_what_it_hid(physionet: Path, tmp_path: Path):
    from runcontract.records import read_result
    from trainer import rundir
    from trainer.data.rr_context import context_length

    run_dir = fine_tune(physionet, tmp_path, "--context", "rr", "--context-dropout", "0.5")
    assert read_result(run_dir)["data"]["context_dropout"] == {"share": 0.5, "tokens": context_length("rr")}
    assert "context dropout: 50% of the training windows" in (run_dir / rundir.LOG_FILE).read_text()


def test_without_context_tokens_it_is_refused_by_name(physionet: Path, tmp_path: Path):
    from runcontract.records import read_exit

    run_dir = fine_tune(physionet, tmp_path, "--context-dropout", "0.5")
    message = str(read_exit(run_dir))
    assert "train.context_dropout = 0.5" in message and "found context = 'none'" in message
