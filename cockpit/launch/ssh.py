"""One SSH connection per cluster: strict host keys, keepalives, reconnect with back-off.

Every remote action of the cockpit (commands, SFTP uploads, file following) goes over the single
:class:`SshConnection` of its cluster, because opening a connection costs ~100 ms and login nodes
rate-limit new connections, while a command on an open connection costs a few milliseconds.

Host keys are always checked against ``known_hosts`` (``~/.ssh/known_hosts``, the ``UserKnownHostsFile``
of the Host entry, or a file named in the study); there is deliberately no option that disables checking.

About 400 lines because connecting, resolving ~/.ssh/config, reconnecting and the SFTP helpers share the one
connection's state and its lock; split, each piece would reach into the others' private fields.
"""

from __future__ import annotations

import asyncio
import fnmatch
import getpass
import logging
import os
import random
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import asyncssh
from asyncssh.config import SSHClientConfig

from cockpit.launch.backend import ConnectionLost, ConnectionState, OutcomeUnknown

log = logging.getLogger(__name__)

DEFAULT_SSH_CONFIG = Path("~/.ssh/config")
DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")


class SshError(ConnectionLost):
    """A connection problem the user has to act on (bad target, refused key, auth failure)."""


class HostKeyError(SshError):
    """The server's host key is unknown or differs from the one on record: never retried."""


class ConnectionInterrupted(SshError, OutcomeUnknown):
    """The connection dropped while a non-idempotent action was in flight: its outcome is unknown."""


class CommandTimedOut(SshError):
    """A command ran past its timeout (the connection is fine; what it waits for did not answer)."""


@dataclass(frozen=True)
class SshTarget:
    """Where and how to connect, fully resolved (no ssh_config lookups left)."""

    host: str
    port: int = 22
    user: str = field(default_factory=getpass.getuser)
    identity_files: tuple[str, ...] = ()
    identities_only: bool = False
    known_hosts: str = str(DEFAULT_KNOWN_HOSTS)
    jump: SshTarget | None = None
    alias: str | None = None
    keepalive_s: float = 15.0
    connect_timeout_s: float = 20.0
    config_file: str = str(DEFAULT_SSH_CONFIG)  # the ssh config the alias was looked up in, as the user names it
    config_entry: bool = True  # whether that file has a Host entry for the alias (False: none, or no file)

    def alias_source(self) -> str:
        """Where the alias should have been defined, for a message: its Host entry, or why there is none."""
        if self.config_entry:
            return f"the Host {self.alias!r} entry of {self.config_file}"
        config = Path(self.config_file).expanduser()
        if not config.parent.exists():
            return f"{self.config_file}: {config.parent} does not exist, so nothing defines Host {self.alias!r}"
        if not config.exists():
            return f"{self.config_file}: it does not exist, so nothing defines Host {self.alias!r}"
        return f"{self.config_file}: it has no Host {self.alias!r} entry"

    @property
    def label(self) -> str:
        where = f"{self.user}@{self.host}:{self.port}"
        return f"{self.alias} ({where})" if self.alias and self.alias != self.host else where


def resolve_target(
    alias: str | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    user: str | None = None,
    identity_file: str | None = None,
    known_hosts: str | None = None,
    ssh_config: str | os.PathLike[str] | None = None,
) -> SshTarget:
    """Resolve a Host alias of ``~/.ssh/config`` (or explicit fields) into an :class:`SshTarget`.

    Explicit fields override what the Host entry says. ``ProxyJump`` is resolved recursively so that the
    jump host gets the same strict host-key checking.
    """
    name = alias or host
    if not name:
        raise SshError("no SSH target: give [cluster].ssh_host (a Host alias of ~/.ssh/config) or [cluster].host")
    cfg_path = Path(ssh_config if ssh_config is not None else DEFAULT_SSH_CONFIG).expanduser()
    paths = [str(cfg_path)] if cfg_path.is_file() else []
    try:
        cfg = SSHClientConfig.load(None, paths, False, False, False, getpass.getuser(), (), name, ())
    except (OSError, asyncssh.ConfigParseError) as exc:
        raise SshError(f"{cfg_path}: cannot read SSH config: {exc}") from exc
    if port is not None and not 0 < int(port) < 65536:
        raise SshError(f"SSH port must be 1..65535, got {port!r}")
    # SSHClientConfig.get returns object: the values as asyncssh parses them (lists of str, ints)
    ids = [identity_file] if identity_file else list(cast("list[str] | None", cfg.get("IdentityFile")) or [])
    kh_cfg = cast("list[str] | None", cfg.get("UserKnownHostsFile"))
    kh = known_hosts or (kh_cfg[0] if kh_cfg else str(DEFAULT_KNOWN_HOSTS))
    jump_spec = cfg.get("ProxyJump")
    jump = None
    if jump_spec and str(jump_spec).lower() != "none":
        first = str(jump_spec).split(",")[0]
        juser, _, jhostport = first.rpartition("@")
        jhost, _, jport = jhostport.partition(":")
        jump = resolve_target(jhost, user=juser or None, port=int(jport) if jport else None,
                              known_hosts=known_hosts, ssh_config=ssh_config)
    alive = cast("float | None", cfg.get("ServerAliveInterval"))
    shown = str(ssh_config) if ssh_config is not None else str(DEFAULT_SSH_CONFIG)
    return SshTarget(
        host=host or str(cfg.get("Hostname") or name),
        port=int(port if port is not None else cast("int | None", cfg.get("Port")) or 22),
        user=user or str(cfg.get("User") or getpass.getuser()),
        identity_files=tuple(str(Path(p).expanduser()) for p in ids),
        identities_only=bool(cfg.get("IdentitiesOnly") or identity_file),
        known_hosts=str(Path(kh).expanduser()),
        jump=jump,
        alias=alias,
        keepalive_s=float(alive) if alive else 15.0,
        config_file=shown,
        config_entry=bool(alias) and _has_host_entry(cfg_path, alias or ""),
    )


