"""bench/af_evidence.py on real mitdb records: the atrial lock tells 201's fibrillation from its other rhythms,
each gate's threshold reaches the share of DS1's AF N beats its row says, and bad input is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from af_evidence import COVERAGE, FEATURES, KINDS, read_beats  # noqa: E402  (a bench script)

SCRIPT = REPO / "bench" / "af_evidence.py"


def test_fibrillation_has_no_atrial_lock_and_sinus_has(physionet: Path) -> None:
    beats = read_beats(physionet / "mitdb", "mitdb", "201")
    no_lock = beats.values["atrial lock"]  # 1 - lock: high where no P wave keeps time with the QRS
    in_af, other_n = beats.kind == KINDS.index("N in AF"), beats.kind == KINDS.index("other N")
    assert in_af.sum() > 800 and other_n.sum() > 500
    assert np.median(no_lock[in_af]) > 0.7 > 0.4 > np.median(no_lock[other_n])
    # the irregularity parts them too, by less: 201's other rhythms include runs of S beats and a nodal rhythm
    assert np.median(beats.values["irregularity"][in_af]) > 1.4 * np.median(beats.values["irregularity"][other_n])


def test_the_docstring_example_sets_each_threshold_where_its_row_says(physionet: Path) -> None:
    """The script's own example: each row's threshold reaches the share of DS1's AF N beats it names."""
    example = next(line.split("#")[0].split() for line in (SCRIPT.read_text().splitlines())
                   if "--only" in line and line.strip().startswith("python bench/af_evidence.py"))
    out = subprocess.run([sys.executable, str(SCRIPT), "--data", str(physionet), *example[2:]],
                         capture_output=True, text=True, timeout=300, check=True).stdout.splitlines()
    assert out[0].startswith("records: DS1 1 (") and "svdb 1 (460 S, 0 N in AF" in out[0] and "DS2 1 (" in out[0]
    head = [c.strip() for c in out[1].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out[3:]]
    assert [r[0] for r in rows] == [f for f in FEATURES for _ in COVERAGE]
    for row, coverage in zip(rows, COVERAGE * len(FEATURES), strict=True):
        assert row[2] == f"{coverage:.0%}"
        hit, total = (int(x.replace(",", "")) for x in row[head.index("DS1 N in AF blocked")].split(" ")[0].split("/"))
        assert abs(hit / total - coverage) < 0.01


def test_an_unknown_record_and_no_fibrillation_to_set_thresholds_on_are_named(physionet: Path) -> None:
    def run(*only: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(SCRIPT), "--data", str(physionet), "--only", *only],
                              capture_output=True, text=True, timeout=120, check=False)

    missing = run("mitdb/999")
    assert missing.returncode == 1 and f"--only mitdb/999: no record '999' in {physionet / 'mitdb'}" in missing.stderr
    no_af = run("svdb/800")
    assert no_af.returncode == 1 and "no N beats inside atrial fibrillation among the DS1 records" in no_af.stderr
    assert "svdb 1 (30 S, 0 N in AF, 1,846 other N)" in no_af.stdout
