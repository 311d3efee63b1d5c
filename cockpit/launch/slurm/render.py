"""Study spec + configuration -> the text of one Slurm batch script.

All site knowledge comes from the study's [cluster] table and its site profile; this module only quotes
values and fills the template shipped in `sbatch_templates`. Nothing here imports torch.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

import sbatch_templates
from cockpit.launch.slurm.kind import SlurmKeys
from cockpit.launch.slurm.quoting import (
    UnsafeValueError,
    check_text,
    env_name,
    is_literal_path,
    is_sbatch_safe,
    path_expr,
    sbatch_value,
    shell_quote,
)
from cockpit.launch.slurm.site_checks import check_cluster
from cockpit.study.cluster_kinds import own_keys
from cockpit.study.sites import Site, SiteError, site_for
from runcontract import disk_space
from runcontract.contract import (
    EXIT_DISK_FULL,
    PREFLIGHT_ENV_FILE,
    SCHEMA_VERSION,
    SLURM_STDERR_FILE,
    SLURM_STDOUT_FILE,
)
from runcontract.modes import Sharing

if TYPE_CHECKING:
    from cockpit.preflight.jobs import PreflightJob
    from cockpit.study.spec import Configuration, Study

SCRIPT_SUFFIX = ".sbatch"


def job_name(study: Study, cfg: Configuration) -> str:
    """Slurm job name: the study's name and the configuration id (readable in squeue)."""
    return f"{study.name}-{cfg.config_id}"


def job_comment(study: Study) -> str:
    """Slurm comment shared by every job of a study: what reconciliation filters on."""
    return f"hlm-study-{study.study_id}"


def render_script(study: Study, cfg: Configuration, shared: dict[str, Any] | None = None) -> str:
    """The batch script of one configuration. Raises UnsafeValueError (a ValueError naming the key) for a
    value that cannot be put into a script safely, and SiteError for what the site would refuse.
    ``shared``: the study's own values (study_context), when rendering many configurations of one study."""
    context = _config_context(study, cfg, study_context(study) if shared is None else shared)
    context["config_json"] = _config_json(study, cfg)
    context.update(_workload_context(study, cfg))
    return _environment().get_template(sbatch_templates.JOB_TEMPLATE).render(context)


def render_preflight_script(study: Study, job: PreflightJob, config: dict[str, Any], directory: str) -> str:
    """The batch script of one preflight job: the job template's header, modules, environment, container
    and launcher for the job's shape, a few minutes long, never requeued, running `hlm-train preflight`."""
    from cockpit.preflight.jobs import time_limit_minutes

    context = _config_context(study, job.cfg, study_context(study), run_dir=directory)
    context.update(
        job_name=sbatch_value("[study].name", f"preflight-{study.name}-{job.dir_name}"),
        comment=sbatch_value("[study].name", f"hlm-preflight-{study.study_id}"),
        label=check_text("configuration", f"preflight {job.name}"),
        config_id="preflight",
        time_limit=str(time_limit_minutes(study)),
        signal_seconds=0,
        requeue=False,
        config_json=json.dumps(config, indent=2, sort_keys=True),
        env_file=PREFLIGHT_ENV_FILE,
        env_probe=sbatch_templates.template_text(sbatch_templates.ENV_PROBE).rstrip("\n"),
    )
    return _environment().get_template(sbatch_templates.PREFLIGHT_TEMPLATE).render(context)


def check_scripts(study: Study) -> None:
    """Refuse now what `cockpit run` would refuse (UnsafeValueError or SiteError naming the key), before
    anything is written or submitted: the study's values are judged once, each runnable configuration's
    own values (name, label, run directory, shape) once each, and one script is rendered whole. A
    script differs from another only by those judged values, so a plan of 10,000 configurations does not
    render 10,000 scripts to learn what one render and the checks say."""
    shared = study_context(study)
    configs = study.runnable()
    for cfg in configs:
        _config_context(study, cfg, shared)
    if configs:
        render_script(study, configs[0], shared)


