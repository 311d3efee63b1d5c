"""`cockpit serve` on the store `cockpit demo` wrote (tests/fixtures/demo-store), opened in Debian's Chromium
as a user opens it: through a reverse proxy that serves it at an Open OnDemand style sub-path and strips it
(tests/web/proxy.py), with the URL the command printed. The page loads, the cockpit draws itself in the
browser's terminal, its scaling table holds every configuration with the numbers the report computes, a key
switches views, and only URLs carrying the token are answered.

xterm.js draws the terminal on a canvas, so the text is read from the terminal's own buffer: a script added
before the page's own keeps the Terminal that textual.js creates (`window.cockpitTerminal`)."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cockpit.report.source import load_input
from cockpit.report.tables import scaling
from cockpit.tui import format as fmt
from tests.chromium import browser, needs_chromium  # noqa: F401 - browser is a fixture
from tests.web import proxy as reverse_proxy

pytestmark = needs_chromium
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "demo-store"
SUB_PATH = "/rnode/node01/8765"  # as Open OnDemand serves an interactive app
KEEP_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  get() { return undefined; },
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true, enumerable: true});
    if (value && value.buffer && value.options) window.cockpitTerminal = value;
  },
});
"""
SCREEN = """() => {
  const t = window.cockpitTerminal;
  if (!t) return [];
  const lines = [];
  for (let i = 0; i < t.rows; i++) lines.push(t.buffer.active.getLine(i).translateToString(true));
  return lines;
}"""
# the scaling table's columns, and each one's number from a report row as the cockpit formats it
SHOWN = {"T s": lambda r: fmt.seconds(r["train_time_s"]), "work": lambda r: fmt.ratio(r["work_ratio"]),
         "T/work s": lambda r: fmt.seconds(r["t_same_work_s"]), "speedup": lambda r: fmt.ratio(r["speedup"]),
         "eff": lambda r: fmt.percent(r["efficiency"]), "overhead s": lambda r: fmt.seconds(r["overhead_s"]),
         "tok/s avg": lambda r: fmt.rate(r["tokens_per_s"])}


@dataclass
class Served:
    store: Path
    url: str  # the URL the command printed: through the proxy
    direct: str  # http://127.0.0.1:PORT, the server itself
    token: str
    proxy: reverse_proxy.Proxy
    process: subprocess.Popen[str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("demo")
    shutil.copytree(FIXTURE / "local-demo", folder / "local-demo")
    store = folder / "local-demo" / "cockpit.sqlite"
    with reverse_proxy.running(SUB_PATH) as proxy:
        public = f"http://127.0.0.1:{proxy.port}{SUB_PATH}"
        process = subprocess.Popen([sys.executable, "-m", "cockpit", "serve", str(store), "--port", "0",
                                    "--public-url", public], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        try:
            said, url = process.stdout.readline(), process.stdout.readline().strip()  # type: ignore[union-attr]
            listening = re.search(r" on (127\.0\.0\.1):(\d+), ", said)
            assert listening and url.startswith(public + "/"), (said, url, process.stderr.read())  # type: ignore[union-attr]
            proxy.backend = int(listening.group(2))
            token = url.removeprefix(public + "/").rstrip("/")
            yield Served(store, url, f"http://127.0.0.1:{proxy.backend}", token, proxy, process)
        finally:
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=60)
    assert code == 0, process.stderr.read()  # type: ignore[union-attr]


def screen(page) -> list[str]:  # noqa: ANN001 - a Playwright page
    return page.evaluate(SCREEN)


def wait_for_screen(page, holds: Callable[[list[str]], bool], what: str, timeout_s: float = 60) -> list[str]:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not holds(lines := screen(page)):
        assert time.monotonic() < deadline, f"the served cockpit did not show {what}:\n" + "\n".join(lines)
        page.wait_for_timeout(100)
    return lines


def table(lines: list[str]) -> list[dict[str, str]]:
    """The scaling table as the screen shows it: per row, {column header: cell}, cut at the headers' starts."""
    head = next(i for i, line in enumerate(lines) if "speedup" in line and "T/work s" in line)
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[head])]
    names = [m.group() for m in re.finditer(r"\S+(?: \S+)*", lines[head])]
    rows = []
    for line in lines[head + 1:]:
        if not re.search(r"\d+×\d+", line):
            break
        rows.append({name: line[a:b].strip() for name, a, b in zip(names, starts, [*starts[1:], None], strict=True)})
    return rows


