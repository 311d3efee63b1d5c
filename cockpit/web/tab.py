"""One browser tab's `cockpit open`, as textual-serve's AppService runs it, except that a cockpit which ends
without quitting (it could not start: the store gone, the study unreadable; or it stopped on an error) is
said in the page: the last lines it wrote on stderr, the words `cockpit open` prints in a terminal, go to
the page (a `["cockpit_failed", {...}]` message that cockpit/web/index.html shows with a button to open it
again) and in one line to the server's stderr, and the websocket is closed. A cockpit that quits (`q`), or
is told to (the tab closed, the server stopped), says nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

from textual_serve.app_service import AppService

TAIL_LINES = 12  # of the cockpit's stderr, shown in the page
TAIL_BYTES = 64 * 1024  # of its stderr kept while it runs
PRELUDE = b"__GANGLION__\n"  # what a Textual app under the web driver writes first
ENDED_WAIT_S = 10.0  # how long the ended process's stderr and exit code are waited for


def failure_words(stderr: bytes, code: int | None) -> str:
    """The page's text: the last lines of the cockpit's stderr, else its exit code alone."""
    lines = [line.rstrip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    ended = f"the cockpit ended (exit code {code})" if code is not None else "the cockpit ended"
    return "\n".join(lines[-TAIL_LINES:]) if lines else f"{ended} without a word on stderr"


class TabCockpit(AppService):
    """A tab's cockpit process: its screen relayed to the websocket, its failure to the page."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.quit = False  # it quit on its own (`q`), or was told to: nothing to say
        self.failure: str | None = None  # what the page was shown, when it ended otherwise

    async def on_meta(self, data: bytes) -> None:
        if json.loads(data).get("type") == "exit":
            self.quit = True
        await super().on_meta(data)

    async def stop(self) -> None:
        self.quit = True
        await super().stop()

    async def run(self) -> None:
        """Relay the cockpit's packets until its stdout ends; then, unless it quit, say why it ended."""
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        stderr = bytearray()
        source = process.stderr

        async def read_stderr() -> None:
            while data := await source.read(4096):
                stderr.extend(data)
                del stderr[:-TAIL_BYTES]

        reader = asyncio.create_task(read_stderr())
        try:
            await self._relay(process.stdout)
        except (asyncio.IncompleteReadError, ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), ENDED_WAIT_S)
            reader.cancel()
        code = None
        with contextlib.suppress(asyncio.TimeoutError):
            code = await asyncio.wait_for(process.wait(), ENDED_WAIT_S)
        if not self.quit:
            await self._tell(failure_words(bytes(stderr), code), code)

    async def _relay(self, stdout: asyncio.StreamReader) -> None:
        for _ in range(10):  # the prelude, after which come packets: type, size, payload
            line = await stdout.readline()
            if not line or line == PRELUDE:
                break
        while True:
            kind = await stdout.readexactly(1)
            size = int.from_bytes(await stdout.readexactly(4), "big")
            payload = await stdout.readexactly(size)
            if kind == b"D":
                await self.on_data(payload)
            elif kind == b"M":
                await self.on_meta(payload)
            elif kind == b"P":
                await self.on_packed(payload)

    async def _tell(self, text: str, code: int | None) -> None:
        """The page shows `text` (index.html) and the websocket closes; the server says it in one line."""
        self.failure = text
        last = text.splitlines()[-1] if text else ""
        exit_words = f" (exit code {code})" if code is not None else ""
        print(f"cockpit: a tab's cockpit ended{exit_words}: {last}", file=sys.stderr, flush=True)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.remote_write_str(json.dumps(["cockpit_failed", {"text": text, "code": code}]))
            await self.remote_close()
