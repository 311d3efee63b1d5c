"""Unusual WFDB records, each built with wfdb.wrsamp / wfdb.wrann (or linked from the WFDB sample
corpus) and prepared: annotation time resolution, multi-frame leads, format 32, invalid samples,
resampling at the edges, EDF, a one-record folder, mixed rates and the annotator hint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import wfdb

from tests.data.wfdb_corpus import CORPUS
from trainer.data.dataset import WindowDataset, load_manifest
from trainer.data.errors import DataError
from trainer.data.prepare import prepare_dataset
from trainer.data.rr_context import CONTEXT_FEATURES, RR_BINS, beats_token_rr_ms
from trainer.data.summary import describe
from trainer.data.tokenizers import (
    DEFAULTS,
    SPECIAL_TOKENS,
    Quantizer,
    gap_at_rate,
    quantize,
    resampling_reach,
)

PAD = SPECIAL_TOKENS["pad"]
REPO = Path(__file__).resolve().parents[2]


def write_record(folder: Path, name: str, fs: float, leads: list[np.ndarray], fmt: str = "16",
                 per_frame: list[int] | None = None) -> None:
    """One record of digital leads (several samples per frame where `per_frame` says so)."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(leads)
    common = {"units": ["mV"] * n, "sig_name": [f"L{i}" for i in range(n)], "fmt": [fmt] * n,
              "adc_gain": [200.0] * n, "baseline": [0] * n, "write_dir": str(folder)}
    if per_frame:
        wfdb.wrsamp(name, fs=fs, e_d_signal=[np.asarray(x, dtype=np.int32) for x in leads],
                    samps_per_frame=per_frame, **common)
    else:
        wfdb.wrsamp(name, fs=fs, d_signal=np.column_stack(leads).astype(np.int32), **common)


def write_beats(folder: Path, name: str, ext: str, sample: np.ndarray, fs: float | None = None) -> None:
    """Normal beats at `sample`; with `fs` the file says its time resolution (`## time resolution`)."""
    wfdb.wrann(name, ext, np.asarray(sample, dtype=np.int64), symbol=["N"] * len(sample), fs=fs,
               write_dir=str(folder))


def prepared(folder: Path, cache: Path, **tokenizer: Any) -> tuple[dict[str, Any], dict[str, np.ndarray], str]:
    """The manifest's only record, its arrays and the summary prepare prints."""
    shard = prepare_dataset(folder, tokenizer, cache)
    manifest = json.loads((shard / "manifest.json").read_text())
    rec = manifest["records"][0]
    arrays = {k: np.load(shard / "records" / f"{rec['file']}.{k}.npy") for k in ("tokens", "beats")}
    return rec, arrays, describe(manifest, shard, 0.0)


def ecg_like(n: int, fs: float, seconds_per_beat: float = 0.8) -> np.ndarray:
    """A spiky periodic lead (digital units) that is not constant anywhere."""
    t = np.arange(n) / fs
    phase = (t / seconds_per_beat) % 1.0
    return np.rint(400 * np.exp(-((phase - 0.5) / 0.02) ** 2) + 60 * np.sin(2 * np.pi * t / 3)).astype(np.int64)


def test_annotation_time_resolution_is_honoured_by_both_tokenizers(tmp_path: Path) -> None:
    """03700181's case: a 125 Hz record, beats every 490 ms written at 500 Hz (`## time resolution: 500`)."""
    db = tmp_path / "db"
    write_record(db, "r", 125, [ecg_like(125 * 120, 125, 0.49)])
    sample = np.arange(100, 500 * 119, 245)  # 490 ms at 500 Hz
    write_beats(db, "r", "hires", sample, fs=500)
    rec, arrays, summary = prepared(db, tmp_path / "c", name="beats", annotator="hires")
    rr = beats_token_rr_ms(arrays["tokens"], DEFAULTS["beats"])[1:]
    assert rec["n_beats"] == len(sample) and rec["annotation_fs"] == 500.0
    assert 440 < float(np.median(rr)) < 540  # the bin of 490 ms, not 1,960 ms
    assert "annotations at 500 Hz on a 125 Hz record" in summary
    rec, arrays, _ = prepared(db, tmp_path / "c", name="samples", annotator="hires", fs=0)
    assert np.array_equal(arrays["beats"], np.rint(sample * 125 / 500).astype(np.int64))
    # at 360 Hz the positions are the same times
    rec, arrays, _ = prepared(db, tmp_path / "c", name="samples", annotator="hires")
    assert np.array_equal(arrays["beats"], np.rint(sample * 360 / 500).astype(np.int64))


