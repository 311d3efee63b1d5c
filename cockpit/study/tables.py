"""The study file's own tables, which the cockpit reads and no workload does: [study], [cluster] and a site
profile's [site]. A workload declares its keys in its own package (the HLM trainer's in trainer/config_keys/),
and runcontract.axes the sweep axes every run records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runcontract.keys import ConfigKey, key, keys_of
from runcontract.modes import is_group_name

STUDY_KEYS = (
    ConfigKey("study", "name", (str,), required=True, help="1-64 letters, digits, '_', '.', '-'"),
    ConfigKey("study", "description", (str,), "", help="free text about the study"),
    ConfigKey("study", "baseline_runs", (int,), 1, minimum=1, unit="runs",
              help="runs of each group's 1x1 baseline: the predictions take their mean T and parts, and their "
                   "spread is the study's own noise (docs/prediction.md, \"Repeated baselines\")"),
)
@dataclass(frozen=True)
class ClusterKeys:
    """[cluster]: where and how jobs run, whatever the kind; cockpit.study.spec.Cluster is this table resolved
    (local defaults filled in). A kind's own keys (Slurm's account, qos, partition, ...; the SSH login) are its
    backend's, declared in its package (cockpit.study.cluster_kinds.ClusterKind.keys)."""

    kind: str = key("local", "where jobs run: local (this machine's cores, no scheduler), slurm (a cluster over SSH), "
                    "or a kind a plug-in adds (docs/workloads.md, \"Plug-ins\")")
    site: str = key("generic", "site profile: a built-in one of sbatch_templates/sites/ (generic, meluxina) or "
                    "the path of a .toml profile, relative to the study file")
    time_limit: str | int = key("01:00:00", "a job's wall-time limit: a Slurm time (HH:MM:SS, D-HH:MM) or whole "
                                "minutes")
    expected_minutes: float | None = key(None, "expected wall time of one run: the node-hour estimate uses it "
                                         "instead of time_limit", minimum=0, unit="min")
    modules: list = key([], "environment modules each job loads (`module load`) before it starts")
    workdir: str | None = key(None, "where run directories go (slurm: required, absolute on the cluster; local: "
                              "default ~/.local/share/hlm-cockpit)")
    container: str = key("", "an Apptainer image the trainer runs in (containers/README.md)")
    container_binds: list = key([], "further host paths bound into the container")
    gpus_per_node: int = key(1, "GPUs a node has: the largest [sweep].gpus_per_node", minimum=1)
    cores_per_node: int | None = key(None, "CPUs the scheduler gives a node, which gpus_per_node x cpus_per_task "
                                     "must fit (slurm: unset, the site profile's cores_per_node x threads_per_core, "
                                     "or its cores with hint_nomultithread; local: this machine's)", minimum=1,
                                     unit="cores")
    max_concurrent_jobs: int | None = key(None, "jobs queued or running at once (unset: what the site's submit "
                                          "limit leaves beside the user's other jobs, else 4)", minimum=1)
    node_hour_budget: float | None = key(None, "nothing is submitted past it (--force to override); unset: no limit",
                                         minimum=0, unit="node-hours")
    signal_seconds: int = key(120, "USR1 this long before the time limit: checkpoint and requeue", minimum=0,
                              unit="s")
    rdzv_port: int = key(29500, "multi-node rendezvous port; a job adds its id mod 1000, so at most 64536 "
                         "(65535 - 999)", minimum=1024, maximum=64536)
    python: str = key("python3", "the interpreter jobs run, with torch and this project")
    env: dict = key({}, "environment variables of every job (over the site profile's)")
    share_group: str | None = key(None, "a Unix group (a project's, e.g. p200000) that may read the study's "
                                  "directories and files: 2750 / 0640 and that group; unset: private, 0700 / 0600, "
                                  "whatever the umask", rule=is_group_name, expected_words="a Unix group name")


CLUSTER_KEYS = keys_of("cluster", ClusterKeys)
CLUSTER_KEY_NAMES = frozenset(k.name for k in CLUSTER_KEYS)


def _strings(value: Any) -> bool:
    return all(isinstance(v, str) for v in value)


def _minutes(value: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value.values())


def _env_values(value: Any) -> bool:
    return all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value.values())


@dataclass(frozen=True)
class SiteKeys:
    """[site] of a site profile (sbatch_templates/sites/*.toml, or a study's own file named by [cluster].site):
    what a batch script must know about one Slurm installation; cockpit.study.sites.Site is this table
    read. 0 or "" means unknown where a figure has no default."""

    name: str = key(None, "the site's name", required=True)
    description: str = key("", "free text about the site")
    login_host: str = key("", "the login node's address")
    login_port: int = key(22, "the login node's SSH port", minimum=1)
    require_account: bool = key(False, "every job must name [cluster].account (-A)")
    require_qos: bool = key(False, "every job must name [cluster].qos (-q)")
    partitions: list = key([], "the partitions a study may name", rule=_strings, expected_words="a list of strings")
    gpu_partitions: list = key([], "the partitions with GPUs", rule=_strings, expected_words="a list of strings")
    default_partition: str = key("", "the partition used when [cluster].partition is unset")
    gpus_per_node: int = key(0, "GPUs a node has (0: unknown)", minimum=0)
    cores_per_node: int = key(0, "physical cores a node of the default partition has (0: unknown)", minimum=0,
                              unit="cores")
    threads_per_core: int = key(1, "hardware threads per core: Slurm counts each as a CPU unless a job asks "
                                "--hint=nomultithread", minimum=1)
    numa_nodes: int = key(0, "NUMA domains per node (0: unknown)", minimum=0)
    container_runtime: str = key("apptainer", "the container runtime's command")
    container_modules: list = key([], "environment modules a job loads before the container runtime",
                                  rule=_strings, expected_words="a list of strings")
    max_requeues: int = key(5, "requeues after the time limit's signal before a run is given up", minimum=0)
    storage_tool: str = key("df", "how the work directory's free space and quota are read: df (the file system's "
                            "free space), lfs (Lustre's `lfs quota` of the user, and df), quota (the `quota` "
                            "of the user, and df) or none", choices=("df", "lfs", "quota", "none"))
    qos_max_minutes: dict = key({}, "each QOS's wall-time limit in minutes, checked before submitting",
                                rule=_minutes, expected_words="a table of QOS = positive whole minutes")
    env: dict = key({}, "environment variables of every job on the site", rule=_env_values,
                    expected_words="a table of NAME = string or number")
    # link figures for the scaling prediction (docs/prediction.md)
    intra_node_busbw_gbs: float = key(0.0, "all-reduce bus bandwidth within a node (0: unknown)", minimum=0,
                                      unit="GB/s")
    inter_node_busbw_gbs: float = key(0.0, "all-reduce bus bandwidth across nodes (0: unknown)", minimum=0,
                                      unit="GB/s")
    allreduce_latency_us: float = key(0.0, "all-reduce latency per ring step (0: unknown)", minimum=0, unit="us")
    gpu_memory_gb: float = key(0.0, "one GPU's memory: the plan flags a configuration predicted above it "
                               "(0: unknown)", minimum=0, unit="GB")


SITE_KEYS = keys_of("site", SiteKeys)