def render_study_scripts(study: Study, out_dir: str | Path) -> list[Path]:
    """Write `<config_id>.sbatch` for every runnable configuration into out_dir (for inspection or hand
    submission); returns the paths in matrix order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    shared = study_context(study)
    for cfg in study.runnable():
        path = out / f"{cfg.config_id}{SCRIPT_SUFFIX}"
        path.write_text(render_script(study, cfg, shared), encoding="utf-8")
        path.chmod(script_mode(study))
        paths.append(path)
    return paths


def submit_command(study: Study, cfg: Configuration, script_path: str) -> str:
    """The shell line that submits a rendered script: the run directory must exist before Slurm opens the
    job's log files in it (made private, or shared with the study's group: dirs_command), and sbatch runs
    from there so relative log paths land in it too."""
    run_dir = path_expr("[cluster].workdir", study.run_dir(cfg))
    return f"{dirs_command(study, study.run_dir(cfg))} && cd {run_dir} && sbatch --parsable {path_expr('script', script_path)}"


def dirs_command(study: Study, run_dir: str, *extra: str, study_dir: str | None = None, script: str = "") -> str:
    """The shell line that makes a run directory and the study's directories above it (plus ``extra``, shell
    words such as "$TOKEN_CACHE") with the study's file modes, whatever the login shell's umask: 0700 and
    umask 077, or with [cluster].share_group 2750, that group and umask 027 (trainer.Sharing; the
    batch script keeps the umask for everything the job writes). ``study_dir``: the study's directory as
    run_dir spells it (the backend's, with the work directory expanded), by default the study file's.
    ``script``: a batch script already uploaded there, given the study's group too."""
    sharing = Sharing(study.cluster.share_group)
    study_dir = study_dir or study.study_dir()
    paths = [study_dir]
    if run_dir.startswith(f"{study_dir}/"):
        parts = run_dir[len(study_dir) + 1:].split("/")
        paths += [f"{study_dir}/{'/'.join(parts[:i])}" for i in range(1, len(parts) + 1)]
    else:
        paths.append(run_dir)
    words = " ".join([*(path_expr("[cluster].workdir", p) for p in paths), *extra])
    line = f"umask {sharing.umask:03o} && mkdir -p {words}"
    if sharing.group:
        group = shell_quote("[cluster].share_group", sharing.group)
        line += f" && chgrp {group} {words}"
        if script:
            line += f" {path_expr('script', script)}"
    return f"{line} && chmod {sharing.dir_mode:o} {words}"


def script_mode(study: Study) -> int:
    """The batch script's mode, as every file of the study (sbatch reads it; nobody executes it)."""
    return Sharing(study.cluster.share_group).file_mode


@functools.cache
def _environment() -> jinja2.Environment:
    """One environment for the process: it compiles each template once and keeps it (the templates are
    package data that never change while the cockpit runs), so a plan of 10,000 scripts renders 10,000
    times but compiles twice."""
    return jinja2.Environment(
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        loader=jinja2.FunctionLoader(sbatch_templates.template_text),
    )


def study_context(study: Study) -> dict[str, Any]:
    """The template values every script of a study shares (account, modules, environment, container, ...),
    judged once: raises UnsafeValueError naming the key, or SiteError for a site that does not load."""
    cluster = study.cluster
    slurm = own_keys(SlurmKeys, cluster)
    site = site_for(study)
    check_text("[cluster].workdir", cluster.workdir)  # named before the token cache, which derives from it
    literal = is_literal_path(cluster.workdir)
    if literal and "%" in cluster.workdir:
        raise UnsafeValueError("[cluster].workdir", cluster.workdir, "contains '%', which Slurm expands in log paths")
    container = cluster.container
    modules = list(cluster.modules)
    if container:
        modules += [m for m in site.container_modules if m not in modules]
    env = {**site.env, **cluster.env, **study.workload.env()}
    return {
        "site": site,
        "study_name": check_text("[study].name", study.name),
        "comment": sbatch_value("[study].name", job_comment(study)),
        "account": sbatch_value("[cluster].account", slurm.account) if slurm.account else "",
        "qos": sbatch_value("[cluster].qos", slurm.qos) if slurm.qos else "",
        "partition": _partition(slurm.partition or site.default_partition),
        "time_limit": sbatch_value("[cluster].time_limit", cluster.time_limit),
        "hint_nomultithread": bool(slurm.hint_nomultithread),
        "literal_workdir": literal,
        "signal_seconds": int(cluster.signal_seconds),
        "token_cache": path_expr("[data].token_cache", study.token_cache),
        "modules": [shell_quote("[cluster].modules", m) for m in modules],
        "env": [(env_name("[cluster.env]", k), shell_quote(f"[cluster.env].{k}", v)) for k, v in env.items()],
        "container": path_expr("[cluster].container", container) if container else "",
        "container_runtime": shell_quote("site container_runtime", site.container_runtime),
        "python": path_expr("[cluster].python", cluster.python),
        "rdzv_port": int(cluster.rdzv_port),
        "max_requeues": int(site.max_requeues),
        "disk_full_code": EXIT_DISK_FULL,
        "room_bytes": disk_space.ROOM_BYTES,
        "requeue": True,
    }


def _config_context(study: Study, cfg: Configuration, shared: dict[str, Any],
                    run_dir: str | None = None) -> dict[str, Any]:
    """The template values of one configuration over the study's (study_context); raises as render_script.
    ``run_dir``: a preflight job's directory (its shape is judged by the site, not by the node's cores)."""
    site: Site = shared["site"]
    gpus = cfg.gpus_per_node
    check_cluster(site, study.cluster, gpus)
    if run_dir is None and not study.fits_node(cfg):
        raise SiteError(
            f"configuration {cfg.config_id} ({cfg.label}) needs {cfg.node_cores} cores per node "
            f"but [cluster].cores_per_node is {study.cluster.cores_per_node}"
        )
    run_dir = run_dir or study.run_dir(cfg)
    literal = shared["literal_workdir"]
    if literal and "%" in run_dir:
        raise UnsafeValueError("[cluster].workdir", run_dir, "contains '%', which Slurm expands in log paths")
    # Absolute log paths where #SBATCH can carry them; otherwise (a $VAR, a space, quotes) names relative to
    # the run directory, which sbatch runs from (submit_command cds into it).
    stdout_path, stderr_path = SLURM_STDOUT_FILE, SLURM_STDERR_FILE
    check_text("[cluster].workdir", run_dir)
    if literal and is_sbatch_safe(run_dir):
        stdout_path = sbatch_value("[cluster].workdir", f"{run_dir}/{SLURM_STDOUT_FILE}")
        stderr_path = sbatch_value("[cluster].workdir", f"{run_dir}/{SLURM_STDERR_FILE}")
    gres = own_keys(SlurmKeys, study.cluster).gres_style
    gpu_request = f"--gres=gpu:{gpus}" if gres == "gres" else f"--gpus-per-node={gpus}"
    return {
        **shared,
        "config_id": cfg.config_id,
        "label": check_text("configuration", cfg.label),
        "job_name": sbatch_value("[study].name", job_name(study, cfg)),
        "nodes": int(cfg.nodes),
        "gpus_per_node": int(gpus),
        "cpus_per_task": int(cfg.cpus_per_task),
        "gpu_request": gpu_request,
        "stdout_path": stdout_path,
        "stderr_path": stderr_path,
        "run_dir": path_expr("[cluster].workdir", run_dir),
        "make_dirs": dirs_command(study, run_dir, '"$TOKEN_CACHE"'),
        "binds": _binds(study, cfg),
    }


def _workload_context(study: Study, cfg: Configuration) -> dict[str, Any]:
    """The workload's launch line, each word quoted or refused naming its key (empty: the HLM trainer's own
    line in the template), and the variable that tells the runcontract library its run directory."""
    words = study.workload.batch_words(cfg.all_values())
    if words is None:
        return {"workload_argv": "", "run_dir_env": ""}
    quoted = [path_expr(key, value) if is_path else shell_quote(key, value) for key, value, is_path in words]
    return {"workload_argv": " ".join(quoted), "run_dir_env": env_name("[workload]", study.workload.run_dir_env)}


def _config_json(study: Study, cfg: Configuration) -> str:
    return json.dumps({"schema_version": SCHEMA_VERSION, **study.run_config(cfg)}, indent=2, sort_keys=True)


def _partition(partition: str | None) -> str:
    return sbatch_value("[cluster].partition", partition) if partition else ""


def _binds(study: Study, cfg: Configuration) -> list[str]:
    """Host paths the container must see: the work directory, the token cache, the dataset, extra binds."""
    paths: list[tuple[str, str]] = [("[cluster].workdir", study.cluster.workdir), ("[data].token_cache", study.token_cache)]
    dataset = study.datasets[cfg.dataset]
    if dataset.path:
        paths.append((f"[data.datasets].{cfg.dataset}.path", dataset.path))
    paths += [("[cluster].container_binds", b) for b in study.cluster.container_binds]
    seen: list[str] = []
    for key, path in paths:
        word = path_expr(key, path)
        if word not in seen:
            seen.append(word)
    return seen
