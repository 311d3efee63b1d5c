"""`cockpit serve STUDY`: the terminal cockpit in a browser (textual-serve), one `cockpit open STUDY` per tab.

It listens on 127.0.0.1 unless told otherwise and answers only URLs that carry a fresh secret token, which it
prints: on a login node its owner reaches it through an SSH tunnel, or Open OnDemand's reverse proxy at a
sub-path (`--public-url`). docs/serve.md has both.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import re
import secrets
import shlex
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

from cockpit.commands import open as open_command
from cockpit.commands._args import error

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
TOKEN_VARIABLE = "COCKPIT_SERVE_TOKEN"  # a token chosen outside (Open OnDemand's view needs to know it)
TOKEN_FORM = re.compile(r"[A-Za-z0-9_-]{16,}")  # URL-safe as it stands, and not guessable by trying


def add_arguments(parser: argparse.ArgumentParser) -> None:
    open_command.add_arguments(parser)  # the same arguments as `cockpit open`, handed on to it
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"address to listen on (default {DEFAULT_HOST}: only this machine, e.g. through an "
                             "SSH tunnel); any other address is reachable by others, and the token is then the "
                             "only guard")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port)")
    parser.add_argument("--public-url", metavar="URL",
                        help="the address a browser reaches this server at through a reverse proxy, e.g. "
                             "https://ondemand.example.org/rnode/NODE/PORT (printed with the token; the "
                             "proxy may strip the sub-path or pass it on)")


def main(args: argparse.Namespace) -> int:
    from cockpit.web.server import CockpitServer, address, page_url

    problem = open_command.refusal(args) or _bad_port(args.port) or _bad_public_url(args.public_url)
    if problem:
        return error(problem)
    given = os.environ.pop(TOKEN_VARIABLE, None)  # not handed to the cockpits
    if given == "":
        return error(f"{TOKEN_VARIABLE} is set but empty; give at least 16 of A-Z a-z 0-9 _ -, or unset it for a "
                     "fresh token")
    if given is not None and not TOKEN_FORM.fullmatch(given):
        return error(f"{TOKEN_VARIABLE}: expected at least 16 of A-Z a-z 0-9 _ -, got {len(given)} characters "
                     "of another form")
    token = given if given is not None else secrets.token_urlsafe(32)
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        return error(listen_failure(args.host, args.port, exc))
    host, port = sock.getsockname()[:2]
    if not ipaddress.ip_address(host).is_loopback:
        error(f"--host {args.host}: listening on {address(host, port)}, reachable from other machines; the token "
              "in the URL is the only guard")
    server = CockpitServer(cockpit_command(args), token=token, title=f"cockpit: {Path(args.target).name}",
                           public_url=args.public_url)
    print(f"Serving {args.target} on {address(host, port)}, a cockpit per browser tab (Ctrl+C stops); open",
          flush=True)
    print(page_url(args.public_url, host, port, token), flush=True)
    server.run(sock)
    return 0


def cockpit_command(args: argparse.Namespace) -> str:
    """The shell line textual-serve runs per browser tab: this Python's `cockpit open` with the same
    arguments (paths made absolute), each quoted."""
    parser = argparse.ArgumentParser(add_help=False)
    open_command.add_arguments(parser)
    argv = [sys.executable, "-m", "cockpit", "open"]
    for action in parser._actions:
        value = getattr(args, action.dest)
        if isinstance(value, Path) or not action.option_strings:
            value = str(Path(value).resolve()) if value is not None else None
        if not action.option_strings:
            argv.append(value)
        elif action.nargs == 0:  # a flag
            argv += [action.option_strings[0]] if value else []
        elif value is not None and value != action.default:
            argv += [action.option_strings[0], str(value)]
    return shlex.join(argv)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) and listening (bound here, so a refusal comes before anything else);
    OSError when the host is unknown or not this machine's, or the port is taken."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart reuses the port at once
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def listen_failure(host: str, port: int, exc: OSError) -> str:
    """One line: which address, why, and what to do."""
    if isinstance(exc, socket.gaierror):
        return f"--host {host}: no such host ({exc.strerror}); give an address of this machine"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"--host {host}: not an address of this machine ({exc.strerror}); give one of its own"
    if exc.errno == errno.EADDRINUSE:
        return f"--port {port}: {host}:{port} is already in use (another `cockpit serve`?); choose another port"
    return f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --host or --port"


def _bad_port(port: int) -> str | None:
    return None if 0 <= port <= 65535 else f"--port must be between 0 and 65535, got {port}"


def _bad_public_url(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    absolute = parts.scheme in ("http", "https") and bool(parts.netloc)
    path_only = not parts.scheme and not parts.netloc and url.startswith("/")
    if (absolute or path_only) and not parts.query and not parts.fragment and not re.search(r"\s", url):
        return None
    return f"--public-url: expected http(s)://HOST/PATH or /PATH (no ?query or #fragment), got {url!r}"

