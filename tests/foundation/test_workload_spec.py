"""[workload] in a study file: the HLM trainer by default with every id unchanged; a script workload's keys sweep,
validate in one line naming file and key, enter the configuration ids and labels, and fill the command's
placeholders as argv elements."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.study.spec import SpecError, load_study
from cockpit.workloads import WORKLOADS
from cockpit.workloads.hlm import HlmWorkload
from cockpit.workloads.script import ScriptWorkload

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
[study]
name = "s"
[cluster]
gpus_per_node = 2
[workload]
kind = "script"
command = ["train.py", "--lr", "{lr}", "--pin", "{pin_memory}", "--batch", "{batch_size}", "--name={name}x"]
files = ["train.py"]
mode = "hooks"
env = {DATA_SEED = "3"}
[workload.keys]
lr = {type = "float", default = 0.1, minimum = 0, maximum = 10}
pin_memory = {type = "bool", default = false}
name = {type = "str", default = "a b; rm -rf ~", choices = ["a b; rm -rf ~", "plain"]}
[sweep]
lr = [0.1, 0.5]
pin_memory = [false, true]
gpus_per_node = [1, 2]
"""


def study_file(tmp_path: Path, text: str = SCRIPT) -> Path:
    (tmp_path / "train.py").write_text("print('hi')\n")
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def test_the_hlm_trainer_is_the_default_and_its_ids_do_not_move():
    study = load_study(REPO / "examples" / "local-demo.toml")
    assert isinstance(study.workload, HlmWorkload)
    assert all(cfg.keys == () for cfg in study.matrix())
    assert "workload" not in study.run_config(study.matrix()[0])
    assert set(WORKLOADS) == {"hlm", "script"}


def test_script_keys_sweep_enter_ids_and_labels(tmp_path: Path):
    study = load_study(study_file(tmp_path))
    assert isinstance(study.workload, ScriptWorkload)
    matrix = study.matrix()
    assert len(matrix) == 2 * 2 * 2
    assert len({c.config_id for c in matrix}) == 8
    assert len({c.group_id for c in matrix}) == 4  # the scale axes share a group, the keys do not
    again = load_study(study_file(tmp_path))
    assert [c.config_id for c in again.matrix()] == [c.config_id for c in matrix]  # stable across loads
    cfg = next(c for c in matrix if c.key_values == {"lr": 0.5, "pin_memory": True, "name": "a b; rm -rf ~"}
               and c.gpus_per_node == 2)
    assert cfg.label.endswith("lr=0.5 name=a b; rm -rf ~ pin_memory=true")
    assert study.baseline_of(cfg).key_values == cfg.key_values and study.baseline_of(cfg).is_baseline
    assert study.run_config(cfg)["keys"] == {"lr": 0.5, "pin_memory": True, "name": "a b; rm -rf ~"}
    assert study.run_config(cfg)["workload"]["mode"] == "hooks"


def test_the_command_gets_values_as_argv_elements_under_the_hooks_wrapper(tmp_path: Path):
    study = load_study(study_file(tmp_path))
    cfg = next(c for c in study.matrix() if c.key_values["lr"] == 0.5 and c.key_values["pin_memory"])
    args = study.workload.worker_args(cfg.all_values(), "/runs/x")
    assert args == ["-m", "runcontract.attach", str(tmp_path / "train.py"), "--lr", "0.5", "--pin", "true",
                    "--batch", "32", "--name=a b; rm -rf ~x"]
    assert study.workload.run_env("/runs/x") == {"DATA_SEED": "3", "RUNCONTRACT_RUN_DIR": "/runs/x"}
    assert study.workload.prepare_args("/runs/x") is None


BAD = [
    (("lr = [0.1, 0.5]", "lr = [0.1, 11]"), "study.toml: [sweep].lr: expected a number in [0, 10], got 11"),
    (("pin_memory = [false, true]", "pin_memory = [false, 1]"), "study.toml: [sweep].pin_memory: expected true or false, got 1"),
    (("lr = [0.1, 0.5]", "lrr = [0.1]"), "study.toml: [sweep].lrr is not a known key (did you mean 'lr'?)"),
    (("[sweep]", "[sweep]\nwindow = [128]"),
     "study.toml: [sweep].window is the HLM trainer's axis; a script workload takes precision, batch_size, "
     "cpus_per_task, strategy, gpus_per_node, nodes and its own [workload.keys]"),
    (('"{lr}"', '"{lrr}"'), "study.toml: [workload].command[2]: {lrr} is neither a key of [workload.keys] nor an axis "
                            "a script takes (did you mean 'lr'?)"),
    (('"--name={name}x"', '"--name={name.__class__}"'), "study.toml: [workload].command[7]: expected {key} placeholders"),
    (('mode = "hooks"', 'mode = "hooks"\nwork = "weak"'),
     "study.toml: [workload].work: expected one of per_worker, total, got 'weak'"),
    (('mode = "hooks"', 'mode = "magic"'), "study.toml: [workload].mode: expected one of explicit, callback, hooks, got 'magic'"),
    (('kind = "script"', 'kind = "lightning"'), "study.toml: [workload].kind: expected one of hlm, script, got 'lightning'"),
    (('files = ["train.py"]', 'files = ["missing.py"]'), "study.toml: [workload].files: 'missing.py' not found"),
    (('command = ["train.py"', 'command = ["nowhere.py"'), "study.toml: [workload].command[0]: 'nowhere.py' not found"),
    (("default = 0.1, minimum", "default = 20, minimum"), "study.toml: [workload.keys].lr.default: expected a number in [0, 10], got 20"),
    (('type = "bool"', 'type = "boolean"'), "study.toml: [workload.keys].pin_memory.type: expected one of int, float, bool, str, got 'boolean'"),
    (("pin_memory = {type", "window = {type"), "study.toml: [workload.keys].window: 'window' is an axis already"),
    (('env = {DATA_SEED = "3"}', "env = {DATA_SEED = 3}"),
     "study.toml: [workload].env.DATA_SEED: expected a string without a line break or NUL, got 3"),
    (('mode = "hooks"', 'mode = "hooks"\nscript = "x"'), "study.toml: [workload].script is not a known key"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[m.split(": ", 1)[1][:40] for _, m in BAD])
def test_bad_workload_tables_are_one_line_naming_file_and_key(tmp_path: Path, change, message):
    old, new = change
    assert old in SCRIPT
    with pytest.raises(SpecError) as info:
        load_study(study_file(tmp_path, SCRIPT.replace(old, new, 1)))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(message), text


def test_an_hlm_workload_takes_no_script_keys(tmp_path: Path):
    with pytest.raises(SpecError, match=r"^study.toml: \[workload\].command is a script workload's key"):
        load_study(study_file(tmp_path, '[study]\nname = "s"\n[train]\nsteps = 1\n[workload]\ncommand = ["x"]\n'))
