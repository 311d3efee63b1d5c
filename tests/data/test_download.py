"""`hlm-train download` against a real HTTP server on 127.0.0.1 serving a copy of three real svdb records (with
a RECORDS and a SHA256SUMS.txt as PhysioNet lays them out): a full fetch, a resumed one after a truncated file
(with and without Range support), a checksum mismatch, a 404, no server at all, a record subset."""

from __future__ import annotations

import hashlib
import http.server
import os
import pty
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.data.conftest import copy_records
from trainer.commands import download
from trainer.commands.cli import main
from trainer.commands.download import Progress
from trainer.data.records import resolve_annotator

RECORDS = ["800", "801", "802"]


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """http.server's file handler with `Range: bytes=N-` honoured (206), as PhysioNet's server does; the file
    named by the server's `cut` is sent half and the connection closed."""

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def send_head(self):  # type: ignore[no-untyped-def]
        wanted = self.headers.get("Range", "")
        path = Path(self.translate_path(self.path))
        if path.name == getattr(self.server, "cut", None) and not wanted:  # the connection drops halfway
            data = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.close_connection = True
            return None
        if not self.server.ranges or not wanted.startswith("bytes=") or not path.is_file():  # type: ignore[attr-defined]
            return super().send_head()
        start = int(wanted.removeprefix("bytes=").rstrip("-"))
        size = path.stat().st_size
        if start >= size:
            self.send_error(416)
            return None
        f = path.open("rb")
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.send_header("Content-Length", str(size - start))
        self.end_headers()
        return f


class Mirror:
    """A served folder `root/<db>/1.0.0/` (a copy of real records laid out as PhysioNet serves them)."""

    def __init__(self, root: Path, ranges: bool, db: str = "svdb") -> None:
        self.root = root
        self.db = root / db / "1.0.0"
        handler = partial(RangeHandler, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.ranges = ranges  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def write_sums(folder: Path) -> dict[str, str]:
    sums = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.name != "SHA256SUMS.txt"}
    (folder / "SHA256SUMS.txt").write_text("".join(f"{h} {name}\n" for name, h in sums.items()))
    return sums


@pytest.fixture(params=[True, False], ids=["range", "no-range"])
def mirror(request: pytest.FixtureRequest, physionet: Path, tmp_path: Path) -> Iterator[Mirror]:
    m = Mirror(tmp_path / "mirror", ranges=request.param)
    copy_records(physionet / "svdb", m.db, RECORDS, ("hea", "dat", "atr"))
    sums = write_sums(m.db)
    published = dict(reversed(line.split()) for line in (physionet / "svdb" / "SHA256SUMS.txt").read_text().splitlines())
    assert all(published[name] == digest for name, digest in sums.items() if name != "RECORDS")  # real files
    yield m
    m.close()


def fetch(mirror: Mirror, out: Path, *extra: str) -> int:
    return main(["download", "svdb", "--out", str(out), "--index-url", mirror.url, *extra])


def test_full_fetch_is_byte_identical_private_and_a_second_run_skips_everything(mirror, tmp_path, capsys):
    out = tmp_path / "data" / "svdb"
    assert fetch(mirror, out) == 0
    served = sorted(p.name for p in mirror.db.iterdir())
    assert sorted(p.name for p in out.iterdir()) == served
    for name in served:
        if name != "SHA256SUMS.txt":
            assert (out / name).read_bytes() == (mirror.db / name).read_bytes(), name
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE(out.stat().st_mode) == 0o700 and stat.S_IMODE(out.parent.stat().st_mode) == 0o700
    total = sum((mirror.db / n).stat().st_size for n in served if n != "SHA256SUMS.txt")
    printed = capsys.readouterr().out
    assert f"svdb 1.0.0: fetched 10 files ({total / 1e6:.1f} MB), skipped 0 already verified" in printed

    assert fetch(mirror, out) == 0
    assert "fetched 0 files (0 bytes), skipped 10 already verified" in capsys.readouterr().out
    sums = (out / "SHA256SUMS.txt").read_text().splitlines()  # what `sha256sum -c` checks in the folder
    assert sorted(line.split("  ")[1] for line in sums) == [n for n in served if n != "SHA256SUMS.txt"]


