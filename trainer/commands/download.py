"""`hlm-train download DB --out DIR`: a PhysioNet database fetched over plain HTTPS, every file checked.

PhysioNet serves a database version at `<index>/<db>/<version>/`, with `RECORDS` (the record names) and
`SHA256SUMS.txt` (every file's digest). Those two drive the download: every file SHA256SUMS.txt lists (or, with
`--records`, those of the named records and the database's ANNOTATORS) is fetched and checked against its
digest, with a progress bar on a terminal (a line every 10 s in a log). A second run resumes: a
file whose digest already matches is skipped, a partial `.part` file is continued with a Range request where
the server allows it (else fetched again). Files are written private (0600, folders 0700): ECGs are patient
data. Standard library only (urllib): a cluster's login node needs nothing installed for it.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import http.client
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from runcontract.contract import EXIT_BAD_INPUT, EXIT_USAGE
from trainer.config_flags import record_names

INDEX_URL = "https://physionet.org/files/"
DEFAULT_VERSION = "1.0.0"
SUMS_FILE = "SHA256SUMS.txt"
RECORDS_FILE = "RECORDS"
ANNOTATORS_FILE = "ANNOTATORS"  # the database's annotators in order: annotator auto tries them first
# what `prepare` reads of a database besides its records' files (trainer.data.records): a --records download
# fetches them too (RECORDS is rewritten to list the records here)
DATABASE_FILES = (RECORDS_FILE, ANNOTATORS_FILE)
PROGRESS_EVERY_S = 10.0  # a progress line this often when the output is not a terminal
EXIT_UNREACHABLE = 1  # no answer from the server, or no room on the disk: run it again to resume
CHUNK = 1 << 20
TIMEOUT_S = 60.0
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
_VERSION = re.compile(r"[0-9][0-9a-z.]*")
_SUM_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *]?(.+)")


class DownloadError(Exception):
    """One line for the user; ``code`` is the exit code (2 bad request, 3 bad data, 1 try again)."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Summary:
    """What one download did, file by file."""

    fetched: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)  # continued from a partial file (also in fetched)
    skipped: list[str] = field(default_factory=list)  # already there with the right digest
    bytes: int = 0  # bytes received over the network

    def line(self, db: str, out: Path) -> str:
        resumed = f", {len(self.resumed)} of them resumed" if self.resumed else ""
        return (f"{db}: fetched {len(self.fetched)} files ({_size(self.bytes)}){resumed}, "
                f"skipped {len(self.skipped)} already verified; "
                f"{len(self.fetched) + len(self.skipped)} files checked against {SUMS_FILE} in {out}")


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n} bytes"


def database_url(db: str, index_url: str = INDEX_URL) -> tuple[str, str]:
    """("mitdb 1.0.0", URL of its files) for `mitdb` or `mitdb/1.0.0`; DownloadError for anything else."""
    name, _, version = db.partition("/")
    version = version or DEFAULT_VERSION
    if not _NAME.fullmatch(name) or not _VERSION.fullmatch(version):
        raise DownloadError(f"database {db!r}: expected a PhysioNet name such as mitdb or mitdb/1.0.0", EXIT_USAGE)
    if not re.match(r"https?://", index_url):
        raise DownloadError(f"--index-url {index_url!r}: expected an http:// or https:// URL", EXIT_USAGE)
    return f"{name} {version}", f"{index_url.rstrip('/')}/{name}/{version}/"


def _open(url: str, start: int = 0) -> Any:  # an http.client.HTTPResponse
    """The server's answer for `url` (from byte `start` when > 0), or a DownloadError in one line."""
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT_S)  # noqa: S310 - http(s) only (database_url)
    except urllib.error.HTTPError as exc:
        if start and exc.code == 416:  # the part is already whole (or longer): fetch it again from the start
            return _open(url)
        raise DownloadError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"cannot reach {url}: {reason} (no network? run it again to resume)",
                            EXIT_UNREACHABLE) from None


def _text(url: str) -> str:
    with _open(url) as response:
        data: bytes = response.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DownloadError(f"{url}: expected a text file, got bytes that are not UTF-8") from None


def parse_sums(text: str, url: str) -> dict[str, str]:
    """{relative path: sha256} from a SHA256SUMS.txt; a path leaving the database folder is refused."""
    sums: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _SUM_LINE.fullmatch(line.strip())
        if m is None:
            raise DownloadError(f"{url} line {number}: expected '<sha256> <file>', got {line.strip()[:80]!r}")
        path = PurePosixPath(m.group(2))
        if path.is_absolute() or ".." in path.parts or "\\" in m.group(2):
            raise DownloadError(f"{url} line {number}: refusing the path {m.group(2)!r} (outside the database)")
        sums[str(path)] = m.group(1).lower()
    if not sums:
        raise DownloadError(f"{url}: no files listed")
    return sums


