"""Site profiles are data; what a site would refuse is refused before submission, naming the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cockpit.launch.slurm.kind import SLURM_KIND
from cockpit.launch.slurm.render import render_script
from cockpit.study.sites import SiteError, builtin_sites, load_site, parse_site
from cockpit.study.spec import SpecError, load_study, parse_study

HERE = Path(__file__).parent


def test_builtin_profiles_load_from_the_package() -> None:
    assert {"generic", "meluxina"} <= set(builtin_sites())
    mel = load_site("meluxina")
    assert (mel.login_host, mel.login_port) == ("login.lxp.lu", 8822)
    assert mel.require_account and mel.require_qos and mel.gpus_per_node == 4
    assert set(mel.partitions) == {"cpu", "gpu", "fpga", "largemem"}
    assert mel.qos_max_minutes == {"test": 30, "short": 360, "default": 2880}
    assert mel.container_modules == ("Apptainer",)
    assert not load_site("generic").require_account


def test_unknown_site_lists_the_known_ones() -> None:
    with pytest.raises(SiteError, match=r"\[cluster\]\.site: unknown site 'nowhere'; built-in sites are generic, meluxina"):
        load_site("nowhere")


@pytest.mark.parametrize("kind", ["slurm", "local"])
def test_a_study_naming_an_unknown_site_is_refused_naming_the_file_and_the_profiles_folder(tmp_path: Path, kind):
    slurm_only = {k.name: None for k in SLURM_KIND.keys} if kind == "local" else {}  # a local study takes none
    with pytest.raises(SpecError) as refused:
        _meluxina(tmp_path, kind=kind, site="nosuch", **slurm_only)
    assert str(refused.value) == (
        "meluxina.toml: [cluster].site: unknown site 'nosuch'; built-in sites are generic, meluxina (the profiles in "
        "sbatch_templates/sites/), or give the path of a .toml profile (relative to the study file)")
    with pytest.raises(SpecError, match=r"^meluxina\.toml: \[cluster\]\.site: cannot read site profile .*generic\.toml"):
        _meluxina(tmp_path, site="generic.toml")


@pytest.mark.parametrize(("nomultithread", "cores"), [(False, 128), (True, 64)])
def test_cores_per_node_comes_from_the_site_profile(tmp_path: Path, nomultithread: bool, cores: int) -> None:
    """MeluXina's GPU nodes: 64 cores x 2 threads, each thread a Slurm CPU unless --hint=nomultithread."""
    mel = load_site("meluxina")
    assert (mel.cores_per_node, mel.threads_per_core) == (64, 2)
    study = _meluxina(tmp_path, cores_per_node=None, hint_nomultithread=nomultithread)
    assert study.cluster.cores_per_node == cores
    assert _meluxina(tmp_path, cores_per_node=32).cluster.cores_per_node == 32  # the study's own figure stands


def test_examples_meluxina_takes_its_cores_from_the_profile() -> None:
    example = tomllib.loads((HERE.parents[1] / "examples" / "meluxina.toml").read_text())
    assert "cores_per_node" not in example["cluster"] and example["cluster"]["site"] == "meluxina"
    assert load_study(HERE.parents[1] / "examples" / "meluxina.toml").cluster.cores_per_node == 128


def test_a_slurm_study_on_a_profile_without_cores_must_give_them(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as refused:
        _meluxina(tmp_path, site="generic", cores_per_node=None)
    assert str(refused.value) == ('meluxina.toml: [cluster].cores_per_node is required when kind = "slurm" and the site '
                                  'profile (sbatch_templates/sites/generic.toml) does not give cores_per_node')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[site]\ndescription = "x"\n', r"x\.toml: \[site\]\.name is required"),
        ('[site]\nname = "x"\ngpus_per_nodes = 4\n', r"x\.toml: \[site\]\.gpus_per_nodes is not a known key \(did you mean 'gpus_per_node'\?\)"),
        # the registry's words, as a study file's refusals use them
        ('[site]\nname = "x"\nlogin_port = "8822"\n', r"x\.toml: \[site\]\.login_port: expected an integer >= 1, got '8822'"),
        ('[site]\nname = "x"\n[site.qos_max_minutes]\ntest = 0\n',
         r"\[site\]\.qos_max_minutes: expected a table of QOS = positive whole minutes, got \{'test': 0\}"),
        ("[site\n", r"x\.toml: not valid TOML"),
    ],
)
def test_bad_profiles_are_refused_with_file_and_key(text: str, message: str) -> None:
    with pytest.raises(SiteError, match=message):
        parse_site(text, "x.toml")


def _meluxina(tmp_path: Path, **cluster):
    raw = tomllib.loads((HERE / "studies" / "meluxina.toml").read_text())
    raw["cluster"].update(cluster)
    for key in [k for k, v in cluster.items() if v is None]:
        raw["cluster"].pop(key, None)
    return parse_study(raw, tmp_path / "meluxina.toml")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"partition": "cpu"}, r"\[cluster\]\.partition 'cpu' has no GPUs on the meluxina site"),
        ({"partition": "gpu-big"}, r"\[cluster\]\.partition 'gpu-big' is not a partition of the meluxina site"),
        ({"qos": "test", "time_limit": "00:45:00"}, r"\[cluster\]\.time_limit 00:45:00 exceeds the 30 minutes QOS 'test'"),
    ],
)
def test_meluxina_refusals_before_submission(tmp_path: Path, change: dict, message: str) -> None:
    study = _meluxina(tmp_path, **change)
    with pytest.raises(SiteError, match=message):
        render_script(study, study.matrix()[0])


def test_a_study_may_bring_its_own_profile(tmp_path: Path) -> None:
    (tmp_path / "mysite.toml").write_text(
        '[site]\nname = "mysite"\nrequire_account = true\ncontainer_modules = ["singularity/4"]\nmax_requeues = 2\n'
        '[site.env]\nNCCL_IB_DISABLE = 1\n'
    )
    study = _meluxina(tmp_path, site="mysite.toml")
    text = render_script(study, study.matrix()[0])
    assert "module load singularity/4" in text and "module load Apptainer" not in text
    assert "export NCCL_IB_DISABLE=1" in text and ">= 2 ))" in text


def test_a_configuration_larger_than_a_node_is_refused(tmp_path: Path) -> None:
    raw = tomllib.loads((HERE / "studies" / "meluxina.toml").read_text())
    raw["train"]["cpus_per_task"] = 64
    study = parse_study(raw, tmp_path / "meluxina.toml")
    cfg = next(c for c in study.matrix() if c.gpus_per_node == 4)
    with pytest.raises(SiteError, match=r"needs 256 cores per node but \[cluster\]\.cores_per_node is 128"):
        render_script(study, cfg)
