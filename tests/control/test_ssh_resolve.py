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
    assert "cannot resolve host 'login.lxp.lu.invalid'" in message and "Host 'meluxina' entry of ~/.ssh/config" in message
    assert "gave up" not in message and conn.state is ConnectionState.FAILED
