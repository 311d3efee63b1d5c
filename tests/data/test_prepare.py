"""prepare: idempotent, atomic under SIGKILL, locked, parallel = serial, and the whole databases."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from trainer.data import shards
from trainer.data.dataset import WindowDataset, load_manifest
from trainer.data.errors import DataError
from trainer.data.prepare import prepare_dataset, shard_path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = {"name": "samples"}


def mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def files_of(shard: Path) -> dict[str, str]:
    """Record name -> its file stem in the shard (the name plus the start of its input digest)."""
    return {r["name"]: r["file"] for r in load_manifest(shard)["records"]}


def run_killed(data: Path, cache: Path, patch: str, hit: int) -> subprocess.CompletedProcess[str]:
    """Run a prepare in a subprocess that SIGKILLs itself right after the `hit`-th call of shards.<patch>."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        from trainer.data import shards
        original, calls = shards.{patch}, []
        def killing(*args, **kwargs):
            original(*args, **kwargs)
            calls.append(1)
            if len(calls) == {hit}:
                os.kill(os.getpid(), signal.SIGKILL)
        shards.{patch} = killing
        from trainer.data.prepare import prepare_dataset
        prepare_dataset(Path(sys.argv[1]), {{"name": "samples"}}, Path(sys.argv[2]), workers=1)
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", script, str(data), str(cache)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_second_prepare_skips_and_rewrites_nothing(mitdb_copy: Path, cache: Path) -> None:
    shard = prepare_dataset(mitdb_copy, SAMPLES, cache)
    before = mtimes(shard)
    assert shard.name.startswith("mitdb-samples-") and "manifest.json" in before
    assert prepare_dataset(mitdb_copy, SAMPLES, cache) == shard
    assert mtimes(shard) == before
    m = load_manifest(shard)
    assert [r["name"] for r in m["records"]] == ["100", "101"] and m["timing"]["records_up_to_date"] == 0


def test_changed_input_redoes_only_that_record(mitdb_copy: Path, cache: Path) -> None:
    shard = prepare_dataset(mitdb_copy, SAMPLES, cache)
    before = mtimes(shard)
    old = files_of(shard)
    header = mitdb_copy / "101.hea"
    header.write_text(header.read_text() + "# edited\n")
    prepare_dataset(mitdb_copy, SAMPLES, cache)
    after, new = mtimes(shard), files_of(shard)
    assert new["100"] == old["100"] and new["101"] != old["101"]  # 101 is a new version of the record
    assert after[f"records/{old['100']}.tokens.npy"] == before[f"records/{old['100']}.tokens.npy"]
    assert f"records/{new['101']}.json" in after and f"records/{old['101']}.json" not in after  # old removed
    assert load_manifest(shard)["timing"]["records_up_to_date"] == 1


def test_other_parameters_get_their_own_shards(mitdb_copy: Path, cache: Path) -> None:
    a = prepare_dataset(mitdb_copy, SAMPLES, cache)
    b = prepare_dataset(mitdb_copy, {"name": "samples", "vocab": 64}, cache)
    assert a != b and load_manifest(b)["vocab_size"] == 64 + 4


def test_killed_after_first_record_leaves_no_manifest_then_completes(mitdb_copy: Path, cache: Path) -> None:
    proc = run_killed(mitdb_copy, cache, "write_meta", hit=1)
    assert proc.returncode == -9, proc.stderr
    shard = shard_path(mitdb_copy, SAMPLES, cache)
    assert not (shard / "manifest.json").exists()
    (written,) = [p.name for p in (shard / "records").glob("*.json")]
    assert written.startswith("100.")
    with pytest.raises(DataError, match="manifest.json: not found"):
        load_manifest(shard)
    first = mtimes(shard)[f"records/{written[:-5]}.tokens.npy"]
    prepare_dataset(mitdb_copy, SAMPLES, cache)
    m = load_manifest(shard)
    assert [r["n_beats"] for r in m["records"]] == [2273, 1865]
    assert m["timing"]["records_up_to_date"] == 1 and mtimes(shard)[f"records/{written[:-5]}.tokens.npy"] == first


