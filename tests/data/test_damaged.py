"""Damaged copies of mitdb record 101: each is an error naming the file and the numbers, or with
skip_bad_records a skipped record listed with its reason; never exit 0 with beats silently lost."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from trainer.commands.prepare_command import add_arguments, run
from trainer.data.dataset import WindowDataset, load_manifest
from trainer.data.errors import DataError
from trainer.data.prepare import prepare_dataset

SAMPLES = {"name": "samples"}


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return run(parser.parse_args([*argv, "--no-progress"]))


def cut(path: Path, size: int) -> None:
    path.write_bytes(path.read_bytes()[:size])


def set_samples(folder: Path, count: int) -> None:
    header = folder / "101.hea"
    header.write_text(header.read_text().replace("101 2 360 650000", f"101 2 360 {count}", 1))


def set_format(folder: Path, fmt: str) -> None:
    header = folder / "101.hea"
    header.write_text(header.read_text().replace("101.dat 212 ", f"101.dat {fmt} "))


# damage, tokenizer, the message (regex) naming the file and the expected vs found numbers
DAMAGES: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "truncated .dat": (lambda f: cut(f / "101.dat", 100_000), "samples",
                       r"mitdb/101\.dat: holds 33,333 samples per signal, the header 101\.hea says 650,000 "
                       r"\(100,000 bytes, 2 signal\(s\) in format 212\); the file is truncated"),
    "truncated .atr": (lambda f: cut(f / "101.atr", 1000), "samples",
                       r"mitdb/101\.atr: truncated annotation file: 1,000 bytes end without the end-of-file marker "
                       r"\(a zero word\), after [\d,]+ annotations, the last at sample [\d,]+; the record is "
                       r"650,000 samples long \(101\.hea\)"),
    "truncated .atr, beats": (lambda f: cut(f / "101.atr", 1000), "beats",
                              r"mitdb/101\.atr: truncated annotation file: 1,000 bytes"),
    "header count too small": (lambda f: set_samples(f, 110_000), "samples",
                               r"mitdb/101\.dat: holds 650,000 samples per signal, the header 101\.hea says 110,000 "
                               r".*the header's sample count is too small"),
    "header count too large": (lambda f: set_samples(f, 700_000), "samples",
                               r"mitdb/101\.dat: holds 650,000 samples per signal, the header 101\.hea says 700,000 "
                               r".*the file is truncated"),
    "unknown format": (lambda f: set_format(f, "999"), "samples",
                       r"mitdb/101\.hea: unsupported storage format 999 for signal 0 \(101\.dat\); readable "
                       r"formats: 8, 16, .*212"),
    "missing .dat": (lambda f: (f / "101.dat").unlink(), "samples",
                     r"mitdb/101\.dat: signal file not found \(named in 101\.hea"),
    "missing .atr": (lambda f: (f / "101.atr").unlink(), "beats",
                     r"mitdb/101\.hea: no annotation file found \(tried \.atr, \.ari\); no other file beside "
                     r"101\.hea could hold annotations"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_damaged_record_is_an_error_or_a_listed_skip(damage: str, mitdb_copy: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    harm, tokenizer, message = DAMAGES[damage]
    harm(mitdb_copy)
    with pytest.raises(DataError, match=message):
        prepare_dataset(mitdb_copy, {"name": tokenizer}, tmp_path / "c")
    assert cli("--data", str(mitdb_copy), "--tokenizer", tokenizer, "--out", str(tmp_path / "c")) == 3
    err = capsys.readouterr().err
    assert "bad input data" in err and "--skip-bad-records" in err

    shard = prepare_dataset(mitdb_copy, {"name": tokenizer}, tmp_path / "c", skip_bad_records=True)
    m = load_manifest(shard)
    assert [r["name"] for r in m["records"]] == ["100"] and m["totals"]["beats"] == 2273
    (skipped,) = m["skipped_records"]
    assert skipped["name"] == "101" and m["totals"]["skipped_records"] == 1
    assert re.search(message, skipped["reason"])
    assert cli("--data", str(mitdb_copy), "--tokenizer", tokenizer, "--out", str(tmp_path / "c"),
               "--skip-bad-records") == 0
    out = capsys.readouterr().out
    assert "1 records (1 skipped as bad)" in out and "skipped record 101: " in out
    # the skip is remembered only while it is asked for: without the option the error comes back
    with pytest.raises(DataError, match=message):
        prepare_dataset(mitdb_copy, {"name": tokenizer}, tmp_path / "c")


def test_beats_beyond_a_consistently_shortened_record(mitdb_copy: Path, tmp_path: Path) -> None:
    """Header and signal agree (100,000 samples) but the annotations go on: 1,6xx beats would be lost."""
    set_samples(mitdb_copy, 100_000)
    cut(mitdb_copy / "101.dat", 300_000)
    with pytest.raises(DataError, match=r"mitdb/101\.atr: 1,[\d]{3} of 1,865 beats lie outside the signal "
                                        r"\(expected samples 0\.\.99,999 of 101\.hea, found one at 100,\d+\)"):
        prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "c")


def test_annotation_error_lists_the_extensions_beside_the_header(mitdb_copy: Path, tmp_path: Path) -> None:
    (mitdb_copy / "101.atr").rename(mitdb_copy / "101.qrs")
    with pytest.raises(DataError, match=r"101\.hea: no annotation file found \(tried \.atr, \.ari\); beside "
                                        r"101\.hea: \.qrs; choose one with the annotator option \(hlm-train "
                                        r"--annotator qrs, cockpit demo --annotator qrs, study file "
                                        r"\[data\.tokenizer\] annotator = \"qrs\"\)"):
        prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "c")


def test_several_bad_records_are_reported_together(mitdb_copy: Path, tmp_path: Path) -> None:
    cut(mitdb_copy / "100.atr", 2000)
    cut(mitdb_copy / "101.dat", 100_000)
    with pytest.raises(DataError, match=r"(?s)2 of 2 records are bad:\n  .*100\.atr: truncated.*\n  .*101\.dat: holds"):
        prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "c")
    with pytest.raises(DataError, match=r"every record is bad, nothing to train on"):
        prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "c", skip_bad_records=True)


def test_failed_prepare_keeps_the_previous_manifest(mitdb_copy: Path, physionet: Path, tmp_path: Path) -> None:
    shard = prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "c")
    before = (shard / "manifest.json").read_text()
    labelled = sum(sum(r["class_counts"]) for r in json.loads(before)["records"])
    header = mitdb_copy / "100.hea"
    header.write_text(header.read_text() + "# edited\n")  # 100 changes and is redone ...
    cut(mitdb_copy / "101.atr", 1000)  # ... 101 is now bad
    with pytest.raises(DataError, match=r"101\.atr: truncated annotation file"):
        prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "c")
    assert (shard / "manifest.json").read_text() == before  # the good cache is still usable
    assert len(WindowDataset(shard, 128, "beat", ["100", "101"])) == labelled
    # skipping the bad record reuses the new version of 100 that the failed prepare wrote
    m = load_manifest(prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "c", skip_bad_records=True))
    assert m["timing"]["records_up_to_date"] == 1 and [r["name"] for r in m["records"]] == ["100"]
    # repaired: the record comes back, the skip list empties
    (mitdb_copy / "101.atr").write_bytes((physionet / "mitdb" / "101.atr").read_bytes())
    m = load_manifest(prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "c", skip_bad_records=True))
    assert [r["name"] for r in m["records"]] == ["100", "101"] and m["skipped_records"] == []


def test_counts_are_in_the_manifest_and_the_summary(mitdb_copy: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("--data", str(mitdb_copy), "--out", str(tmp_path / "c")) == 0
    out = capsys.readouterr().out
    shard = Path(out.splitlines()[0])
    m = json.loads((shard / "manifest.json").read_text())
    t = m["totals"]
    assert t["unclassified_beats"] == sum(r["unclassified_beats"] for r in m["records"])
    assert t["beats"] == 2273 + 1865 == sum(t["class_counts"]) + t["unclassified_beats"]
    assert t["beats_outside_signal"] == 0 and t["skipped_records"] == 0
    assert (f"{t['beats']:,} beats ({t['unclassified_beats']} without an AAMI class, kept with label -1; "
            "0 outside the signal)") in out
    assert "split: 1 train, 1 test records (100); every record is an MIT-BIH Arrhythmia record" in out