@pytest.mark.parametrize("tokenizer", ["samples", "beats"])
def test_annotations_at_an_undeclared_rate_are_refused_by_both_tokenizers(tokenizer: str, tmp_path: Path) -> None:
    """A 200 Hz annotation file without its time resolution on a 1 Hz header: beats far past the end."""
    db = tmp_path / "db"
    write_record(db, "g", 1, [ecg_like(200 * 600, 200), np.zeros(600)], per_frame=[200, 1])
    write_beats(db, "g", "qrs", np.arange(100, 200 * 600, 160))
    with pytest.raises(DataError) as err:
        prepare_dataset(db, {"name": tokenizer, "annotator": "qrs"}, tmp_path / "c")
    message = str(err.value).splitlines()[0]
    assert message.startswith(f"{db / 'g.qrs'}: 746 of 750 beats lie outside the signal (expected samples 0..599 ")
    assert ("of g.hea, found one at 740" if tokenizer == "beats" else "at the annotations' 1 Hz: the 600.0 s of g.hea, "
            "found one at 740") in message
    assert "counts at another rate without saying so (no '## time resolution' note)" in message


def test_a_lead_with_several_samples_per_frame_is_read_at_its_own_rate(tmp_path: Path) -> None:
    """test_generator_2's case: a 1 Hz header whose ECG holds 200 samples per frame (16x200)."""
    db = tmp_path / "db"
    ecg = ecg_like(200 * 600, 200)
    write_record(db, "g", 1, [ecg, np.arange(600) % 7], per_frame=[200, 1])
    sample = np.arange(100, 200 * 600, 160)
    write_beats(db, "g", "qrs", sample, fs=200)
    rec, arrays, summary = prepared(db, tmp_path / "c", name="samples", annotator="qrs", fs=0, highpass_hz=0.5)
    assert (rec["native_fs"], rec["fs"], rec["n_tokens"], rec["samples_per_frame"]) == (200.0, 200.0, 120_000, 200)
    assert np.array_equal(arrays["beats"], sample)
    assert len(np.unique(arrays["tokens"])) > 20  # the lead itself, not one value per frame
    assert "rate: lead L0 at 200 Hz (200 samples per frame), tokenized at 200 Hz (record g)" in summary
    rec, arrays, summary = prepared(db, tmp_path / "c", name="samples", annotator="qrs")
    assert (rec["native_fs"], rec["fs"], rec["n_tokens"]) == (200.0, 360.0, 216_000)
    q = Quantizer(**{k: v for k, v in rec["quantizer"].items()})
    wfdb_lead = wfdb.rdrecord(str(db / "g"), channels=[0], physical=False, smooth_frames=False).e_d_signal[0]
    rec0, arrays0, _ = prepared(db, tmp_path / "c", name="samples", annotator="qrs", fs=0)
    q0 = Quantizer(**rec0["quantizer"])
    assert np.array_equal(arrays0["tokens"], q0.apply(np.asarray(wfdb_lead, dtype=np.int64)))
    assert q.kind == "mulaw"


def test_format_32_with_invalid_samples_needs_no_table_over_the_integer_range(tmp_path: Path) -> None:
    """binformats' lead 9: 32-bit values over the whole range, and WFDB's invalid value -2^31."""
    db = tmp_path / "db"
    lead = (ecg_like(200 * 60, 200).astype(np.int64) * 5_000_000)
    lead[:3] = [2**31 - 1, -(2**31) + 1, 0]
    lead[1000:1010] = -(2**31)  # invalid
    write_record(db, "b", 200, [lead], fmt="32")
    write_beats(db, "b", "atr", np.arange(100, 200 * 60, 160))
    rec, arrays, summary = prepared(db, tmp_path / "c", name="samples", annotator="atr", fs=0)
    tokens = arrays["tokens"]
    assert rec["invalid_samples"] == 10 and np.array_equal(np.flatnonzero(tokens == PAD), np.arange(1000, 1010))
    assert "invalid samples: 10 in 1 record(s)" in summary
    # the quantiser on its own: a range of 2^32 values, binned directly
    x = np.array([-(2**31) + 1, 2**31 - 1, *range(-500, 500)], dtype=np.int64)
    q, tok = quantize(x, x, {**DEFAULTS["samples"]})
    assert tok[0] == 4 and tok[1] == 4 + 255 and len(np.unique(tok[2:])) > 50