def select(sums: dict[str, str], records: list[str], wanted: list[str] | None) -> list[str]:
    """The files to fetch: all but SHA256SUMS.txt, or, for `wanted` records, each one's files (`100.*`) and the
    database-level files prepare reads (DATABASE_FILES; RECORDS itself is written for the records here)."""
    if wanted is None:
        return sorted(p for p in sums if p != SUMS_FILE)
    unknown = [r for r in wanted if r not in records]
    if unknown:
        raise DownloadError(f"--records: no record {', '.join(unknown)} in the database's {RECORDS_FILE} "
                            f"({len(records)} records, {', '.join(records[:3])}, ...)", EXIT_USAGE)
    files = sorted(p for p in sums for r in wanted if p.startswith(r + "."))
    missing = [r for r in wanted if not any(p.startswith(r + ".") for p in files)]
    if missing:
        raise DownloadError(f"{SUMS_FILE} lists no file of record {', '.join(missing)}")
    return [*(name for name in DATABASE_FILES if name in sums and name != RECORDS_FILE), *files]


def _private_dir(path: Path) -> None:
    """Create `path` and its missing parents 0700 (a folder that exists keeps its mode)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for p in reversed(missing):
        p.mkdir(mode=0o700)
        p.chmod(0o700)  # the umask may have taken bits away; 0700 is what is meant


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


class Progress:
    """How far a download is: a bar redrawn in place on a terminal, else a line every PROGRESS_EVERY_S (a
    batch job's log, a pipe), so that minutes of fetching are never minutes of silence."""

    WIDTH = 24

    def __init__(self, label: str, files: int, stream: TextIO | None = None, every_s: float | None = None) -> None:
        self.label, self.files, self.stream = label, files, stream or sys.stdout
        self.every_s = PROGRESS_EVERY_S if every_s is None else every_s
        self.terminal = self.stream.isatty()
        self.done = 0  # files verified (fetched or skipped)
        self.bytes = 0
        self.current = ""
        self._shown = time.monotonic()
        self._drawn = False

    def start(self, name: str) -> None:
        self.current = name
        self._show()

    def received(self, n: int) -> None:
        self.bytes += n
        self._show()

    def finished(self) -> None:
        self.done += 1
        self._show()

    def close(self) -> None:
        if self.terminal and self._drawn:
            self.stream.write("\n")
            self.stream.flush()

    def text(self) -> str:
        return f"{self.label}: {self.done} of {self.files} files, {_size(self.bytes)} received; {self.current}"

    def _show(self) -> None:
        now = time.monotonic()
        last = self.terminal and self.done == self.files  # the full bar (a log gets the summary line next)
        if now - self._shown < (0.2 if self.terminal else self.every_s) and not last:
            return
        self._shown = now
        if self.terminal:
            filled = self.WIDTH * self.done // max(self.files, 1)
            self.stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.text()}\x1b[K")
            self._drawn = True
        else:
            self.stream.write(self.text() + "\n")
        self.stream.flush()


def _chunks(response: Any, url: str) -> Iterator[bytes]:
    """The body in pieces; a connection lost midway (an error, or fewer bytes than Content-Length said: urllib
    does not raise for that) is a DownloadError, and what arrived is kept to resume."""
    lost = ""
    while True:
        try:
            chunk: bytes = response.read(CHUNK)
        except (OSError, http.client.HTTPException) as exc:
            lost = str(exc) or type(exc).__name__
            break
        if not chunk:
            if response.length:  # bytes still owed
                lost = f"{response.length} bytes short"
            break
        yield chunk
    if lost:
        raise DownloadError(f"connection lost while fetching {url}: {lost} (run it again to resume)",
                            EXIT_UNREACHABLE)


def _fetch(url: str, part: Path, summary: Summary, progress: Progress | None = None) -> bool:
    """Fill `part` with the file at `url`, continuing what it holds; True when the server continued it."""
    start = part.stat().st_size if part.exists() else 0
    with _open(url, start) as response:
        continued = start > 0 and response.status == 206
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if continued else os.O_TRUNC), 0o600)
        with os.fdopen(fd, "wb") as f:
            for chunk in _chunks(response, url):
                f.write(chunk)
                summary.bytes += len(chunk)
                if progress is not None:
                    progress.received(len(chunk))
    part.chmod(0o600)
    return continued