def _has_host_entry(config: Path, name: str) -> bool:
    """Whether an ssh config names `name` in a Host line (its patterns as ssh matches them, negations aside)."""
    if not config.is_file():
        return False
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        words = line.replace("=", " ").split()
        if len(words) > 1 and words[0].lower() == "host":
            patterns = [w for w in words[1:] if not w.startswith("!")]
            if any(fnmatch.fnmatchcase(name, p) for p in patterns if p != "*"):
                return True
    return False


def _key_files() -> list[Path]:
    """The private keys ssh tries by default, where they exist."""
    folder = Path("~/.ssh").expanduser()
    return [folder / name for name in ("id_ed25519", "id_ecdsa", "id_rsa", "id_ed25519_sk", "id_ecdsa_sk")
            if (folder / name).is_file()]


@dataclass
class CommandResult:
    command: str
    exit_status: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


def _fingerprint(key: asyncssh.SSHKey) -> str:
    return key.get_fingerprint("sha256")


async def explain_host_key_refusal(target: SshTarget) -> str:
    """Say whether the host key is unknown or changed, with its fingerprint and what to do."""
    where = target.host if target.port == 22 else f"[{target.host}]:{target.port}"
    keyscan = f"ssh-keyscan -p {target.port} {target.host} >> {target.known_hosts}"
    try:
        key = await asyncio.wait_for(asyncssh.get_server_host_key(target.host, target.port, config=[]), 10)
    except (TimeoutError, OSError, asyncssh.Error):
        key = None
    fp = _fingerprint(key) if key is not None else "(could not be fetched)"
    known = _known_keys(target)
    if known:
        return (
            f"HOST KEY CHANGED for {where}: the server presents {fp}, but {target.known_hosts} records "
            f"{', '.join(_fingerprint(k) for k in known)}. This can mean an attack or a reinstalled server: ask "
            f"the site for the current fingerprint; only if it matches, remove the old entry with "
            f"`ssh-keygen -R '{where}' -f {target.known_hosts}` and add the new one with `{keyscan}`."
        )
    return (
        f"UNKNOWN HOST KEY for {where}: the server presents {fp} and {target.known_hosts} has no entry for it. "
        f"Verify this fingerprint against the one the site publishes, then run `{keyscan}` "
        f"(or connect once with `ssh -p {target.port} {target.user}@{target.host}` and accept it)."
    )


def _known_keys(target: SshTarget) -> list[asyncssh.SSHKey]:
    path = Path(target.known_hosts)
    if not path.is_file():
        return []
    try:
        kh = asyncssh.read_known_hosts(str(path))
        return list(kh.match(target.host, "", target.port)[0])
    except (OSError, ValueError):
        return []


def _known_hosts_arg(target: SshTarget) -> asyncssh.SSHKnownHosts:
    """Always a concrete known-hosts object: a missing file means 'trust nothing', never 'check nothing'."""
    path = Path(target.known_hosts)
    if path.is_file():
        try:
            return asyncssh.read_known_hosts(str(path))
        except (OSError, ValueError) as exc:
            raise SshError(f"{path}: cannot read known_hosts: {exc}") from exc
    return asyncssh.import_known_hosts("")


StateListener = Callable[[ConnectionState, str], None]
_DROPPED = (asyncssh.ConnectionLost, asyncssh.DisconnectError, ConnectionError, BrokenPipeError, EOFError)


