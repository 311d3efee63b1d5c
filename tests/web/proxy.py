"""A small reverse proxy, as Open OnDemand's `/rnode/HOST/PORT/` is one: it serves a backend at a sub-path
and strips the sub-path before passing a request on (HTTP and websockets alike). It runs in a thread with its
own event loop, so a test's synchronous Playwright calls can go through it."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
from aiohttp import web

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade", "host", "content-length",
              "content-encoding"}


class Proxy:
    """Requests under `prefix` go to http://127.0.0.1:<backend>/<the rest of the path>; others get 404."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix.rstrip("/")
        self.backend: int | None = None  # set once the backend listens
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.paths: list[str] = []  # what the backend was asked for, in order

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not request.path.startswith(self.prefix + "/"):
            raise web.HTTPNotFound(text="not under the proxy's prefix")
        rest = request.raw_path[len(self.prefix):]
        self.paths.append(rest)
        target = f"http://127.0.0.1:{self.backend}{rest}"
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        async with aiohttp.ClientSession(auto_decompress=False) as session:
            if request.headers.get("Upgrade", "").lower() == "websocket":
                return await self._websocket(request, session, "ws" + target[4:])
            async with session.request(request.method, target, headers=headers, data=await request.read(),
                                       allow_redirects=False) as answer:
                body = await answer.read()
                kept = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP}
                return web.Response(status=answer.status, body=body, headers=kept)

    async def _websocket(self, request: web.Request, session: aiohttp.ClientSession, target: str) -> web.StreamResponse:
        browser = web.WebSocketResponse()
        await browser.prepare(request)
        async with session.ws_connect(target) as backend:
            async def pump(source, sink) -> None:  # noqa: ANN001 - either side's websocket
                async for message in source:
                    if message.type == aiohttp.WSMsgType.TEXT:
                        await sink.send_str(message.data)
                    elif message.type == aiohttp.WSMsgType.BINARY:
                        await sink.send_bytes(message.data)
                await sink.close()

            await asyncio.gather(pump(browser, backend), pump(backend, browser), return_exceptions=True)
        return browser


@contextmanager
def running(prefix: str) -> Iterator[Proxy]:
    """A Proxy serving in a background thread until the block ends."""
    proxy = Proxy(prefix)
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.SockSite(runner, proxy.sock).start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()