def test_invalid_samples_are_padding_counted_and_never_spread(tmp_path: Path) -> None:
    """A MIMIC-like gap (WFDB invalid -32768 in format 16), resampled from 250 to 360 Hz."""
    db = tmp_path / "db"
    lead = ecg_like(250 * 60, 250)
    lead[2500:3000] = -32768  # 10 s to 12 s
    write_record(db, "m", 250, [lead])
    beats = np.arange(100, 250 * 60, 200)  # 0.4 s + k * 0.8 s
    write_beats(db, "m", "atr", beats)
    rec, arrays, summary = prepared(db, tmp_path / "c", name="samples", annotator="atr")
    tokens = arrays["tokens"]
    gap = gap_at_rate(lead == -32768, 250, 360, len(tokens))
    assert np.array_equal(tokens == PAD, gap) and gap[3600:4320].all() and gap.sum() < 720 + 40
    assert not np.isin(tokens[~gap], [4, 4 + 255]).any()  # no end-bin artefacts beside the gap
    times = beats / 250
    assert rec["invalid_samples"] == 500 and rec["beats_near_gap"] == int(((times > 9) & (times < 13)).sum()) == 5
    assert ("invalid samples: 500 in 1 record(s), stored as the pad token, never as signal; 5 beats lie within 1 s "
            "of one (kept, counted apart): m 500 (5 beats within 1 s)") in summary
    assert rec["n_beats"] == len(beats)  # beats near the gap are kept, counted apart
    native, _, _ = prepared(db, tmp_path / "c", name="samples", annotator="atr", fs=0)
    assert (native["invalid_samples"], native["beats_near_gap"]) == (500, 5)  # a property of the record, not of fs


def link(folder: Path, source: Path, record: str, exts: tuple[str, ...]) -> Path:
    """A folder of links to some files of a corpus record (the corpus itself is never written to)."""
    folder.mkdir(parents=True, exist_ok=True)
    for ext in exts:
        (folder / f"{record}.{ext}").symlink_to(source / f"{record}.{ext}")
    return folder


def test_beats_near_a_gap_are_counted_on_the_lead_s_own_samples(tmp_path: Path) -> None:
    """MIMIC segment 3234460_0016 (125 Hz, 479 invalid samples in lead II, 20 gaps), a beat every 0.8 s:
    the same count at its own rate and at 360 Hz, where the padding is wider (the filter's reach)."""
    db = link(tmp_path / "m", CORPUS / "multi-segment" / "s25047", "3234460_0016", ("hea", "dat"))
    beats = np.arange(50, 322_111, 100)
    write_beats(db, "3234460_0016", "atr", beats)
    gap = np.isnan(wfdb.rdrecord(str(db / "3234460_0016"), channels=[0]).p_signal[:, 0])
    before = np.concatenate(([0], np.cumsum(gap)))
    near = int((before[np.minimum(beats + 126, len(gap))] - before[np.maximum(beats - 125, 0)] > 0).sum())
    counts = {}
    for fs in (0, 360):
        rec, arrays, summary = prepared(db, tmp_path / "c", name="samples", annotator="atr", fs=fs)
        counts[fs] = (rec["invalid_samples"], rec["beats_near_gap"])
        assert f"{near} beats lie within 1 s of one" in summary
    assert counts == {0: (479, near), 360: (479, near)} and near == 40
    assert int((arrays["tokens"] == PAD).sum()) > 479 * 360 / 125  # widened at 360 Hz; the count is not


def test_a_lead_of_invalid_samples_only_is_refused_and_another_lead_is_read(tmp_path: Path) -> None:
    db = tmp_path / "db"
    write_record(db, "r", 250, [np.full(250 * 30, -32768), ecg_like(250 * 30, 250)])
    write_beats(db, "r", "atr", np.arange(100, 250 * 30, 200))
    with pytest.raises(DataError, match=r"r\.hea: lead L0 of record 'r' holds only invalid samples \(7,500, the "
                                        r"value -32768 of its storage format\); choose another lead"):
        prepare_dataset(db, {"name": "samples"}, tmp_path / "c")
    rec, _, _ = prepared(db, tmp_path / "c", name="samples", lead=1)
    assert (rec["lead"], rec["invalid_samples"]) == ("L1", 0)


def test_resampling_leaves_no_edge_artefacts(tmp_path: Path) -> None:
    db = tmp_path / "db"
    write_record(db, "k", 500, [np.full(500 * 20, -20863)])  # a constant lead far from zero
    write_beats(db, "k", "atr", np.arange(100, 500 * 20, 400))
    _, arrays, _ = prepared(db, tmp_path / "c", name="samples", annotator="atr")
    assert len(np.unique(arrays["tokens"])) == 1
    write_record(db, "e", 500, [ecg_like(500 * 20, 500) + 1000])  # a lead whose edges are ordinary samples
    write_beats(db, "e", "atr", np.arange(100, 500 * 20, 400))
    _, arrays, _ = prepared(db, tmp_path / "c", name="samples", annotator="atr", records=["e"])
    assert not np.isin(arrays["tokens"][:50], [4, 4 + 255]).any() and not np.isin(arrays["tokens"][-50:], [4, 259]).any()


