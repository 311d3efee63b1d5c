"""The Apptainer definition, checked statically (Apptainer cannot be installed on the test machines)."""

from __future__ import annotations

import re
from pathlib import Path

import containers

REPO = Path(__file__).resolve().parent.parent.parent
SECTIONS = ("%files", "%post", "%environment", "%runscript", "%test", "%labels", "%help")


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^(%[a-z]+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_definition_has_every_section_and_the_nvidia_base() -> None:
    text = containers.definition_text()
    header = text.split("%", 1)[0]
    assert re.search(r"^Bootstrap: docker$", header, flags=re.M)
    assert re.search(r"^From: nvcr\.io/nvidia/pytorch:\d\d\.\d\d-py3$", header, flags=re.M)
    sections = _sections(text)
    for name in SECTIONS:
        assert name in sections and sections[name].strip(), f"hlm.def lacks a non-empty {name} section"


def test_files_copied_into_the_image_exist_in_the_repository() -> None:
    files = _sections(containers.definition_text())["%files"]
    sources = [line.split()[0] for line in files.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert "pyproject.toml" in sources and "trainer" in sources
    assert "runcontract" in sources, "the trainer imports runcontract (the run-directory contract)"
    for source in sources:
        assert (REPO / source).exists(), f"%files copies {source}, which is not in the repository"


def test_project_installed_with_train_extra_without_reinstalling_torch() -> None:
    post = _sections(containers.definition_text())["%post"]
    installs = [line.strip() for line in post.splitlines() if re.search(r"\bpip install\b", line)]
    assert installs, "no pip install in %post"
    # The project goes in without dependencies; nothing installs torch by name.
    assert any("--no-deps /opt/hlm/src" in line for line in installs)
    for line in installs:
        assert not re.search(r"(^|\s)(torch|torchvision|torchaudio)([<>=!~\[\s]|$)", line), line
        assert "--force-reinstall" not in line and "--upgrade" not in line and " -U " not in line
    # The rest of the train extra is installed under a constraint that pins the image's torch ...
    assert any("--constraint /opt/hlm/constraints.txt" in line and "train-requirements" in line for line in installs)
    assert '"torch"' in post and "md.version(name)" in post
    assert re.search(r"extra.*train", post), "the requirements come from the train extra"
    # ... and the build fails if torch changed anyway.
    assert 'if [ "$torch_before" != "$torch_after" ]' in post


def test_runscript_runs_the_trainer_and_test_checks_cuda_and_nvml() -> None:
    sections = _sections(containers.definition_text())
    assert "exec hlm-train" in sections["%runscript"]
    test = sections["%test"]
    assert "import trainer" in test and "torch.cuda.is_available()" in test and "pynvml.nvmlInit()" in test


def test_readme_gives_the_build_command_and_bind_advice() -> None:
    readme = (REPO / "containers" / "README.md").read_text()
    assert "apptainer build --fakeroot hlm.sif" in readme
    assert "--bind" in readme and "--nv" in readme
