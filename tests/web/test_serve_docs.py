"""docs/serve.md's examples, run: each `cockpit serve` line on the demo study and store (on a free port, as a
shared machine may have the page's taken), the tunnel through `ssh -G` (which resolves it without connecting),
and the Open OnDemand app as the portal runs it: its ERB rendered, the basic template's steps (before.sh, the
script in the background, after.sh, connection.yml) in bash, and the view's link followed through a proxy at
`/rnode/<host>/<port>/` that strips the sub-path."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.foundation.test_docs_pages import blocks, commands
from tests.web import proxy as reverse_proxy

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "serve.md"
FIXTURE = REPO / "tests" / "fixtures" / "demo-store"
# what the portal gives an app's scripts (ood_core's basic template defines these; here the same in a few lines)
PORTAL_HELPERS = """
find_port () { python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
create_passwd () { tr -cd '[:alnum:]' < /dev/urandom 2> /dev/null | head -c"${1:-32}"; }
port_used () { python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)' \\
  "${1%:*}" "${1#*:}" 2> /dev/null; }
wait_until_port_used () { for ((i = 0; i < ${2:-30} * 2; i++)); do port_used "$1" && return 0; sleep 0.5; done; return 1; }
clean_up () { exit "${1:-0}"; }
"""
# the portal's steps for a basic app, in its order (ood_core batch_connect/template.rb)
PORTAL_JOB = """
export host port
host=127.0.0.1
source before.sh
./script.sh &
SCRIPT_PID=$!
source after.sh
(umask 077; printf 'host: %s\\nport: %s\\npassword: %s\\n' "$host" "$port" "$password" > connection.yml)
wait "$SCRIPT_PID"
"""


SAID = "Serving study.toml on 127.0.0.1:8765, a cockpit per browser tab (Ctrl+C stops); open"


def app_files() -> dict[str, str]:
    """The app's files as the page gives them: {path in the app directory: text}."""
    found = re.findall(r"<!-- ood: (\S+) -->\n```\w*\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    return dict(found)


def render(text: str, values: dict[str, str]) -> str:
    """ERB as the portal renders these files: each tag one of `values` (an unknown tag fails the test)."""
    def tag(match: re.Match[str]) -> str:
        code = match.group(2).strip()
        assert code in values, f"docs/serve.md: an ERB tag this test does not know: {match.group(0)}"
        return values[code] if match.group(1) == "=" else ""

    return re.sub(r"<%(=?)(.*?)%>", tag, text)


def start(argv: list[str], cwd: Path) -> tuple[subprocess.Popen[str], str, str]:
    """The running `cockpit serve` ARGV, the line it said first and the URL it printed."""
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = process.stdout.readline().strip()  # type: ignore[union-attr]
    return process, said, process.stdout.readline().strip()  # type: ignore[union-attr]


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0, process.stderr.read()  # type: ignore[union-attr]


def test_the_pages_cockpit_serve_lines_serve_the_demo_study_and_store(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "demo")
    stand_in = {"study.toml": str(tmp_path / "demo" / "study.toml"),
                "store.sqlite": str(tmp_path / "demo" / "local-demo" / "cockpit.sqlite")}
    lines = {c for _, body in blocks(PAGE.read_text(encoding="utf-8")) for c in commands(body)
             if c.startswith("cockpit serve ")}
    assert len(lines) >= 3 and f"```\n{SAID}\nhttp://127.0.0.1:8765/" in PAGE.read_text(encoding="utf-8")
    for line in sorted(lines):
        argv = [stand_in.get(a, a) for a in shlex.split(line)]
        argv = argv[:argv.index("--port")] + argv[argv.index("--port") + 2:] if "--port" in argv else argv
        process, said, url = start([sys.executable, "-m", "cockpit", *argv[1:], "--port", "0"], tmp_path)
        try:
            port = re.search(r":(\d+)/", url).group(1)  # type: ignore[union-attr]
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/[\w-]{40,}/", url), (line, url)
            assert said == SAID.replace("study.toml", argv[2]).replace("8765", port), line  # as the page shows it
            with urllib.request.urlopen(url, timeout=30) as answer:
                assert answer.status == 200 and b"textual.js" in answer.read(), line
        finally:
            stop(process)


def test_the_tunnel_forwards_the_port_the_page_serves_on() -> None:
    text = PAGE.read_text(encoding="utf-8")
    tunnels = [c for _, body in blocks(text) for c in commands(body) if c.startswith("ssh ")]
    assert tunnels == ["ssh -p 8822 -L 8765:127.0.0.1:8765 user@login.lxp.lu"]
    assert "cockpit serve study.toml --port 8765" in text and "`-L 8766:127.0.0.1:8766`" in text
    if shutil.which("ssh") is None:
        pytest.skip("no ssh client here (Debian's openssh-client)")
    argv = shlex.split(tunnels[0])
    done = subprocess.run([argv[0], "-G", "-F", os.devnull, *argv[1:]], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    resolved = set(done.stdout.splitlines())
    assert {"port 8822", "hostname login.lxp.lu", "user user", "localforward 8765 [127.0.0.1]:8765"} <= resolved
    assert "stricthostkeychecking no" not in resolved


def test_the_open_ondemand_app_runs_as_the_portal_runs_it(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    files = app_files()
    assert sorted(files) == ["form.yml", "submit.yml.erb", "template/after.sh.erb", "template/before.sh.erb",
                             "template/script.sh.erb", "view.html.erb"]
    form = yaml.safe_load(files["form.yml"])
    submit = yaml.safe_load(render(files["submit.yml.erb"], {}))
    assert submit["batch_connect"]["template"] == "basic" and "study" in form["form"] and "study" in form["attributes"]

    shutil.copytree(FIXTURE, tmp_path / "demo")
    study = str(tmp_path / "demo" / "study.toml")
    job = tmp_path / "job"
    job.mkdir()
    values = {'require "shellwords"': "", "Shellwords.escape(context.study)": shlex.quote(study)}
    for name in ("before.sh", "after.sh", "script.sh"):
        (job / name).write_text(render(files[f"template/{name}.erb"], values), encoding="utf-8")
    (job / "script.sh").chmod(0o700)
    (job / "job.sh").write_text(PORTAL_HELPERS + PORTAL_JOB, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    portal = subprocess.Popen(["bash", "job.sh"], cwd=job, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        connection = job / "connection.yml"
        deadline = time.monotonic() + 120
        while not connection.exists():
            assert portal.poll() is None, portal.communicate()
            assert time.monotonic() < deadline, "the app did not write connection.yml"
            time.sleep(0.2)
        time.sleep(0.2)  # printf has written it whole
        info = {k: str(v) for k, v in yaml.safe_load(connection.read_text(encoding="utf-8")).items()}
        assert len(info["password"]) == 32
        view = render(files["view.html.erb"], info)
        href = re.search(r'href="([^"]+)"', view).group(1)  # type: ignore[union-attr]
        assert href == f"/rnode/{info['host']}/{info['port']}/{info['password']}/"
        with reverse_proxy.running(f"/rnode/{info['host']}/{info['port']}") as proxy:
            proxy.backend = int(info["port"])
            with urllib.request.urlopen(f"http://127.0.0.1:{proxy.port}{href}", timeout=30) as answer:
                assert answer.status == 200 and b"textual.js" in answer.read()
            with urllib.request.urlopen(f"http://127.0.0.1:{proxy.port}{href}static/js/textual.js", timeout=30) as js:
                assert js.status == 200
    finally:
        os.killpg(portal.pid, signal.SIGTERM)  # the portal ends a session's job so: its process group
        portal.wait(timeout=60)
    assert "reachable from other machines; the token in the URL is the only guard" in portal.stderr.read()  # type: ignore[union-attr]
