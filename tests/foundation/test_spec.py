"""Study spec: the examples load, the matrix is right, every bad input names file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.store.recorded import study_plan
from cockpit.study.spec import SpecError, load_study

REPO = Path(__file__).resolve().parents[2]
MELUXINA = REPO / "examples" / "meluxina.toml"


def write(tmp_path: Path, text: str, name: str = "study.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


MINIMAL = """
[study]
name = "s"
[train]
steps = 10
"""


def test_meluxina_example_reproduces_the_published_matrix():
    study = load_study(MELUXINA)
    matrix = study.matrix()
    assert len(matrix) == 8 * 3 * 7 * 2 == 336
    assert sorted(study.sweep["window"]) == list(range(128, 1025, 128))
    assert study.sweep["cpus_per_task"] == [1, 2, 4, 16, 32, 64, 128]
    assert len({c.config_id for c in matrix}) == 336
    groups = {c.group_id for c in matrix}
    assert len(groups) == 336 // 3
    baselines = [c for c in matrix if c.is_baseline]
    assert len(baselines) == len(groups)
    # 2 GPUs x 128 cores and 4 GPUs x 64/128 cores do not fit a 128-core node.
    assert len(study.runnable()) == 336 - 8 * 2 * 3
    assert study_plan(study).estimate == pytest.approx(288 * 0.5)


def test_config_ids_are_stable_and_groups_ignore_scale():
    a = load_study(MELUXINA).matrix()
    b = load_study(MELUXINA).matrix()
    assert [c.config_id for c in a] == [c.config_id for c in b]
    one, four = a[0], next(c for c in a if c.gpus_per_node == 4 and c.group_id == a[0].group_id)
    assert one.group_id == four.group_id and one.config_id != four.config_id
    # The id is a digest of the values, pinned so a change in hashing is noticed (it would orphan old runs).
    assert len(one.config_id) == 10 and int(one.config_id, 16) >= 0


def test_local_demo_defaults_to_synthetic(tmp_path):
    study = load_study(REPO / "examples" / "local-demo.toml")
    assert study.synthetic_default
    assert study.datasets["synthetic"].synthetic and study.datasets["synthetic"].path is None
    assert len(study.matrix()) == 4
    cfg = study.matrix()[0]
    run = study.run_config(cfg)
    assert run["config_id"] == cfg.config_id and run["synthetic"] is True
    assert run["train"]["epochs"] == 1 and "steps" not in run["train"] and "window" not in run["train"]


def test_finetune_points_at_the_foundation_baseline_model():
    study = load_study(MELUXINA)
    ft = next(c for c in study.matrix() if c.mode == "finetune" and c.gpus_per_node == 4)
    init = study.run_config(ft)["train"]["init_checkpoint"]
    foundation = next(
        c for c in study.matrix()
        if c.mode == "foundation" and c.is_baseline and c.window == ft.window and c.cpus_per_task == ft.cpus_per_task
    )
    assert init == f"{study.run_dir(foundation)}/model.pt"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (("gpus_per_node = [1, 2, 4]", "gpus_per_node = [1, 8]"),
         "meluxina.toml: [sweep].gpus_per_node contains 8 but [cluster].gpus_per_node is 4"),
        (("lr = 3e-4", "lr = 3e-4\nlearning_rate = 1"), "meluxina.toml: [train].learning_rate is not a known key"),
        (('qos = "default"', 'qos = 3'), "meluxina.toml: [cluster].qos: expected a string, got 3"),
        (('mode = ["foundation", "finetune"]', 'mode = ["pretrain"]'), "[sweep].mode: expected one of foundation, finetune, got 'pretrain'"),
        (("[model]", "[modle]"), "meluxina.toml: unknown section [modle]"),
        (('time_limit = "02:00:00"', 'time_limit = "two hours"'), "[cluster].time_limit 'two hours' is not a Slurm time"),
        (('time_limit = "02:00:00"', 'time_limit = "99:99:99"'),
         "meluxina.toml: [cluster].time_limit '99:99:99': expected a Slurm time (MM, MM:SS, HH:MM:SS or D-HH:MM:SS) "
         "with minutes 0-59, found 99 minutes"),
        (('time_limit = "02:00:00"', 'time_limit = "1-24:00:00"'), "with hours 0-23, found 24 hours"),
        (('time_limit = "02:00:00"', 'time_limit = "90:60"'), "with seconds 0-59, found 60 seconds"),
        (("signal_seconds = 120", "signal_seconds = 120\nrdzv_port = 70000"),
         "meluxina.toml: [cluster].rdzv_port: expected an integer in [1024, 64536], got 70000"),
        (("heads = 6", "heads = 5"), "model.d_model (384) must be divisible by model.heads (5)"),
        (('workdir = "/project/home/p200000/hlm-scaling"', '# no workdir'), "[cluster].workdir is required when kind = \"slurm\""),
        (("window = [128,", "window = [0, 128,"), "[sweep].window: expected an integer >= 2, got 0"),
        (("window = [128,", "window = [128, 128,"), "[sweep].window repeats a value"),
    ],
)
def test_bad_study_files_name_file_and_key(tmp_path, patch, message):
    text = MELUXINA.read_text()
    old, new = patch
    assert old in text
    path = write(tmp_path, text.replace(old, new, 1), "meluxina.toml")
    with pytest.raises(SpecError) as info:
        load_study(path)
    assert message in str(info.value)


def test_unknown_dataset_in_sweep(tmp_path):
    path = write(tmp_path, MINIMAL + '[data.datasets]\nmitdb = "/x"\n[sweep]\ndataset = ["nsrdb"]\n')
    with pytest.raises(SpecError, match=r"\[sweep\].dataset contains 'nsrdb', which is not in \[data.datasets\] \(mitdb\)"):
        load_study(path)


def test_malformed_toml_and_missing_file(tmp_path):
    with pytest.raises(SpecError, match="study.toml: not valid TOML"):
        load_study(write(tmp_path, "[study\nname = 1"))
    with pytest.raises(SpecError, match="nope.toml: no such study file"):
        load_study(tmp_path / "nope.toml")


def test_steps_or_epochs_required(tmp_path):
    with pytest.raises(SpecError, match=r"train: give exactly one of steps or epochs"):
        load_study(write(tmp_path, '[study]\nname = "s"\n'))


def test_local_cannot_sweep_nodes(tmp_path):
    with pytest.raises(SpecError, match="several nodes"):
        load_study(write(tmp_path, MINIMAL + "[sweep]\nnodes = [1, 2]\n"))


def test_plan_command_prints_matrix_and_estimate(capsys):
    from cockpit.cli import main

    assert main(["plan", str(MELUXINA)]) == 0
    out = capsys.readouterr().out
    assert "336 configurations" in out
    assert "112 baseline groups" in out
    assert "288 jobs to submit" in out
    assert "estimated 144.0 node-hours" in out
    assert out.count("baseline") >= 112


def test_plan_command_reports_spec_errors(tmp_path, capsys):
    from cockpit.cli import main

    path = write(tmp_path, "[study]\nname = 's'\n[train]\nstep = 3\n", "bad.toml")
    assert main(["plan", str(path)]) == 2
    assert "bad.toml: [train].step is not a known key" in capsys.readouterr().err


@pytest.mark.parametrize("limit", ["48:00:00", "90:00", "1-23:59:59", "2-12", "30", "1-0"])
def test_slurm_times_slurm_accepts_are_accepted(tmp_path, limit):
    study = load_study(write(tmp_path, MINIMAL + f'[cluster]\ntime_limit = "{limit}"\n'))
    assert study.cluster.time_limit == limit


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('site = "nosuch"', "study.toml: [cluster].site: unknown site 'nosuch'; built-in sites are generic, meluxina"),
        ('share_group = "nosuchgroup"', "study.toml: [cluster].share_group 'nosuchgroup': expected a Unix group of this "
                                        'machine (kind = "local": the files are made here; yours: '),
    ],
)
def test_a_local_study_is_refused_what_this_machine_cannot_give(tmp_path, line, message):
    with pytest.raises(SpecError) as refused:
        load_study(write(tmp_path, MINIMAL + f"[cluster]\n{line}\n"))
    assert str(refused.value).startswith(message)


def test_a_repeated_baseline_adds_its_runs_to_the_matrix_and_keeps_every_other_id(tmp_path):
    """[study].baseline_runs = 3: each 1x1 baseline is followed by its runs 2 and 3, each its own id and run
    directory, labelled `run 2`, in the baseline's group; the other configurations and run 1 keep the ids they
    had without the key, and a bad value names the file and the key."""
    sweep = "\n[sweep]\ngpus_per_node = [1, 2]\nwindow = [64, 128]\n[cluster]\ngpus_per_node = 2\n"
    plain = load_study(write(tmp_path, MINIMAL + sweep))
    text = MINIMAL.replace('name = "s"', 'name = "s"\nbaseline_runs = 3') + sweep
    study = load_study(write(tmp_path, text, "repeated.toml"))
    matrix = study.matrix()
    assert [(c.window, c.workers, c.run) for c in matrix] == [
        (64, 1, 1), (64, 1, 2), (64, 1, 3), (64, 2, 1), (128, 1, 1), (128, 1, 2), (128, 1, 3), (128, 2, 1)]
    assert [c.config_id for c in matrix if c.run == 1] == [c.config_id for c in plain.matrix()]
    assert len({c.config_id for c in matrix}) == len(matrix) == len({study.run_dir(c) for c in matrix})
    first, second, third, two = matrix[:4]
    assert first.group_id == second.group_id == third.group_id == two.group_id
    assert (second.label, third.label) == (f"{first.label} run 2", f"{first.label} run 3")
    assert study.baseline_of(third) == first and study.baseline_runs_of(two) == [first, second, third]
    assert study.run_config(second) == {**study.run_config(first), "config_id": second.config_id}
    for bad, found in (("0", "0"), ('"3"', "'3'")):
        path = write(tmp_path, MINIMAL.replace('name = "s"', f'name = "s"\nbaseline_runs = {bad}'), "bad.toml")
        with pytest.raises(SpecError, match=rf"bad.toml: \[study\].baseline_runs: expected an integer >= 1, got {found}"):
            load_study(path)
