"""A host name that does not resolve (a typo in ssh_host or HostName) fails at once with what to check,
instead of retrying for a minute; the resolver is the machine's own (no server needed)."""

from __future__ import annotations

import pytest

from cockpit.launch.backend import ConnectionState
from cockpit.launch.ssh import SshConnection, SshError, resolve_target


async def test_an_unresolvable_host_fails_at_once_naming_the_ssh_config_entry(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host meluxina\n    HostName login.lxp.lu.invalid\n    Port 8822\n")
    conn = SshConnection(resolve_target("meluxina", ssh_config=str(config)), max_attempts=8)
    details: list[str] = []
    conn.listeners.append(lambda _state, detail: details.append(detail))
    with pytest.raises(SshError) as err:
        await conn.connection()
    assert not any("retry in" in d for d in details), details  # one attempt, no back-off
    message = str(err.value)
    assert "cannot resolve host 'login.lxp.lu.invalid'" in message and f"Host 'meluxina' entry of {config}" in message
    assert "gave up" not in message and conn.state is ConnectionState.FAILED


@pytest.mark.parametrize("made", ["no ~/.ssh", "no config", "no entry"])
async def test_an_alias_nothing_defines_says_why_not_which_entry(tmp_path, monkeypatch, made):
    """A newcomer without ~/.ssh (or its config, or the Host entry) is told that, not to fix an entry that is not
    there."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    if made != "no ~/.ssh":
        (home / ".ssh").mkdir()
    if made == "no entry":
        (home / ".ssh" / "config").write_text("Host other\n    HostName other.invalid\n")
    with pytest.raises(SshError) as err:
        await SshConnection(resolve_target("hlm-nosuch-alias"), max_attempts=1).connection()
    why = {"no ~/.ssh": f"~/.ssh/config: {home / '.ssh'} does not exist, so nothing defines Host 'hlm-nosuch-alias'",
           "no config": "~/.ssh/config: it does not exist, so nothing defines Host 'hlm-nosuch-alias'",
           "no entry": "~/.ssh/config: it has no Host 'hlm-nosuch-alias' entry"}[made]
    assert str(err.value).endswith(
        f"[cluster].ssh_host is an alias of {why}: add a Host 'hlm-nosuch-alias' entry with its HostName "
        "(docs/install.md), or give [cluster].host")
    assert "check the name in" not in str(err.value)