def test_a_record_that_starts_with_junk_samples_shows_them_and_the_filter_s_reach_only(tmp_path: Path) -> None:
    """p10143 (format 61, 500 Hz): its file's first 10 samples are junk extremes (-20,863 .. 17,530, the
    signal rests near 963), end-bin tokens at its own rate. Resampled to 360 Hz they stay end bins, and
    the filter rings after them for at most its reach; nothing of the kind comes from ordinary samples."""
    real = link(tmp_path / "p", CORPUS, "p10143", ("hea", "dat"))
    write_beats(real, "p10143", "atr", np.arange(250, 450_000, 500))
    head = wfdb.rdrecord(str(real / "p10143"), channels=[0], physical=False, sampto=20).d_signal[:, 0]
    assert head[:10].tolist() == [-20863, 30, 16672, 12, 0, 0, 0, 2, 156, 17530] and (abs(head[10:] - 966) < 10).all()
    rec, native, _ = prepared(real, tmp_path / "c", name="samples", annotator="atr", fs=0)
    ends = [4, 4 + 255]
    assert np.flatnonzero(np.isin(native["tokens"][:1000], ends)).tolist() == [0, 2, 9]  # the junk itself
    _, arrays, _ = prepared(real, tmp_path / "c", name="samples", annotator="atr")
    reach = resampling_reach(500, 360)  # 15 output samples
    last_junk = int(np.ceil(9 * 360 / 500))
    ends_at = np.flatnonzero(np.isin(arrays["tokens"][:1000], ends))
    assert ends_at.tolist() == list(range(10)) and ends_at.max() <= last_junk + reach
    # past the reach the tokens span what the same 2.8 s span at 500 Hz (the quantisers differ by a bin or two)
    ordinary = native["tokens"][10:1389].astype(np.int64)
    after = arrays["tokens"][last_junk + reach + 1:1000].astype(np.int64)
    assert ordinary.min() - 2 <= after.min() and after.max() <= ordinary.max() + 2


def test_edf_is_refused_with_the_conversion_command(tmp_path: Path) -> None:
    db = tmp_path / "edf"
    db.mkdir()
    (db / "test_generator_2.edf").symlink_to(CORPUS / "test_generator_2.edf")
    with pytest.raises(DataError, match=r"edf: no WFDB headers, only EDF files \(test_generator_2\.edf\); EDF is "
                                        r"not read directly: convert it with the WFDB software's edf2mit \(edf2mit "
                                        r"-i test_generator_2\.edf -r test_generator_2\)"):
        prepare_dataset(db, {"name": "beats"}, tmp_path / "c")
    (db / "RECORDS").write_text("test_generator_2\n")
    with pytest.raises(DataError, match=r"test_generator_2\.hea: header file not found, only test_generator_2\.edf; "
                                        r"EDF is not read directly"):
        prepare_dataset(db, {"name": "beats"}, tmp_path / "c")


@pytest.mark.parametrize("tokenizer", ["beats", "samples"])
def test_a_one_record_folder_trains_on_its_record_and_says_so(tokenizer: str, tmp_path: Path) -> None:
    db = link(tmp_path / "one", CORPUS, "100", ("hea", "dat", "atr"))
    shard = prepare_dataset(db, {"name": tokenizer}, tmp_path / "c")
    m = load_manifest(shard)
    assert (m["split"]["train"], m["split"]["test"]) == (["100"], [])
    summary = describe(m, shard, 0.0)
    assert ("split: 1 train, 0 test records (none); every record is an MIT-BIH Arrhythmia record but none is in "
            "DS1, so the AAMI inter-patient split would leave nothing to train on; each record is its own patient: "
            "only one patient (100), so nothing is left for a test split") in summary
    if tokenizer == "samples":
        assert "1 records (0 skipped as bad), 2,273 beats" in summary and "650,000 tokens" in summary
        assert "rate: lead MLII at 360 Hz, tokenized at 360 Hz (record 100)" in summary


