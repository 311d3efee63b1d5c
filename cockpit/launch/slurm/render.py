"""Study spec + configuration -> the text of one Slurm batch script.

All site knowledge comes from the study's [cluster] table and its site profile; this module only quotes
values and fills the template shipped in `sbatch_templates`. Nothing here imports torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

import sbatch_templates
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
from cockpit.launch.slurm.sites import Site, SiteError, check_cluster, site_for
from trainer import rundir
from trainer.rundir import SCHEMA_VERSION, SLURM_STDERR_FILE, SLURM_STDOUT_FILE

if TYPE_CHECKING:
    from cockpit.preflight.jobs import PreflightJob
    from cockpit.spec import Configuration, Study

SCRIPT_SUFFIX = ".sbatch"


def job_name(study: Study, cfg: Configuration) -> str:
    """Slurm job name: the study's name and the configuration id (readable in squeue)."""
    return f"{study.name}-{cfg.config_id}"


def job_comment(study: Study) -> str:
    """Slurm comment shared by every job of a study: what reconciliation filters on."""
    return f"hlm-study-{study.study_id}"


def render_script(study: Study, cfg: Configuration) -> str:
    """The batch script of one configuration. Raises UnsafeValueError (a ValueError naming the key) for a
    value that cannot be put into a script safely, and SiteError for what the site would refuse."""
    site = site_for(study)
    check_cluster(site, study.cluster, cfg.gpus_per_node)
    if not study.fits_node(cfg):
        raise SiteError(
            f"configuration {cfg.config_id} ({cfg.label}) needs {cfg.node_cores} cores per node "
            f"but [cluster].cores_per_node is {study.cluster.cores_per_node}"
        )
    return _environment().get_template(sbatch_templates.JOB_TEMPLATE).render(_context(study, cfg, site))


def render_preflight_script(study: Study, job: PreflightJob, config: dict[str, Any], directory: str) -> str:
    """The batch script of one preflight job: the job template's header, modules, environment, container
    and launcher for the job's shape, a few minutes long, never requeued, running `hlm-train preflight`."""
    from cockpit.preflight.jobs import time_limit_minutes

    site = site_for(study)
    check_cluster(site, study.cluster, job.gpus_per_node)
    context = _context(study, job.cfg, site, run_dir=directory)
    context.update(
        job_name=sbatch_value("[study].name", f"preflight-{study.name}-{job.dir_name}"),
        comment=sbatch_value("[study].name", f"hlm-preflight-{study.study_id}"),
        label=check_text("configuration", f"preflight {job.name}"),
        config_id="preflight",
        time_limit=str(time_limit_minutes(study)),
        signal_seconds=0,
        requeue=False,
        config_json=json.dumps(config, indent=2, sort_keys=True),
        env_file=rundir.PREFLIGHT_ENV_FILE,
        env_probe=sbatch_templates.template_text(sbatch_templates.ENV_PROBE).rstrip("\n"),
    )
    return _environment().get_template(sbatch_templates.PREFLIGHT_TEMPLATE).render(context)


def check_scripts(study: Study) -> None:
    """Render every runnable configuration's script in memory, so `cockpit plan` refuses what `cockpit run`
    would (UnsafeValueError or SiteError naming the key) before anything is written or submitted."""
    for cfg in study.runnable():
        render_script(study, cfg)


def render_study_scripts(study: Study, out_dir: str | Path) -> list[Path]:
    """Write `<config_id>.sbatch` for every runnable configuration into out_dir (for inspection or hand
    submission); returns the paths in matrix order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for cfg in study.runnable():
        path = out / f"{cfg.config_id}{SCRIPT_SUFFIX}"
        path.write_text(render_script(study, cfg), encoding="utf-8")
        path.chmod(0o755)
        paths.append(path)
    return paths


def submit_command(study: Study, cfg: Configuration, script_path: str) -> str:
    """The shell line that submits a rendered script: the run directory must exist before Slurm opens the
    job's log files in it, and sbatch runs from there so relative log paths land in it too."""
    run_dir = path_expr("[cluster].workdir", study.run_dir(cfg))
    return f"mkdir -p {run_dir} && cd {run_dir} && sbatch --parsable {path_expr('script', script_path)}"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        loader=jinja2.FunctionLoader(sbatch_templates.template_text),
    )


def _context(study: Study, cfg: Configuration, site: Site, run_dir: str | None = None) -> dict[str, Any]:
    cluster = study.cluster
    run_dir = run_dir or study.run_dir(cfg)
    literal = is_literal_path(cluster.workdir)
    if literal and "%" in run_dir:
        raise UnsafeValueError("[cluster].workdir", cluster.workdir, "contains '%', which Slurm expands in log paths")
    # Absolute log paths where #SBATCH can carry them; otherwise (a $VAR, a space, quotes) names relative to
    # the run directory, which sbatch runs from (submit_command cds into it).
    stdout_path, stderr_path = SLURM_STDOUT_FILE, SLURM_STDERR_FILE
    check_text("[cluster].workdir", run_dir)
    if literal and is_sbatch_safe(run_dir):
        stdout_path = sbatch_value("[cluster].workdir", f"{run_dir}/{SLURM_STDOUT_FILE}")
        stderr_path = sbatch_value("[cluster].workdir", f"{run_dir}/{SLURM_STDERR_FILE}")
    gpus = cfg.gpus_per_node
    gpu_request = f"--gres=gpu:{gpus}" if cluster.gres_style == "gres" else f"--gpus-per-node={gpus}"
    container = cluster.container
    modules = list(cluster.modules)
    if container:
        modules += [m for m in site.container_modules if m not in modules]
    env = {**site.env, **cluster.env}
    return {
        "study_name": check_text("[study].name", study.name),
        "config_id": cfg.config_id,
        "label": check_text("configuration", cfg.label),
        "job_name": sbatch_value("[study].name", job_name(study, cfg)),
        "comment": sbatch_value("[study].name", job_comment(study)),
        "account": sbatch_value("[cluster].account", cluster.account) if cluster.account else "",
        "qos": sbatch_value("[cluster].qos", cluster.qos) if cluster.qos else "",
        "partition": _partition(cluster.partition or site.default_partition),
        "time_limit": sbatch_value("[cluster].time_limit", cluster.time_limit),
        "nodes": int(cfg.nodes),
        "gpus_per_node": int(gpus),
        "cpus_per_task": int(cfg.cpus_per_task),
        "gpu_request": gpu_request,
        "hint_nomultithread": bool(cluster.hint_nomultithread),
        "stdout_path": stdout_path,
        "stderr_path": stderr_path,
        "literal_workdir": literal,
        "signal_seconds": int(cluster.signal_seconds),
        "run_dir": path_expr("[cluster].workdir", run_dir),
        "token_cache": path_expr("[data].token_cache", study.token_cache),
        "modules": [shell_quote("[cluster].modules", m) for m in modules],
        "env": [(env_name("[cluster.env]", k), shell_quote(f"[cluster.env].{k}", v)) for k, v in env.items()],
        "config_json": json.dumps({"schema_version": SCHEMA_VERSION, **study.run_config(cfg)}, indent=2, sort_keys=True),
        "container": path_expr("[cluster].container", container) if container else "",
        "container_runtime": shell_quote("site container_runtime", site.container_runtime),
        "binds": _binds(study, cfg),
        "python": path_expr("[cluster].python", cluster.python),
        "rdzv_port": int(cluster.rdzv_port),
        "max_requeues": int(site.max_requeues),
        "requeue": True,
    }


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