def test_killed_between_arrays_keeps_the_previous_manifest(mitdb_copy: Path, cache: Path) -> None:
    shard = prepare_dataset(mitdb_copy, SAMPLES, cache)
    before = load_manifest(shard)
    header = mitdb_copy / "100.hea"
    header.write_text(header.read_text() + "# edited\n")
    proc = run_killed(mitdb_copy, cache, "save_array", hit=1)  # new tokens written, nothing else
    assert proc.returncode == -9, proc.stderr
    assert load_manifest(shard) == before  # still whole: the new version went beside the old files
    assert len(WindowDataset(shard, 64, "beat", ["100", "101"])) > 0
    prepare_dataset(mitdb_copy, SAMPLES, cache)
    m = load_manifest(shard)
    assert m["timing"]["records_up_to_date"] == 1  # 101 kept, 100 redone
    assert not list((shard / "records").glob(".*"))  # no temp files left


def test_second_prepare_waits_for_the_lock(mitdb_copy: Path, cache: Path) -> None:
    shard = shard_path(mitdb_copy, SAMPLES, cache)
    shard.mkdir(parents=True)
    fd = os.open(shard / shards.LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    script = "import sys; from pathlib import Path; from trainer.data.prepare import prepare_dataset; " \
             "prepare_dataset(Path(sys.argv[1]), {'name': 'samples'}, Path(sys.argv[2]))"
    proc = subprocess.Popen([sys.executable, "-c", script, str(mitdb_copy), str(cache)], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # blocks until the prepare reports that it waits
        assert "waiting for another prepare" in line
        assert not (shard / "manifest.json").exists()
    finally:
        os.close(fd)
    assert proc.wait(timeout=120) == 0
    assert load_manifest(shard)["totals"]["beats"] == 2273 + 1865


def test_a_refused_prepare_removes_only_the_folder_it_created(mitdb_copy: Path, cache: Path) -> None:
    shard = shard_path(mitdb_copy, SAMPLES, cache)
    atr = {r: (mitdb_copy / f"{r}.atr").read_bytes() for r in ("100", "101")}
    for r in atr:
        (mitdb_copy / f"{r}.atr").unlink()
    with pytest.raises(DataError, match="2 of 2 records are bad"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)
    assert not shard.exists() and list(cache.iterdir()) == []  # no lock and empty records/ left behind
    (mitdb_copy / "101.atr").write_bytes(atr["101"])
    with pytest.raises(DataError, match="100.hea: no annotation file found"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)
    assert [p.name for p in (shard / "records").glob("101.*.json")]  # a good record written is kept for reuse
    (mitdb_copy / "100.atr").write_bytes(atr["100"])
    before = mtimes(prepare_dataset(mitdb_copy, SAMPLES, cache))
    (mitdb_copy / "100.atr").unlink()
    with pytest.raises(DataError, match="100.hea: no annotation file found"):
        prepare_dataset(mitdb_copy, SAMPLES, cache)
    assert mtimes(shard) == before  # a complete shard this prepare did not create stays whole


def test_a_prepare_waiting_for_a_refused_one_makes_the_folder_again(mitdb_copy: Path, cache: Path) -> None:
    """The refused prepare removes the lock file the waiting one has open: that one locks the new file."""
    shard = shard_path(mitdb_copy, SAMPLES, cache)
    script = "import sys; from pathlib import Path; from trainer.data.prepare import prepare_dataset; " \
             "prepare_dataset(Path(sys.argv[1]), {'name': 'samples'}, Path(sys.argv[2]))"
    with pytest.raises(DataError, match="refused"), shards.prepare_lock(shard):
        proc = subprocess.Popen([sys.executable, "-c", script, str(mitdb_copy), str(cache)], cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=subprocess.PIPE, text=True)
        assert "waiting for another prepare" in proc.stderr.readline()
        raise DataError("refused")
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert load_manifest(shard)["totals"]["beats"] == 2273 + 1865 and (shard / shards.LOCK).is_file()


def test_two_workers_write_the_same_shards(mitdb_copy: Path, tmp_path: Path) -> None:
    one = prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "a", workers=1)
    two = prepare_dataset(mitdb_copy, SAMPLES, tmp_path / "b", workers=2)
    assert files_of(one) == files_of(two)
    for file in files_of(one).values():
        for kind in shards.ARRAYS:
            assert np.array_equal(np.load(shards.array_path(one, file, kind)), np.load(shards.array_path(two, file, kind)))
    assert load_manifest(two)["timing"]["workers"] == 2


def test_whole_mitdb_with_samples(physionet: Path, tmp_path: Path) -> None:
    m = load_manifest(prepare_dataset(physionet / "mitdb", SAMPLES, tmp_path, workers=2))
    assert m["totals"]["records"] == 48 and m["totals"]["beats"] == 109494  # the README's count
    assert m["totals"]["tokens"] == 48 * 650000 and m["synthetic"] is False
    assert sum(m["totals"]["class_counts"]) + sum(r["unclassified_beats"] for r in m["records"]) == 109494
    assert m["timing"]["decode_s"] > 0 and m["timing"]["tokenize_s"] > 0


def test_annotation_only_databases_with_beats(physionet: Path, tmp_path: Path) -> None:
    beats = {"name": "beats"}
    nsr = load_manifest(prepare_dataset(physionet / "nsrdb-annotations", beats, tmp_path, workers=2))
    sdd = load_manifest(prepare_dataset(physionet / "sddb-annotations", beats, tmp_path, workers=2))
    assert nsr["totals"]["beats"] == 1729629 and sdd["totals"]["beats"] == 1889645  # README (.ari for sddb)
    assert nsr["totals"]["records"] == 18 and sdd["totals"]["records"] == 23


def test_digest_of_large_files_is_a_fingerprint(tmp_path: Path) -> None:
    from trainer.data.records import FULL_HASH_LIMIT, digest_files

    big = tmp_path / "big.dat"
    big.write_bytes(bytes(FULL_HASH_LIMIT + 1024))
    first = digest_files([big], "p")
    assert digest_files([big], "p") == first and digest_files([big], "q") != first
    with big.open("r+b") as fh:  # a change in the last 4 MiB
        fh.seek(FULL_HASH_LIMIT)
        fh.write(b"x")
    second = digest_files([big], "p")
    assert second != first
    os.utime(big, ns=(big.stat().st_atime_ns, big.stat().st_mtime_ns + 10**9))  # touched
    assert digest_files([big], "p") != second


def test_progress_line_on_a_terminal(tmp_path: Path) -> None:
    import pty

    master, slave = pty.openpty()
    script = "import sys; from pathlib import Path; from trainer.data.prepare import prepare_dataset; " \
             "prepare_dataset(None, {'name': 'beats'}, Path(sys.argv[1]), progress=True, " \
             "synthetic_params={'records': 3, 'seconds': 30})"
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, stderr=slave,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    os.close(slave)
    out = os.read(master, 65536).decode()
    os.close(master)
    assert proc.returncode == 0
    assert "prepare synthetic: 3/3 records" in out and "\r" in out


def test_other_rate_and_format_on_disk_without_records_file(tmp_path: Path) -> None:
    """A 500 Hz, format-16 record written with wfdb, found by its *.hea (no RECORDS file)."""
    import wfdb

    from trainer.data.labels import CODE_SYMBOLS
    from trainer.data.synthetic import generate_record

    rec = generate_record(1, seconds=40, seed=5, fs=500)
    folder = tmp_path / "db500"
    folder.mkdir()
    wfdb.wrsamp("r500", fs=500, units=["mV"], sig_name=["II"], d_signal=rec.signal[:, None].astype(np.int16),
                fmt=["16"], adc_gain=[200.0], baseline=[0], write_dir=str(folder))
    symbols = [CODE_SYMBOLS[int(c)] for c in rec.ann.code]
    aux = [""] * len(symbols)
    for i, text in zip(rec.ann.aux_index, rec.ann.aux_text, strict=True):
        aux[i] = text
    wfdb.wrann("r500", "atr", rec.ann.sample, symbol=symbols, aux_note=aux, write_dir=str(folder))
    shard = prepare_dataset(folder, {"name": "samples", "lead": "II"}, tmp_path / "c")
    r = load_manifest(shard)["records"][0]
    assert r["name"] == "r500" and r["native_fs"] == 500 and r["fs"] == 360 and r["lead"] == "II"
    assert abs(r["n_tokens"] - 40 * 360) <= 1
    beats = np.load(shards.array_path(shard, files_of(shard)["r500"], "beats"))
    is_beat = np.isin(np.array(symbols), ["N", "A", "V"])
    assert np.array_equal(beats, np.rint(rec.ann.sample[is_beat] * 360 / 500).astype(np.int64))


def test_prepare_imports_neither_torch_nor_wfdb() -> None:
    """Preparing needs no torch; wfdb (pandas) is loaded only where signals are read."""
    code = "import sys, trainer.data.prepare, trainer.data.splits; print('torch' in sys.modules, 'wfdb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split() == ["False", "False"]
