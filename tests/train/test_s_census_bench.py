"""bench/s_census.py on the real mitdb and svdb: each record's S beats by run, recounted here through another
reader (wfdb.rdann's symbols and a plain loop), and the training total the summary line states."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import wfdb

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from s_census import SHORT_MAX, census, lines, run_lengths  # noqa: E402  (a bench script)

from trainer.data.labels import AAMI, BEAT_CLASSES, BEAT_SYMBOLS  # noqa: E402  (the symbols, not the counting)

S_SYMBOLS = {sym for sym, cls in AAMI.items() if cls == BEAT_CLASSES.index("S")}


def recount(path: Path) -> dict[str, int]:
    """S beats by the run they sit in, from wfdb's symbols with a loop over the beats."""
    symbols = [s for s in wfdb.rdann(str(path), "atr").symbol if s in BEAT_SYMBOLS]
    counts = {"S": 0, "alone": 0, "pair": 0, "short run": 0, "sustained": 0, "longest": 0}
    i = 0
    while i < len(symbols):
        if symbols[i] not in S_SYMBOLS:
            i += 1
            continue
        j = i
        while j < len(symbols) and symbols[j] in S_SYMBOLS:
            j += 1
        n = j - i
        kind = "alone" if n == 1 else "pair" if n == 2 else "short run" if n <= SHORT_MAX else "sustained"
        counts[kind] += n
        counts["S"] += n
        counts["longest"] = max(counts["longest"], n)
        i = j
    return counts


def test_run_lengths_give_each_s_beat_its_runs_length() -> None:
    is_s = np.array([1, 0, 1, 1, 1, 0, 0, 1, 1], dtype=bool)
    assert run_lengths(is_s).tolist() == [1, 0, 3, 3, 3, 0, 0, 2, 2]
    assert run_lengths(np.zeros(3, dtype=bool)).tolist() == [0, 0, 0]


def test_the_census_counts_what_another_reader_counts(physionet: Path) -> None:
    rows = {r["record"]: r for r in census([physionet / "mitdb", physionet / "svdb"])}
    for name in ("mitdb/232", "mitdb/209", "svdb/865", "svdb/854", "mitdb/100"):
        db, record = name.split("/")
        row = rows[name]
        assert {k: row[k] for k in recount(physionet / db / record)} == recount(physionet / db / record), name
    assert rows["mitdb/232"]["part"] == "test (DS2)" and rows["mitdb/209"]["part"] == "train (DS1)"
    assert rows["svdb/865"]["part"] == "train" and rows["mitdb/102"]["part"] == "excluded"
    assert rows["mitdb/232"]["N RR s"] > 1.5 > rows["mitdb/232"]["S RR s"]  # 232's slow sinus, its faster S runs


def test_the_summary_line_sums_the_training_records(physionet: Path) -> None:
    out = subprocess.run([sys.executable, "bench/s_census.py"], cwd=REPO, capture_output=True, text=True,
                         timeout=300, check=True).stdout  # the docstring's command: mitdb and svdb beside the repo
    trained = [r for r in census([physionet / "mitdb", physionet / "svdb"]) if r["part"].startswith("train")]
    short = [recount(physionet / r["record"])["short run"] for r in trained]
    assert f"training records ({len(trained)}): S beats in short runs {sum(short):,} in all, at most " \
           f"{max(short):,} in one" in out
    listed = out.splitlines()[1:-1]
    assert len(listed) == 10 and listed[0].startswith("mitdb/232")  # the most S beats in short runs of any record


def test_an_unreadable_annotation_file_is_named(tmp_path: Path, physionet: Path) -> None:
    for ext in ("hea", "atr"):
        (tmp_path / f"100.{ext}").write_bytes((physionet / "mitdb" / f"100.{ext}").read_bytes())
    (tmp_path / "100.atr").write_bytes((physionet / "mitdb" / "100.atr").read_bytes()[:101])
    run = subprocess.run([sys.executable, "bench/s_census.py", "--data", str(tmp_path)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and run.stderr.startswith(f"s_census: {tmp_path / '100.atr'}: ")


def test_bench_readme_shows_the_census_it_computes(physionet: Path) -> None:
    """bench/README.md's census block is the script's output for the six records with most S beats in short runs."""
    text = (REPO / "bench" / "README.md").read_text()
    assert "\n".join(lines(census([physionet / "mitdb", physionet / "svdb"]), 6)) in text