def test_a_truncated_file_is_continued_where_the_server_allows_it_else_fetched_again(mirror, tmp_path, capsys):
    out = tmp_path / "svdb"
    assert fetch(mirror, out) == 0
    capsys.readouterr()
    whole = (mirror.db / "801.dat").read_bytes()
    (out / "801.dat").write_bytes(whole[:1000])  # an interrupted copy
    assert fetch(mirror, out) == 0
    printed = capsys.readouterr().out
    assert (out / "801.dat").read_bytes() == whole and not (out / "801.dat.part").exists()
    if mirror.server.ranges:  # type: ignore[attr-defined]
        assert f"fetched 1 files ({(len(whole) - 1000) / 1e6:.1f} MB), 1 of them resumed, skipped 9" in printed
    else:
        assert f"fetched 1 files ({len(whole) / 1e6:.1f} MB), skipped 9" in printed


def test_a_connection_lost_midway_keeps_what_arrived_and_the_next_run_continues_it(mirror, tmp_path, capsys):
    out = tmp_path / "svdb"
    mirror.server.cut = "800.dat"  # type: ignore[attr-defined]
    assert fetch(mirror, out, "--records", "800") == 1
    err = capsys.readouterr().err
    assert err.startswith(f"hlm-train: connection lost while fetching {mirror.url}svdb/1.0.0/800.dat")
    assert "run it again to resume" in err and err.count("\n") == 1
    whole = (mirror.db / "800.dat").read_bytes()
    assert (out / "800.dat.part").read_bytes() == whole[:len(whole) // 2]
    mirror.server.cut = None  # type: ignore[attr-defined]
    assert fetch(mirror, out, "--records", "800") == 0
    assert (out / "800.dat").read_bytes() == whole and not (out / "800.dat.part").exists()
    printed = capsys.readouterr().out
    if mirror.server.ranges:  # type: ignore[attr-defined]
        assert f"({(len(whole) - len(whole) // 2) / 1e6:.1f} MB), 1 of them resumed" in printed
    else:
        assert f"({len(whole) / 1e6:.1f} MB), skipped" in printed


def test_a_partial_file_that_is_not_the_start_of_the_real_one_is_fetched_whole(mirror, tmp_path, capsys):
    out = tmp_path / "svdb"
    out.mkdir()
    (out / "800.dat.part").write_bytes(b"\x00" * 5000)
    assert fetch(mirror, out, "--records", "800") == 0
    assert (out / "800.dat").read_bytes() == (mirror.db / "800.dat").read_bytes()
    assert "fetched 3 files" in capsys.readouterr().out


def test_checksum_mismatch_names_the_file_and_keeps_nothing_of_it(mirror, tmp_path, capsys):
    data = bytearray((mirror.db / "801.dat").read_bytes())
    data[100] ^= 0xFF
    (mirror.db / "801.dat").write_bytes(bytes(data))  # the server now serves a damaged file
    out = tmp_path / "svdb"
    assert fetch(mirror, out) == 3
    err = capsys.readouterr().err
    assert err.startswith("hlm-train: 801.dat: checksum mismatch") and err.count("\n") == 1
    assert not (out / "801.dat").exists() and not (out / "801.dat.part").exists()


def test_404_of_a_database_and_of_a_listed_file(mirror, tmp_path, capsys):
    assert main(["download", "nosuchdb", "--out", str(tmp_path / "x"), "--index-url", mirror.url]) == 3
    err = capsys.readouterr().err
    assert err == f"hlm-train: {mirror.url}nosuchdb/1.0.0/SHA256SUMS.txt: HTTP 404 File not found\n"
    assert not (tmp_path / "x").exists()
    (mirror.db / "802.atr").unlink()  # listed in SHA256SUMS.txt, gone from the server
    assert fetch(mirror, tmp_path / "svdb") == 3
    assert "svdb/1.0.0/802.atr: HTTP 404" in capsys.readouterr().err


def test_no_server_is_exit_1_in_one_line(tmp_path, capsys):
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler) as closed:
        port = closed.server_address[1]  # a port nothing listens on once closed
    code = main(["download", "svdb", "--out", str(tmp_path / "svdb"), "--index-url", f"http://127.0.0.1:{port}/"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith(f"hlm-train: cannot reach http://127.0.0.1:{port}/svdb/1.0.0/")
    assert "run it again to resume" in err and err.count("\n") == 1


def test_records_subset_fetches_their_files_and_lists_them(mirror, tmp_path, capsys):
    out = tmp_path / "svdb"
    assert fetch(mirror, out, "--records", "800,802") == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "800.atr", "800.dat", "800.hea", "802.atr", "802.dat", "802.hea", "RECORDS", "SHA256SUMS.txt"]
    assert (out / "RECORDS").read_text() == "800\n802\n"
    assert fetch(mirror, out, "--records", "801") == 0  # one more: the folder's RECORDS lists all three
    assert (out / "RECORDS").read_text() == "800\n801\n802\n"
    checked = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS.txt"], cwd=out, capture_output=True, text=True)
    assert checked.returncode == 0 and len((out / "SHA256SUMS.txt").read_text().splitlines()) == 9, checked.stdout
    assert main(["download", "svdb", "--out", str(out), "--index-url", mirror.url, "--records", "999"]) == 2
    assert "no record 999 in the database's RECORDS" in capsys.readouterr().err


def test_bad_requests_are_refused_before_anything_is_fetched(mirror, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert fetch(mirror, tmp_path / "file") == 2
    assert capsys.readouterr().err == f"hlm-train: --out {tmp_path / 'file'}: not a directory\n"
    assert main(["download", "../etc", "--out", str(tmp_path / "x"), "--index-url", mirror.url]) == 2
    assert main(["download", "svdb", "--out", str(tmp_path / "x"), "--index-url", "file:///etc/"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["hlm-train: database '../etc': expected a PhysioNet name such as mitdb or mitdb/1.0.0",
                   "hlm-train: --index-url 'file:///etc/': expected an http:// or https:// URL"]


def test_a_path_leaving_the_database_folder_is_refused(mirror, tmp_path, capsys):
    with (mirror.db / "SHA256SUMS.txt").open("a") as f:
        f.write(f"{'0' * 64} ../../outside\n")
    assert fetch(mirror, tmp_path / "svdb") == 3
    assert "refusing the path '../../outside'" in capsys.readouterr().err
    assert not (tmp_path / "outside").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_an_unwritable_out_is_one_line(mirror, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert fetch(mirror, locked / "svdb") == 2
    assert "permission denied" in capsys.readouterr().err


def test_an_out_that_cannot_be_made_is_one_line(mirror, capsys):
    assert fetch(mirror, Path("/proc/hlm-download")) == 2
    err = capsys.readouterr().err
    assert err.startswith("hlm-train: --out /proc/hlm-download: cannot write /proc/hlm-download: ")
    assert err.count("\n") == 1


@pytest.fixture
def sddb(physionet: Path, tmp_path: Path) -> Iterator[Mirror]:
    """Two real sddb records whose complete annotations are .ari beside a partial .atr, with the database's
    ANNOTATORS (ari first) and RECORDS, served as PhysioNet lays them out."""
    m = Mirror(tmp_path / "mirror", ranges=True, db="sddb")
    source = physionet / "sddb-annotations"
    copy_records(source, m.db, ["30", "31"], ("hea", "ari", "atr"))
    for name in ("ANNOTATORS", "RECORDS"):
        (m.db / name).write_bytes((source / name).read_bytes())
    write_sums(m.db)
    yield m
    m.close()


def test_a_records_download_brings_the_databases_annotators_file(sddb, tmp_path, capsys):
    out = tmp_path / "sddb"
    assert main(["download", "sddb", "--out", str(out), "--index-url", sddb.url, "--records", "30"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["30.ari", "30.atr", "30.hea", "ANNOTATORS", "RECORDS",
                                                     "SHA256SUMS.txt"]
    assert (out / "ANNOTATORS").read_bytes() == (sddb.db / "ANNOTATORS").read_bytes()
    assert resolve_annotator(out, "30", "auto").name == "30.ari"  # without ANNOTATORS: the partial .atr
    assert "fetched 4 files" in capsys.readouterr().out
    checked = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS.txt"], cwd=out, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


def test_progress_is_a_line_every_few_seconds_in_a_log(mirror, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(download, "PROGRESS_EVERY_S", 0.0)  # every update: the test cannot wait 10 s
    assert fetch(mirror, tmp_path / "svdb", "--records", "800") == 0
    lines = capsys.readouterr().out.splitlines()
    progress = [line for line in lines if " of 3 files, " in line]
    assert progress[0] == "svdb 1.0.0: 0 of 3 files, 0 bytes received; 800.atr"
    whole = sum((mirror.db / f"800.{ext}").stat().st_size for ext in ("atr", "dat", "hea"))
    assert progress[-1] == f"svdb 1.0.0: 3 of 3 files, {whole / 1e6:.1f} MB received; 800.hea"
    assert "\r" not in "".join(lines)


def test_progress_is_a_bar_redrawn_in_place_on_a_terminal(mirror, tmp_path):
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "trainer", "download", "svdb", "--out", str(tmp_path / "svdb"),
                             "--index-url", mirror.url], stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.wait() == 0, proc.stderr.read() if proc.stderr else ""
    text = shown.decode()
    assert "\r[" + "#" * Progress.WIDTH + "] svdb 1.0.0: 10 of 10 files, " in text
    assert "fetched 10 files" in text.splitlines()[-1]