class SshConnection:
    """The cluster's one connection, re-opened on demand with exponential back-off and jitter.

    ``state``/``detail`` are observable (``listeners`` are called on every change) so the UI can show
    "connected", "reconnecting in 3.1 s (attempt 2): ..." and so on.
    """

    def __init__(
        self,
        target: SshTarget,
        *,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_attempts: int | None = 8,
        rng: random.Random | None = None,
    ) -> None:
        self.target = target
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.max_attempts = max_attempts
        self._rng = rng or random.Random()
        self._conn: asyncssh.SSHClientConnection | None = None
        self._jump: SshConnection | None = None
        self._sftp: asyncssh.SFTPClient | None = None
        self._lock = asyncio.Lock()
        self.state = ConnectionState.DISCONNECTED
        self.detail = ""
        self.listeners: list[StateListener] = []
        self.connects = 0  # how many times a connection was opened (1 + reconnects)
        self.round_trips = 0  # commands and SFTP operations sent

    # -- state ----------------------------------------------------------------------------------------
    def _set_state(self, state: ConnectionState, detail: str = "") -> None:
        if (state, detail) == (self.state, self.detail):
            return
        self.state, self.detail = state, detail
        log.info("ssh %s: %s %s", self.target.label, state.value, detail)
        for listener in list(self.listeners):
            listener(state, detail)

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    # -- opening --------------------------------------------------------------------------------------
    async def _open_once(self) -> asyncssh.SSHClientConnection:
        t = self.target
        tunnel = None
        if t.jump is not None:
            if self._jump is None:
                self._jump = SshConnection(t.jump, max_attempts=1)
            tunnel = await self._jump.connection()
        opts: dict[str, object] = {}
        if t.identity_files:
            opts["client_keys"] = list(t.identity_files)
        if t.identities_only:
            opts["agent_path"] = None
        try:
            return await asyncssh.connect(
                t.host, t.port, username=t.user, known_hosts=_known_hosts_arg(t), config=[],
                keepalive_interval=t.keepalive_s, keepalive_count_max=3,
                connect_timeout=t.connect_timeout_s, tunnel=tunnel, **opts,
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            raise HostKeyError(await explain_host_key_refusal(t)) from exc
        except socket.gaierror as exc:
            if self.connects:  # it resolved before: a network or DNS outage, worth retrying
                raise
            if t.alias and not t.config_entry:
                raise SshError(
                    f"{t.label}: cannot resolve host {t.host!r} ({exc.strerror or exc}); [cluster].ssh_host is an "
                    f"alias of {t.alias_source()}: add a Host {t.alias!r} entry with its HostName (docs/install.md), "
                    f"or give [cluster].host"
                ) from exc
            where = t.alias_source() if t.alias else "[cluster].host in the study"
            raise SshError(
                f"{t.label}: cannot resolve host {t.host!r} ({exc.strerror or exc}); check the name in {where} "
                f"(a typo in [cluster].ssh_host or HostName?)"
            ) from exc
        except asyncssh.PermissionDenied as exc:
            if not t.identity_files and not _key_files() and not os.environ.get("SSH_AUTH_SOCK"):
                folder = Path("~/.ssh").expanduser()
                why = "~/.ssh does not exist" if not folder.exists() else "~/.ssh holds no id_* key"
                raise SshError(
                    f"{t.label}: authentication refused ({exc.reason}): no key found ({why}, no IdentityFile "
                    f"given and no SSH agent running); make one with ssh-keygen -t ed25519 and register its public "
                    f"key with the site (docs/install.md)"
                ) from exc
            keys = ", ".join(t.identity_files) or "the agent's and default keys"
            raise SshError(
                f"{t.label}: authentication refused ({exc.reason}); tried {keys}. Check User/IdentityFile "
                f"in ~/.ssh/config and that the public key is in the server's authorized_keys."
            ) from exc

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The open connection, opening or re-opening it (with back-off) when needed."""
        if self.connected:
            assert self._conn is not None
            return self._conn
        async with self._lock:
            if self.connected:
                assert self._conn is not None
                return self._conn
            self._sftp = None
            attempt = 0
            was_connected = self.connects > 0
            while True:
                attempt += 1
                self._set_state(
                    ConnectionState.RECONNECTING if was_connected else ConnectionState.CONNECTING,
                    f"attempt {attempt}",
                )
                try:
                    self._conn = await self._open_once()
                except SshError as exc:
                    self._set_state(ConnectionState.FAILED, str(exc))
                    raise
                except (TimeoutError, OSError, asyncssh.Error) as exc:
                    if self.max_attempts is not None and attempt >= self.max_attempts:
                        msg = f"{self.target.label}: gave up after {attempt} attempts: {exc}"
                        self._set_state(ConnectionState.FAILED, msg)
                        raise SshError(msg) from exc
                    delay = self.backoff_delay(attempt)
                    self._set_state(
                        ConnectionState.RECONNECTING,
                        f"retry in {delay:.1f} s (attempt {attempt}): {exc or type(exc).__name__}",
                    )
                    await asyncio.sleep(delay)
                    continue
                self.connects += 1
                self._set_state(ConnectionState.CONNECTED, self.target.label)
                return self._conn

    def backoff_delay(self, attempt: int) -> float:
        """Exponential back-off with full jitter: uniform(0.5, 1) x min(max, initial x 2^(attempt-1))."""
        cap = min(self.backoff_max_s, self.backoff_initial_s * (2 ** (attempt - 1)))
        return cap * (0.5 + 0.5 * self._rng.random())

    def _dropped(self, exc: BaseException) -> None:
        if self._conn is not None:
            self._conn.abort()
        self._conn = None
        self._sftp = None
        self._set_state(ConnectionState.RECONNECTING, f"connection lost: {exc or type(exc).__name__}")

    async def _retrying(self, what: str, op, *, idempotent: bool):
        """Run ``op(conn)``; on a dropped connection reconnect and retry if idempotent, else raise."""
        tries = 0
        while True:
            conn = await self.connection()
            try:
                self.round_trips += 1
                return await op(conn)
            except _DROPPED as exc:
                self._dropped(exc)
                tries += 1
                if not idempotent:
                    raise ConnectionInterrupted(
                        f"{self.target.label}: connection lost during {what}; its outcome is unknown and "
                        f"will be reconciled"
                    ) from exc
                if tries > 3:
                    raise SshError(f"{self.target.label}: connection keeps dropping during {what}") from exc
            except asyncssh.Error as exc:  # e.g. a refused channel or an SFTP permission error
                raise SshError(f"{self.target.label}: {what} failed: {exc}") from exc

    # -- operations -----------------------------------------------------------------------------------
    async def run(
        self, command: str, *, input: str | None = None, timeout: float | None = 60.0, idempotent: bool = True
    ) -> CommandResult:
        """Run one command (already shell-quoted by the caller) and collect its output."""

        async def op(conn: asyncssh.SSHClientConnection) -> CommandResult:
            try:
                res = await conn.run(command, input=input, check=False, timeout=timeout)
            except asyncssh.TimeoutError as exc:
                raise CommandTimedOut(f"{self.target.label}: {command.split(' ', 1)[0]} ran past {timeout:g} s") from exc
            status = res.exit_status if res.exit_status is not None else 255
            if res.exit_status is None and res.exit_signal is None and conn.is_closed():
                raise asyncssh.ConnectionLost("channel closed without exit status")
            return CommandResult(command, status, _text(res.stdout), _text(res.stderr))

        return await self._retrying(command.split(" ", 1)[0], op, idempotent=idempotent)

    async def sftp(self) -> asyncssh.SFTPClient:
        conn = await self.connection()
        if self._sftp is None:
            self._sftp = await conn.start_sftp_client()
        return self._sftp

    async def write_file(self, remote_path: str, data: bytes, mode: int = 0o644) -> None:
        """Upload bytes to a file (written to a temporary name then renamed: never half a script)."""

        async def op(conn: asyncssh.SSHClientConnection) -> None:
            if self._sftp is None:
                self._sftp = await conn.start_sftp_client()
            sftp = self._sftp
            parent = remote_path.rsplit("/", 1)[0] or "/"
            await sftp.makedirs(parent, exist_ok=True)
            tmp = f"{remote_path}.part{os.getpid()}"
            async with sftp.open(tmp, "wb") as fh:
                await fh.write(data)
            await sftp.chmod(tmp, mode)
            await sftp.posix_rename(tmp, remote_path)

        await self._retrying(f"upload {remote_path}", op, idempotent=True)

    async def read_from(self, remote_path: str, offset: int, max_bytes: int = 8 << 20) -> bytes | None:
        """Bytes of a remote file from ``offset`` (None when the file does not exist yet)."""

        async def op(conn: asyncssh.SSHClientConnection) -> bytes | None:
            if self._sftp is None:
                self._sftp = await conn.start_sftp_client()
            try:
                async with self._sftp.open(remote_path, "rb") as fh:
                    await fh.seek(offset)
                    # read() is annotated with an unbound AnyStr; a file opened "rb" gives bytes
                    return cast(bytes, await fh.read(max_bytes))
            except asyncssh.SFTPNoSuchFile:
                return None

        return await self._retrying(f"read {remote_path}", op, idempotent=True)

    async def start_process(self, command: str) -> asyncssh.SSHClientProcess:
        """A long-running remote process on its own channel (the file follower)."""
        conn = await self.connection()
        self.round_trips += 1
        return await conn.create_process(command, encoding=None)

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            try:
                await asyncio.wait_for(self._conn.wait_closed(), 5)
            except (TimeoutError, OSError, asyncssh.Error):
                pass
        self._conn = None
        self._sftp = None
        if self._jump is not None:
            await self._jump.close()
        self._set_state(ConnectionState.DISCONNECTED)


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