def test_a_mixed_rate_folder_kept_at_its_rates_says_so(tmp_path: Path) -> None:
    db = tmp_path / "mixed"
    for name, fs in (("a", 250), ("b", 360)):
        write_record(db, name, fs, [ecg_like(fs * 30, fs)])
        write_beats(db, name, "atr", np.arange(fs // 2, fs * 30, fs))
    shard = prepare_dataset(db, {"name": "samples", "fs": 0}, tmp_path / "c")
    summary = describe(load_manifest(shard), shard, 0.0)
    assert "rate: lead L0 at 250 Hz, tokenized at 250 Hz (record a)" in summary
    assert "rate: lead L0 at 360 Hz, tokenized at 360 Hz (record b)" in summary
    assert "mixed rates kept (fs = 0): a window of W tokens spans W / rate seconds, here 250 Hz, 360 Hz" in summary


def test_the_annotator_hint_ranks_by_beats_inside_the_signal(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        prepare_dataset(CORPUS, {"name": "beats", "records": ["12726"]}, tmp_path / "c")
    message = str(err.value)
    assert ("beside 12726.hea: .wqrs, .wabp, .anI; choose one with the annotator option (hlm-train --annotator "
            "wqrs, ") in message
    assert "beats inside the signal: .wqrs 3,653, .wabp 3,623, .anI none" in message
    notes_only = tmp_path / "notes"
    notes_only.mkdir()
    for ext in ("hea", "anI"):
        (notes_only / f"12726.{ext}").symlink_to(CORPUS / f"12726.{ext}")
    with pytest.raises(DataError, match=r"beside 12726\.hea: \.anI; none of them places a beat inside the signal\n"):
        prepare_dataset(notes_only, {"name": "beats"}, tmp_path / "c")


def test_the_annotator_hint_ranks_the_three_annotators_of_03700181(tmp_path: Path) -> None:
    """Annotators at 250 Hz (.sqrs) and 500 Hz (.gqrsh, .gqrsl) on a 125 Hz record, counted in seconds."""
    for tokenizer in ("beats", "samples"):
        with pytest.raises(DataError) as err:
            prepare_dataset(CORPUS, {"name": tokenizer, "records": ["03700181"]}, tmp_path / "c")
        first = str(err.value).splitlines()[0]
        assert first.startswith(f"{CORPUS / '03700181.hea'}: no annotation file found (tried .atr, .ari); beside "
                                "03700181.hea: .sqrs, .gqrsh, .gqrsl; choose one with the annotator option "
                                "(hlm-train --annotator sqrs, ")
        assert first.endswith("beats inside the signal: .sqrs 1,195, .gqrsh 1,150, .gqrsl 1,117")


RR_NAMES = list(CONTEXT_FEATURES)


@pytest.mark.parametrize("tokenizer", ["beats", "samples"])
def test_rr_context_honours_the_annotations_time_resolution(tokenizer: str, tmp_path: Path) -> None:
    """03700181 with .gqrsh (500 Hz annotations on a 125 Hz header, MCL1 at 500 Hz): a median RR of 490 ms
    in wfdb, and in the RR context tokens (the beats tokenizer's RR bins, the samples tokenizer's positions
    at 360 Hz), not 4 times it."""
    ann = wfdb.rdann(str(CORPUS / "03700181"), "gqrsh")
    assert np.median(np.diff(ann.sample)) * 1000 / ann.fs == 490.0
    shard = prepare_dataset(CORPUS, {"name": tokenizer, "records": ["03700181"], "annotator": "gqrsh"}, tmp_path / "c")
    ds = WindowDataset(shard, 16, "foundation", context="rr")
    low, high = CONTEXT_FEATURES["pre_ms"]
    pre_bin = ds.item_context[:, RR_NAMES.index("pre_ms")].astype(np.int64) - ds.manifest.vocab_size
    pre_ms = np.exp(np.log(low) + (pre_bin + 0.5) / RR_BINS * np.log(high / low))  # the bin's geometric centre
    assert 0 <= pre_bin.min() and pre_bin.max() < RR_BINS
    # 490 ms's bin or a neighbour (7.5 % wide; the beats tokenizer's own RR bin is binned again), not 1,960 ms
    assert 440 < float(np.median(pre_ms)) < 540


def test_the_cli_refuses_in_one_line_with_exit_3(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "trainer.commands.cli", "prepare", "--data", str(CORPUS), "--records",
                          "12726", "--tokenizer", "beats", "--annotator", "anI", "--out", str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr
    first, *rest = out.stderr.splitlines()
    assert first.endswith(f": bad input data: {CORPUS / '12726.anI'}: no beat annotations in record '12726'")
    assert len(rest) == 1 and rest[0].startswith("(to leave bad records out") and "Traceback" not in out.stderr
    assert list(tmp_path.iterdir()) == []  # no empty shard folder (lock and records/) left behind
