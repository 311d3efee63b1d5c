"""`cockpit serve` as a command: what it hands to `cockpit open`, and its refusals, each one line on stderr with
exit code 2 and nothing left listening (a taken port, a bad port or public URL, a study that cannot be read,
a store without the study asked for); an address other machines reach is said in a warning line."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cockpit.cli import build_parser
from cockpit.cli import main as cli
from cockpit.commands.serve import TOKEN_VARIABLE, cockpit_command
from cockpit.web.server import NOT_A_WEBSOCKET, page_url, public_path
from tests.control.test_browse_demo_store import unprivileged_user

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "demo-store"
STORE = FIXTURE / "local-demo" / "cockpit.sqlite"


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `cockpit serve ARGV` refuses with (exit code 2, nothing on stdout)."""
    code = cli(["serve", *argv])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), (code, out, err)
    assert err.count("\n") == 1 and err.startswith("cockpit: "), err
    return err.removeprefix("cockpit: ").strip()


def test_each_browser_tab_runs_cockpit_open_with_the_same_arguments(tmp_path: Path) -> None:
    other = tmp_path / "other study.toml"  # a space: quoted for the shell
    args = build_parser().parse_args(["serve", str(STORE), "--study", "local-demo", "--poll", "0.5",
                                      "--compare", str(other), "--skip-preflight", "--port", "0"])
    argv = shlex.split(cockpit_command(args))
    assert argv[:4] == [sys.executable, "-m", "cockpit", "open"]
    assert argv[4:] == [str(STORE.resolve()), "--study", "local-demo", "--skip-preflight", "--compare", str(other),
                        "--poll", "0.5"]
    opened = build_parser().parse_args(argv[3:])
    assert {k: v for k, v in vars(opened).items() if k != "command"} == \
        {k: (str(STORE.resolve()) if k == "target" else v) for k, v in vars(args).items()
         if k not in ("command", "host", "port", "public_url")}
    plain = shlex.split(cockpit_command(build_parser().parse_args(["serve", "study.toml"])))
    assert plain[4:] == [str(Path("study.toml").resolve())]  # the defaults are left to `cockpit open`


def test_a_taken_port_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        said = refusal([str(STORE), "--port", str(port)], capsys)
    assert said == f"--port {port}: 127.0.0.1:{port} is already in use (another `cockpit serve`?); choose another port"


