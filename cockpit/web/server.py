"""textual-serve's server behind a secret token: every URL it answers starts with `/<token>/`, anything else
gets 403, so on a shared login node only whoever holds the printed URL reaches the cockpit.

The token is a path segment rather than a query parameter because textual.js appends its own `?width=`
to the websocket URL and the page loads its scripts from a path prefix: a segment carries the token to
every request the page makes. The page uses relative URLs only, so a reverse proxy may serve it at any
sub-path; a proxy that passes its sub-path on (rather than stripping it) is served too, at
`<public path>/<token>/`.

textual-serve's download route is left out: textual.js asks for it at the site's root, where the token is
not, and the cockpit delivers no files (its CSV export writes beside the cockpit and says where).
"""

from __future__ import annotations

import asyncio
import hmac
import html
import re
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from importlib.resources import files
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server, to_int

from cockpit.web.tab import TabCockpit

REFUSED = "cockpit: wrong or missing token in the URL; open the URL `cockpit serve` printed\n"
NOT_A_WEBSOCKET = "cockpit: this is the page's websocket, which a browser opens; open the page (the URL without ws)\n"
INDEX = files(__package__).joinpath("index.html").read_text(encoding="utf-8")

QUIT_S = 20.0  # how long a stop waits for the open tabs' cockpits to quit

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def public_path(public_url: str | None) -> str:
    """The sub-path a reverse proxy serves us at ("" for none): `https://h/rnode/n1/8765/` -> `/rnode/n1/8765`."""
    return urlsplit(public_url or "").path.rstrip("/")


def proxy_paths(public_url: str | None) -> list[str]:
    """Every path prefix the token may follow: none (a proxy that strips its sub-path), the public path, and
    for Open OnDemand's `/rnode/HOST/PORT` its twin `/node/HOST/PORT` (the portal passes that one on), and
    the other way round, so either link reaches the cockpit."""
    path = public_path(public_url)
    paths = {"", path}
    twin = re.fullmatch(r"/(r?)node(/[^/]+/\d+)", path)
    if twin:
        paths.add(f"/{'' if twin.group(1) else 'r'}node{twin.group(2)}")
    return sorted(paths)


def address(host: str, port: int) -> str:
    """`host:port` as a URL writes it (`[::1]:8765` for IPv6)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def page_url(public_url: str | None, host: str, port: int, token: str) -> str:
    """The URL to open: the public URL (or http://host:port) followed by the token and a slash."""
    base = (public_url or f"http://{address(host, port)}").rstrip("/")
    return f"{base}/{token}/"


class CockpitServer(Server):
    """One `command` (a `cockpit open ...` line) per browser connection, as textual-serve runs it; the routes
    under the token, the page from cockpit/web/index.html, no access log (its lines would carry the token)."""

    def __init__(self, command: str, *, token: str, title: str, public_url: str | None = None) -> None:
        super().__init__(command, title=title, public_url=public_url)
        self.token = token
        # where the token sits: at the root (a proxy that strips its sub-path, or none) and under the public path
        self.bases = proxy_paths(public_url)
        self.tabs: set[asyncio.Task[object]] = set()  # the open tabs' websocket handlers

    def authorised(self, path: str) -> bool:
        """True when `path` is `<base>/<token>` or below it, for one of the bases."""
        for base in self.bases:
            if path.startswith(base + "/"):
                segment = path[len(base) + 1:].split("/", 1)[0]
                if hmac.compare_digest(segment.encode(), self.token.encode()):
                    return True
        return False

    async def _make_app(self) -> web.Application:
        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            if not self.authorised(request.path):
                return web.Response(status=403, text=REFUSED)
            response = await handler(request)
            response.headers["Cache-Control"] = "no-store"
            response.headers["Referrer-Policy"] = "no-referrer"
            return response

        app = web.Application(middlewares=[guard])
        for base in self.bases:
            root = f"{base}/{self.token}"
            app.add_routes([
                web.get(root, self.handle_bare),
                web.get(root + "/", self.handle_page),
                web.get(root + "/ws", self.handle_tab),
                web.static(root + "/static", self.statics_path),
            ])
        app.on_shutdown.append(self.close_tabs)
        return app

    async def handle_tab(self, request: web.Request) -> web.StreamResponse:
        """A tab's websocket, as textual-serve serves it (a `cockpit open` for it), kept for close_tabs."""
        task = asyncio.current_task()
        assert task is not None
        self.tabs.add(task)
        try:
            return await self._serve_tab(request)
        finally:
            self.tabs.discard(task)

    async def _serve_tab(self, request: web.Request) -> web.StreamResponse:
        """As textual-serve's handle_websocket, with the tab's cockpit a TabCockpit (its failure said in the page) and a
        request that is no websocket handshake answered 400 in one line (textual-serve printed two tracebacks)."""
        websocket = web.WebSocketResponse(heartbeat=15)
        if not websocket.can_prepare(request).ok:
            return web.Response(status=400, text=NOT_A_WEBSOCKET)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        tab: TabCockpit | None = None
        try:
            await websocket.prepare(request)
            tab = TabCockpit(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                             close=websocket.close, download_manager=self.download_manager, debug=self.debug)
            await tab.start(width, height)
            await self._process_messages(websocket, tab)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as exc:  # the tab's message could not be read, or its cockpit not started: one line
            print(f"cockpit: a tab ended on {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        finally:
            if tab is not None:
                await tab.stop()
        return websocket

    async def close_tabs(self, app: web.Application) -> None:
        """On a stop, every open tab's cockpit is told to quit and awaited, so none outlives the server."""
        for task in self.tabs:
            task.cancel()  # textual-serve's handler then tells its cockpit to quit and waits for it
        if self.tabs:
            await asyncio.wait(set(self.tabs), timeout=QUIT_S)

    async def handle_bare(self, request: web.Request) -> web.StreamResponse:
        """`.../<token>` without its slash: on to `<token>/` (relative, so a proxy's sub-path is kept)."""
        raise web.HTTPFound(f"{self.token}/")

    async def handle_page(self, request: web.Request) -> web.StreamResponse:
        """The page: textual.js and an xterm.js terminal that opens the websocket beside it."""
        font_size = to_int(request.query.get("fontsize", "16"), 16)
        text = INDEX.format(title=html.escape(self.title), font_size=font_size)
        return web.Response(text=text, content_type="text/html")

    def initialize_logging(self) -> None:
        """textual-serve's own logging (a banner, rich tracebacks) is left out: the command prints its lines."""

    def run(self, sock: socket.socket) -> None:
        """Serve on the bound, listening `sock` until SIGINT or SIGTERM; each cockpit is told to quit."""
        loop = asyncio.new_event_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_exit)
        web.run_app(self._make_app(), sock=sock, handle_signals=False, loop=loop, print=None, access_log=None)
