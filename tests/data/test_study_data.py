"""The data keys of a study file, `hlm-train train` and `cockpit demo` reach config.json and the shards."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from cockpit.commands import demo
from cockpit.study.spec import SpecError, load_study, parse_study
from runcontract.records import write_config
from trainer.commands import cli as trainer_cli
from trainer.commands.prepare_command import add_arguments, run
from trainer.data.dataset import load_manifest
from trainer.settings import from_config

REPO = Path(__file__).resolve().parents[2]


def study(tmp_path: Path, data: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(f'[study]\nname = "s"\n[train]\nsteps = 2\n{data}')
    return path


def prepare_run_dir(run_dir: Path, config: dict) -> tuple[int, dict]:
    write_config(run_dir, config)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    code = run(parser.parse_args(["--run-dir", str(run_dir), "--no-progress"]))
    return code, config


def test_meluxina_tokenizer_reaches_config_json() -> None:
    s = load_study(REPO / "examples" / "meluxina.toml")
    config = s.run_config(s.matrix()[0])
    assert config["tokenizer"] == {"name": "samples", "vocab": 256, "quantizer": "mulaw", "lead": 0, "fs": 360}
    settings = from_config(Path("/nonexistent"), json.loads(json.dumps(config)))
    assert settings.data.tokenizer == config["tokenizer"]


def test_study_level_beats_tokenizer_prepares_beat_tokens(mitdb_copy: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = study(tmp_path, f'''
[data]
token_cache = "{tmp_path / 'tokens'}"
[data.datasets.mitdb]
path = "{mitdb_copy}"
[data.tokenizer]
name = "beats"
records = ["100"]
annotator = "atr"
rr_bins = 8
''')
    s = load_study(path)
    config = s.run_config(s.matrix()[0])
    assert config["tokenizer"] == {"name": "beats", "records": ["100"], "annotator": "atr", "rr_bins": 8}
    code, _ = prepare_run_dir(tmp_path / "run", config)
    assert code == 0, capsys.readouterr().err
    shard = Path(capsys.readouterr().out.splitlines()[0])
    m = load_manifest(shard)
    assert m["tokenizer"] == "beats" and m["vocab_size"] == 4 + 6 * 8
    assert [r["name"] for r in m["records"]] == ["100"] and m["totals"]["beats"] == 2273


def test_dataset_tokenizer_overrides_single_keys(tmp_path: Path) -> None:
    path = study(tmp_path, '''
[data.tokenizer]
name = "samples"
vocab = 128
fs = 0
[data.datasets.a]
path = "a"
[data.datasets.a.tokenizer]
lead = "V1"
[data.datasets.b]
path = "b"
tokenizer = { name = "beats" }
[sweep]
dataset = ["a", "b"]
''')
    s = load_study(path)
    assert s.datasets["a"].tokenizer == {"name": "samples", "vocab": 128, "fs": 0, "lead": "V1"}
    assert s.datasets["b"].tokenizer == {"name": "beats", "vocab": 128, "fs": 0}


def test_split_and_skip_keys_reach_config_json(tmp_path: Path) -> None:
    path = study(tmp_path, '''
[data]
skip_bad_records = true
patient_pattern = "^(\\\\w+?)_"
[data.datasets.a]
path = "a"
[data.datasets.b]
path = "b"
test_records = ["b3"]
skip_bad_records = false
[sweep]
dataset = ["a", "b"]
''')
    s = load_study(path)
    configs = {c.dataset: s.run_config(c) for c in s.matrix()}
    assert configs["a"]["split"] == {"patient_pattern": "^(\\w+?)_"} and configs["a"]["skip_bad_records"] is True
    assert configs["b"]["split"] == {"test_records": ["b3"]} and "skip_bad_records" not in configs["b"]
    settings = from_config(tmp_path, json.loads(json.dumps(configs["a"])))
    assert settings.data.skip_bad_records and settings.data.split == {"patient_pattern": "^(\\w+?)_"}


@pytest.mark.parametrize(("data", "message"), [
    ('[data]\npatient_pattern = "(unclosed"', r"\[data\]\.patient_pattern: '\(unclosed' is not a regular expression"),
    ('[data]\ntest_records = []', r"\[data\]\.test_records: expected a non-empty list of record names"),
    ('[data]\ntest_records = ["1"]\npatient_pattern = "x"', r"\[data\]: give test_records or patient_pattern, not both"),
    ('[data.datasets.a]\npath = "a"\nskip_bad_records = "yes"', r"\[data\.datasets\]\.a\.skip_bad_records: expected true or false, got 'yes'"),
    ('[data.tokenizer]\nannotator = 3', r"\[data\.tokenizer\]\.annotator: expected an annotator extension such as .*, got 3"),
])
def test_bad_data_keys_name_the_file_and_key(tmp_path: Path, data: str, message: str) -> None:
    with pytest.raises(SpecError, match=r"study\.toml: " + message):
        load_study(study(tmp_path, data))


def test_train_command_line_sets_the_same_keys(tmp_path: Path) -> None:
    args = trainer_cli.parser().parse_args([
        "train", "--run-dir", str(tmp_path / "r"), "--steps", "2", "--annotator", "qrs", "--lead", "1",
        "--records", "a", "b", "--skip-bad-records", "--test-records", "b"])
    config, fresh = trainer_cli.build_config(args)
    assert fresh and config["tokenizer"] == {"annotator": "qrs", "lead": 1, "records": ["a", "b"]}
    assert config["skip_bad_records"] is True and config["split"] == {"test_records": ["b"]}
    args = trainer_cli.parser().parse_args(["train", "--run-dir", str(tmp_path / "r"), "--steps", "2",
                                            "--test-records", "b", "--patient-pattern", "x"])
    with pytest.raises(trainer_cli.UsageError, match="--test-records and --patient-pattern exclude each other"):
        trainer_cli.build_config(args)


def test_demo_flags_reach_the_study(physionet: Path, tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    args = parser.parse_args(["--data", str(physionet / "mitdb"), "--records", "100,101", "--annotator", "atr",
                              "--lead", "V1", "--test-records", "100", "--skip-bad-records",
                              "--workdir", str(tmp_path)])
    assert demo.check(args) is None
    s = parse_study(demo.demo_raw(args), tmp_path / "local-demo.toml")
    config = s.run_config(s.matrix()[0])
    assert config["tokenizer"] == {"name": "samples", "vocab": 256, "records": ["100", "101"], "annotator": "atr",
                                   "lead": "V1"}
    assert config["split"] == {"test_records": ["100"]} and config["skip_bad_records"] is True
    assert demo.check(parser.parse_args(["--annotator", "qrs"])) == "--annotator needs --data"


def test_skip_from_config_json_is_listed_in_the_prepare_summary(mitdb_copy: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (mitdb_copy / "101.atr").write_bytes((mitdb_copy / "101.atr").read_bytes()[:1000])
    config = {"dataset": "mitdb", "data_path": str(mitdb_copy), "tokenizer": {"name": "beats"},
              "token_cache": str(tmp_path / "tokens")}
    assert prepare_run_dir(tmp_path / "run", config)[0] == 3
    assert "101.atr: truncated annotation file" in capsys.readouterr().err
    assert prepare_run_dir(tmp_path / "run", {**config, "skip_bad_records": True})[0] == 0
    assert "skipped record 101: " in capsys.readouterr().out