@pytest.mark.parametrize("argv,expected", [
    (["--port", "70000"], "--port must be between 0 and 65535, got 70000"),
    (["--port", "-1"], "--port must be between 0 and 65535, got -1"),
    (["--poll", "0"], "--poll must be positive, got 0.0"),
    (["--public-url", "ondemand.example.org/rnode/n1/8765"],
     "--public-url: expected http(s)://HOST/PATH or /PATH (no ?query or #fragment), got "
     "'ondemand.example.org/rnode/n1/8765'"),
    (["--public-url", "https://ondemand.example.org/rnode?x=1"],
     "--public-url: expected http(s)://HOST/PATH or /PATH (no ?query or #fragment), got "
     "'https://ondemand.example.org/rnode?x=1'"),
    (["--study", "nosuch"], "{store}: no study 'nosuch'; it holds local-demo"),
    (["--host", "nosuch.invalid"], "--host nosuch.invalid: no such host ("),
    (["--host", "192.0.2.1"], "--host 192.0.2.1: not an address of this machine (Cannot assign requested address); "
                              "give one of its own"),
])
def test_bad_arguments_are_refused_in_one_line(argv: list[str], expected: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    said = refusal([str(STORE), *argv], capsys)
    assert said.startswith(expected.format(store=STORE)), said


def test_a_study_that_cannot_be_read_is_refused_before_anything_listens(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[study\nname = 'x'\n", encoding="utf-8")
    assert refusal([str(broken)], capsys).startswith(f"{broken}: not valid TOML: ")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text((FIXTURE / "study.toml").read_text(encoding="utf-8").replace("[train]", "[train]\nstepz = 3"),
                       encoding="utf-8")
    assert refusal([str(unknown)], capsys).startswith("unknown.toml: [train].stepz is not a known key")
    assert refusal([str(tmp_path / "missing.toml")], capsys) == \
        f"{tmp_path / 'missing.toml'}: no such file (expected a study file (.toml) or a cockpit store (.sqlite))"
    assert refusal([str(tmp_path)], capsys).startswith(f"{tmp_path}: a directory")
    not_a_store = tmp_path / "notes.sqlite"
    not_a_store.write_text("not a database\n", encoding="utf-8")
    assert refusal([str(not_a_store)], capsys).startswith(str(not_a_store))
    assert refusal([str(STORE), "--compare", str(tmp_path / "nosuch.toml")], capsys).startswith(
        f"{tmp_path / 'nosuch.toml'}: no such file")


def test_a_token_from_the_environment_must_be_long_and_url_safe(capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_VARIABLE, "short")
    assert refusal([str(STORE)], capsys) == (f"{TOKEN_VARIABLE}: expected at least 16 of A-Z a-z 0-9 _ -, got 5 "
                                             "characters of another form")
    monkeypatch.setenv(TOKEN_VARIABLE, "a/b" * 10)
    assert refusal([str(STORE)], capsys).startswith(f"{TOKEN_VARIABLE}: expected")
    monkeypatch.setenv(TOKEN_VARIABLE, "")  # set but empty: refused, never a silent fresh token
    assert refusal([str(STORE)], capsys) == (f"{TOKEN_VARIABLE} is set but empty; give at least 16 of A-Z a-z 0-9 _ -, "
                                             "or unset it for a fresh token")


def test_an_address_other_machines_reach_is_said_and_the_token_from_the_environment_used(tmp_path: Path) -> None:
    """As Open OnDemand starts it: --host 0.0.0.0, the token in COCKPIT_SERVE_TOKEN, a path-only public URL."""
    shutil.copytree(FIXTURE, tmp_path / "demo")
    token = "T0ken_from-the-environment"
    env = {**os.environ, TOKEN_VARIABLE: token}
    process = subprocess.Popen([sys.executable, "-m", "cockpit", "serve", str(tmp_path / "demo" / "study.toml"),
                                "--host", "0.0.0.0", "--port", "0", "--public-url", "/rnode/node01/8765/"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        warning = process.stderr.readline()  # type: ignore[union-attr]
        said, url = process.stdout.readline(), process.stdout.readline().strip()  # type: ignore[union-attr]
        port = int(re.search(r" on 0\.0\.0\.0:(\d+), ", said).group(1))  # type: ignore[union-attr]
        assert warning == (f"cockpit: --host 0.0.0.0: listening on 0.0.0.0:{port}, reachable from other machines; "
                           "the token in the URL is the only guard\n")
        assert url == f"/rnode/node01/8765/{token}/"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/{token}/", timeout=30) as answer:
            assert answer.status == 200
        # the portal's other link to the same app passes its sub-path on (docs/serve.md: both open the cockpit)
        for prefix in ("/rnode/node01/8765", "/node/node01/8765"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{prefix}/{token}/", timeout=30) as answer:
                assert answer.status == 200, prefix
        # the websocket's address asked as a page: 400 and one line, no traceback on the server's stderr
        with pytest.raises(urllib.error.HTTPError) as plain:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/{token}/ws", timeout=30)
        assert plain.value.code == 400
        assert plain.value.read().decode() == NOT_A_WEBSOCKET
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    assert process.stderr.read() == ""  # type: ignore[union-attr]  # nothing but the warning: no access log


@pytest.mark.skipif(os.geteuid() != 0, reason="not root: no other user to be refused a file")
def test_a_study_or_store_the_user_cannot_read_is_refused_in_one_line() -> None:
    """Files of another user (0600, root's): the study file and the store, each refused in one line, exit 2."""
    user = unprivileged_user()
    base = Path(tempfile.mkdtemp(prefix="hlm-serve-"))  # under /tmp: reachable by the user
    try:
        base.chmod(0o755)
        shutil.copytree(FIXTURE, base / "demo")
        (base / "demo").chmod(0o755)
        (base / "demo" / "local-demo").chmod(0o755)
        study, store = base / "demo" / "study.toml", base / "demo" / "local-demo" / "cockpit.sqlite"
        for path in (study, store):
            path.chmod(0o600)
        env = {"PATH": os.environ["PATH"], "HOME": str(base), "PYTHONPATH": str(REPO), "LANG": "C.UTF-8"}
        for path in (study, store):
            run = subprocess.run(["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
                                  sys.executable, "-m", "cockpit", "serve", str(path), "--port", "0"],
                                 cwd=base, capture_output=True, text=True, timeout=120)
            assert (run.returncode, run.stdout, run.stderr.count("\n")) == (2, "", 1), run.stderr
            assert run.stderr.startswith(f"cockpit: {path}") and "Permission denied" in run.stderr, run.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_printed_url_names_the_address_or_the_public_url() -> None:
    token = "t" * 43
    assert page_url(None, "127.0.0.1", 8765, token) == f"http://127.0.0.1:8765/{token}/"
    assert page_url(None, "::1", 8765, token) == f"http://[::1]:8765/{token}/"
    assert page_url("https://ondemand.example.org/rnode/n1/8765/", "0.0.0.0", 8765, token) == \
        f"https://ondemand.example.org/rnode/n1/8765/{token}/"
    assert public_path("https://ondemand.example.org/rnode/n1/8765/") == "/rnode/n1/8765"
    assert public_path("/node/n1/8765") == "/node/n1/8765" and public_path(None) == ""