def cockpits(store: Path) -> list[list[str]]:
    """The argv of every `cockpit open STORE` running on this machine (the served tabs' cockpits)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0")[:-1]]
        except OSError:  # gone meanwhile, or not a process
            continue
        if argv[1:5] == ["-m", "cockpit", "open", str(store)]:
            found.append(argv)
    return found


def wait_until(holds: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not holds():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def status(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def test_the_served_cockpit_shows_the_reports_numbers_and_a_key_switches_views(served: Served, browser) -> None:  # noqa: ANN001, F811
    page = browser.new_page(viewport={"width": 1600, "height": 900})
    page.add_init_script(KEEP_TERMINAL)
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    try:
        answer = page.goto(served.url)
        assert answer is not None and answer.status == 200
        lines = wait_for_screen(page, lambda ls: any("configurations" in line for line in ls), "its scaling table")
        # the page, its scripts and its websocket all went through the proxy's sub-path
        assert sockets == [f"ws://127.0.0.1:{served.proxy.port}{SUB_PATH}/{served.token}/ws?" + sockets[0].split("?")[1]]
        assert f"/{served.token}/ws?" in " ".join(served.proxy.paths)
        assert f"/{served.token}/static/js/textual.js" in served.proxy.paths

        rows = table(lines)
        report = scaling(load_input(served.store).results)
        assert len(rows) == len(report) == 4, lines
        for expected in report:
            shown = [r for r in rows if r["window"] == str(expected["window"])
                     and re.sub(r"\D", "x", r["nodes×workers"]) == f"{expected['nodes']}x{expected['gpus_per_node']}"]
            assert len(shown) == 1, (expected["config_id"], rows)
            assert {k: shown[0][k] for k in SHOWN} == {k: number(expected) for k, number in SHOWN.items()}, \
                expected["config_id"]

        page.keyboard.press("2")  # no click first: the page gave the terminal the keyboard when it loaded
        wait_for_screen(page, lambda ls: any("elapsed / limit" in line for line in ls) and
                        not any("T/work s" in line for line in ls), "the queue view after `2`")
        # the tab's cockpit is `cockpit open STORE` as a terminal runs it, this Python's
        assert cockpits(served.store) == [[sys.executable, "-m", "cockpit", "open", str(served.store)]]

        page.keyboard.press("q")  # the cockpit quits: the page says so and offers to open it again
        page.wait_for_selector("text=The cockpit has ended.", timeout=30_000)
        wait_until(lambda: not cockpits(served.store), "`q` did not end the tab's cockpit")
    finally:
        page.close()


def test_only_urls_with_the_token_are_answered(served: Served, browser) -> None:  # noqa: ANN001, F811
    page = browser.new_page()
    try:
        answer = page.goto(served.direct + "/")
        assert answer is not None and answer.status == 403
        said = page.inner_text("body").strip()
        assert said == "cockpit: wrong or missing token in the URL; open the URL `cockpit serve` printed"
    finally:
        page.close()
    wrong = "x" * len(served.token)
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    for url, headers in [(f"{served.direct}/{wrong}/", None), (f"{served.direct}/{wrong}/ws", upgrade),
                         (f"{served.direct}/{wrong}/static/js/textual.js", None),
                         (f"{served.direct}/static/js/textual.js", None), (f"{served.direct}/ws", upgrade),
                         (f"{served.direct}/{served.token[:-1]}/", None), (f"{served.direct}{SUB_PATH}/", None),
                         (f"{served.url.removesuffix(served.token + '/')}{wrong}/", None)]:
        code, body = status(url, headers)
        assert (code, body.count("\n")) == (403, 1), url
    for url in (served.url, f"{served.direct}/{served.token}/",  # through the proxy, and without it
                f"{served.direct}{SUB_PATH}/{served.token}/",  # as a proxy that passes its sub-path on asks
                f"{served.direct}/{served.token}/static/css/xterm.css"):
        code, _ = status(url)
        assert code == 200, url
    code, body = status(f"{served.direct}/{served.token}")  # followed to the page with its slash
    assert code == 200 and "textual.js" in body


def test_closing_a_tab_or_stopping_the_server_ends_the_tabs_cockpits(served: Served, browser) -> None:  # noqa: ANN001, F811
    """Two tabs: closing one ends its cockpit; stopping the server (SIGTERM, as Ctrl+C or a batch job's end
    does) ends the other's. Last in the module: it stops the module's server."""
    pages = [browser.new_page(), browser.new_page()]
    try:
        for page in pages:
            page.add_init_script(KEEP_TERMINAL)
            page.goto(served.url)
        for page in pages:
            wait_for_screen(page, lambda ls: any("configurations" in line for line in ls), "its scaling table")
        assert len(cockpits(served.store)) == 2  # a cockpit per tab
        pages.pop().close()
        wait_until(lambda: len(cockpits(served.store)) == 1, "closing a tab did not end its cockpit")
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=60) == 0
        assert cockpits(served.store) == [], "a tab's cockpit outlived the server"
    finally:
        for page in pages:
            page.close()