def fetch_file(base: str, name: str, expected: str, out: Path, summary: Summary,
               progress: Progress | None = None) -> None:
    """One file: skipped when its digest matches, else fetched (continued from a partial one) and checked."""
    if progress is not None:
        progress.start(name)
    _fetch_checked(base, name, expected, out, summary, progress)
    if progress is not None:
        progress.finished()


def _fetch_checked(base: str, name: str, expected: str, out: Path, summary: Summary, progress: Progress | None) -> None:
    dest = out / name
    if dest.is_file() and _digest(dest) == expected:
        summary.skipped.append(name)
        return
    _private_dir(dest.parent)
    part = dest.with_name(dest.name + ".part")
    if dest.is_file() and not part.exists():
        dest.replace(part)  # a truncated file from an interrupted copy: continue it
    url = base + name
    continued = _fetch(url, part, summary, progress)
    found = _digest(part)
    if found != expected and continued:  # the kept start was not this file's: fetch it whole once
        part.unlink()
        continued = False
        _fetch(url, part, summary, progress)
        found = _digest(part)
    if found != expected:
        part.unlink()
        raise DownloadError(f"{name}: checksum mismatch (SHA256SUMS.txt says {expected[:12]}..., "
                            f"the file fetched from {url} is {found[:12]}...); nothing kept of it")
    part.replace(dest)
    summary.fetched.append(name)
    if continued:
        summary.resumed.append(name)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    path.chmod(0o600)


def download(db: str, out: Path, index_url: str = INDEX_URL, records: list[str] | None = None,
             stream: TextIO | None = None) -> Summary:
    """Fetch database `db` (`name` or `name/version`) into `out`, its progress shown on ``stream`` (default
    stdout); DownloadError on the first problem."""
    label, base = database_url(db, index_url)
    if out.exists() and not out.is_dir():
        raise DownloadError(f"--out {out}: not a directory", EXIT_USAGE)
    sums = parse_sums(_text(base + SUMS_FILE), base + SUMS_FILE)
    listed = _lines(_text(base + RECORDS_FILE)) if records else []  # the whole database: RECORDS is one of its files
    files = select(sums, listed, records)
    try:
        _private_dir(out)
        summary = Summary()
        progress = Progress(label, len(files), stream)
        try:
            for name in files:
                fetch_file(base, name, sums[name], out, summary, progress)
        finally:
            progress.close()
        # the digests of the files here (fetched now or before), so that `sha256sum -c SHA256SUMS.txt` checks them
        here = [p for p in sums if p in files or (p not in (SUMS_FILE, RECORDS_FILE) and (out / p).is_file())]
        _write_private(out / SUMS_FILE, "".join(f"{sums[p]}  {p}\n" for p in sorted(here)))
        if records is not None:  # the records here (and those fetched before), which `prepare --data DIR` reads
            here = [r for r in _lines(_read(out / RECORDS_FILE)) if (out / f"{r}.hea").exists()]
            _write_private(out / RECORDS_FILE, "".join(f"{r}\n" for r in listed if r in here or r in records))
    except OSError as exc:  # the network's errors are DownloadErrors by now: this is the disk
        code = EXIT_UNREACHABLE if exc.errno in (errno.ENOSPC, errno.EDQUOT) else EXIT_USAGE
        raise DownloadError(f"--out {out}: cannot write {exc.filename or out}: {(exc.strerror or str(exc)).lower()}",
                            code) from None
    return summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `hlm-train download`."""
    parser.add_argument("db", metavar="DB", help="PhysioNet database: mitdb, svdb, nsrdb, ... or NAME/VERSION "
                        f"(default version {DEFAULT_VERSION})")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the database's files")
    parser.add_argument("--index-url", default=INDEX_URL, metavar="URL",
                        help=f"where databases lie as <URL>/<db>/<version>/ (a mirror, a site proxy; "
                             f"default {INDEX_URL})")
    parser.add_argument("--records", nargs="+", metavar="RECORD",
                        help="only these records, separated by commas or spaces (default: the whole database)")


def run(args: argparse.Namespace) -> int:
    """`hlm-train download`: 0 done, 2 bad request, 3 a file missing or not matching its digest,
    1 the server could not be reached (run it again: verified files are kept, partial ones continued)."""
    try:
        records = record_names(args.records) if args.records else None
        label, base = database_url(args.db, args.index_url)
        print(f"{label}: from {base}", flush=True)
        summary = download(args.db, args.out, args.index_url, records)
    except ValueError as exc:
        print(f"hlm-train: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except DownloadError as exc:
        print(f"hlm-train: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("hlm-train: interrupted (run it again to resume)", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(summary.line(label, args.out))
    return 0
