"""The [cluster] keys of a kind reached over SSH (`ClusterKind.over_ssh`): the login node and how its host key and
the user's key are found. The SSH transport (cockpit.launch.ssh) reads them; a kind over SSH takes them beside
its own (cockpit.launch.slurm.kind)."""

from __future__ import annotations

from dataclasses import dataclass

from runcontract.keys import key, keys_of


@dataclass(frozen=True)
class SshKeys:
    """[cluster]'s SSH login; `own_keys(SshKeys, cluster)` reads them from a resolved study's cluster."""

    ssh_host: str | None = key(None, "an ~/.ssh/config alias")
    host: str | None = key(None, "the login node's address, when there is no ssh_host alias")
    port: int | None = key(None, "the login node's SSH port (unset: from ~/.ssh/config, else 22)", minimum=1)
    user: str | None = key(None, "the cluster user (default: from ~/.ssh/config)")
    known_hosts: str | None = key(None, "the file host keys are checked against (default ~/.ssh/known_hosts)")
    identity_file: str | None = key(None, "the SSH private key (default: from ~/.ssh/config)")


SSH_KEYS = keys_of("cluster", SshKeys)
