"""The newcomer's pages (README, docs/index, install, long-study, troubleshooting) hold what they promise:
every page indexed, every link resolving, every `cockpit` / `hlm-train` line accepted by the real command
line, every `pip install` naming this project's own package, extras and torch pin, the examples marked `run`
run, the README's data demo run against a local mirror of real MIT-BIH records, and the troubleshooting page
complete against the preflight's checks and the Slurm refusals the test cluster reproduces.

Each fenced bash block of docs/install.md, long-study.md and troubleshooting.md follows a marker:
`<!-- example: run -->` (run here), `<!-- example: install -->` (installs packages: checked, not run),
`<!-- example: cluster -->` (needs a cluster or SSH: checked, not run)."""

from __future__ import annotations

import ast
import asyncio
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from cockpit.cli import build_parser
from tests.data.conftest import copy_records
from tests.data.test_download import Mirror, write_sums
from trainer.commands.cli import parser as trainer_parser

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = ["install.md", "long-study.md", "troubleshooting.md"]  # pages whose blocks carry a marker
KINDS = ("run", "install", "cluster")
DEMO = "pip install torch==2.13.0 -e '.[train]' && cockpit demo"
TEST_COMMAND = "bash tests/infra/install.sh && python3 -m pytest -q"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def blocks(text: str) -> list[tuple[str, str]]:
    """(marker kind or "", body) of every ```bash block."""
    return [(m.group(1) or "", m.group(2)) for m in
            re.finditer(r"(?:<!-- example: (\w+) -->\n)?```bash\n(.*?)```", text, flags=re.S)]


def commands(body: str) -> list[str]:
    """The commands of a block: each line without its comment, `a && b` split in two."""
    out = []
    for line in body.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        out += [part.strip() for part in line.split("&&") if part.strip()]
    return out


def all_commands() -> list[tuple[str, str]]:
    """(where, command) of every bash block of the README and of every page of docs/, and of every `cockpit ...`
    or `hlm-train ...` in their text (not a usage line: `cockpit run STUDY [--out DIR]`)."""
    out = []
    for path in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = read(path)
        for _, body in blocks(text):
            out += [(path.name, c) for c in commands(body)]
        inline = (re.sub(r" > \S+$", "", " ".join(m.split())) for m in re.findall(r"(?<!`)`([^`]+)`(?!`)", text))
        out += [(path.name, c) for c in inline  # a whole command: it names a file (a bare `cockpit run` is a name)
                if re.match(r"(cockpit|hlm-train) [a-z]", c) and re.search(r"\.(toml|sqlite)\b|/", c) and " [" not in c]
    return out


def test_the_index_lists_every_page_once_and_every_link_resolves() -> None:
    index = read(DOCS / "index.md")
    linked = re.findall(r"\]\(([\w.-]+\.md)\)", index)
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md")
    assert sorted(linked) == pages, "docs/index.md must link every page of docs/ once"


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{p}" for p in ["index.md", *PAGES])])
def test_every_relative_link_resolves(page: str) -> None:
    path = REPO / page
    for target in re.findall(r"\]\(([^)#\s]+)\)", read(path)):
        if not re.match(r"https?://", target):
            assert (path.parent / target).exists(), f"{page} links {target}, which does not exist"


def test_the_readme_keeps_the_two_commands_and_says_what_the_test_command_does() -> None:
    readme = read(REPO / "README.md")
    assert f"```bash\n{DEMO}\n```" in readme and f"```bash\n{TEST_COMMAND}\n```" in readme
    ci = [line.strip() for line in read(REPO / ".ci" / "run").splitlines()]
    assert any(line.startswith(TEST_COMMAND + " ||") for line in ci), ".ci/run runs the README's test command"
    said = " ".join(readme.split())
    for words in ("throw-away VM or container", "installs system packages", "creates a user", "chmod o+x",
                  "Without root the Slurm and SSH tests are skipped"):
        assert words in said, words
    assert said.index("docs/images/cockpit.svg") < said.index("## The two commands"), "the picture is at the top"


def test_every_block_of_the_marked_pages_says_what_kind_of_example_it_is() -> None:
    for page in PAGES:
        for kind, body in blocks(read(DOCS / page)):
            assert kind in KINDS, f"docs/{page}: a bash block without <!-- example: run|install|cluster -->: {body!r}"


@pytest.mark.parametrize("where,command", [c for c in all_commands()
                                           if re.match(r"(cockpit|hlm-train) ", c[1])])
def test_every_cockpit_and_hlm_train_line_is_accepted_by_the_command_line(where: str, command: str,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(command)
    parser = build_parser() if argv[0] == "cockpit" else trainer_parser()
    try:
        parser.parse_args(argv[1:])
    except SystemExit as exc:
        assert exc.code == 0 and "--help" in argv, f"{where}: `{command}`: {capsys.readouterr().err.strip()}"


def test_every_pip_install_names_this_project_its_extras_and_the_pinned_torch() -> None:
    project = tomllib.loads(read(REPO / "pyproject.toml"))["project"]
    extras = set(project["optional-dependencies"])
    pins = set(re.findall(r"torch==[\d.]+", DEMO))
    installs = [c for _, c in all_commands() if re.search(r"\bpip install\b", c)]
    assert len(installs) >= 4
    for command in installs:
        args = shlex.split(command)[shlex.split(command).index("install") + 1:]
        for arg in args:
            if arg.startswith("--index-url"):
                continue
            if arg.startswith("http"):
                assert arg == "https://download.pytorch.org/whl/cpu", command
            elif arg.startswith("torch"):
                assert arg == "torch" or arg in pins, f"`{command}`: torch as the README pins it ({pins})"
            elif not arg.startswith("-"):
                name, _, wanted = arg.partition("[")
                assert name in (".", project["name"]), f"`{command}`: {arg} is not this project ({project['name']})"
                assert set(re.findall(r"\w+", wanted)) <= extras, f"`{command}`: unknown extra"


def test_the_examples_marked_run_run(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = 0
    for page in PAGES:
        for kind, body in blocks(read(DOCS / page)):
            for command in commands(body) if kind == "run" else []:
                done = subprocess.run(shlex.split(command), cwd=REPO, env=env, capture_output=True, text=True,
                                      timeout=120)
                assert done.returncode == 0, f"docs/{page}: `{command}` exited {done.returncode}: {done.stderr}"
                ran += 1
    assert ran >= 2
    assert not list(tmp_path.rglob("*.sqlite")), "the examples wrote no store"


def test_the_readme_data_demo_downloads_real_records_that_prepare_reads(physionet: Path, tmp_path: Path) -> None:
    """The README's `hlm-train download` line, against a local mirror of the same three MIT-BIH records (the
    one flag added: --index-url); the folder it writes is what `cockpit demo --data` and prepare read."""
    readme = read(REPO / "README.md")
    download, demo = [c for kind, body in blocks(readme) for c in commands(body) if "data/mitdb" in c]
    assert download.startswith("hlm-train download mitdb ") and demo.startswith("cockpit demo --data data/mitdb")
    records = shlex.split(download)[shlex.split(download).index("--records") + 1].split(",")
    assert shlex.split(demo)[-1].split(",") == records
    mirror = Mirror(tmp_path / "mirror", ranges=True, db="mitdb")
    try:
        copy_records(physionet / "mitdb", mirror.db, records, ("hea", "dat", "atr"))
        write_sums(mirror.db)
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        work = tmp_path / "work"
        work.mkdir()
        done = subprocess.run([*shlex.split(download), "--index-url", mirror.url], cwd=work, env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        mirror.close()
    assert done.returncode == 0, done.stderr
    size = sum((mirror.db / f"{r}.{e}").stat().st_size for r in records for e in ("hea", "dat", "atr"))
    assert f"fetched 9 files ({size / 1e6:.1f} MB)" in done.stdout and "about 6 MB" in readme
    assert round(size / 1e6) == 6
    folder = work / "data" / "mitdb"
    for r in records:
        assert (folder / f"{r}.dat").read_bytes() == (physionet / "mitdb" / f"{r}.dat").read_bytes()
    prepared = subprocess.run([sys.executable, "-m", "trainer", "prepare", "--data", str(folder), "--tokenizer",
                               "samples", "--out", str(tmp_path / "tokens"), "--no-progress"],
                              env=env, capture_output=True, text=True, timeout=300)
    assert prepared.returncode == 0, prepared.stderr
    assert "3 records (0 skipped as bad)" in prepared.stdout, prepared.stdout


def failing_areas() -> tuple[set[str], set[str]]:
    """(areas, area prefixes) of every Check the preflight can give a FAIL verdict (read from its source)."""
    tree = ast.parse(read(REPO / "cockpit" / "preflight" / "checks.py"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    areas: set[str] = set()
    prefixes: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Check" and len(node.args) > 1):
            continue
        if "FAIL" not in {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}:
            continue
        area = node.args[0]
        if isinstance(area, ast.Constant):
            areas.add(area.value)
        elif isinstance(area, ast.JoinedStr):
            prefixes.add(area.values[0].value)  # type: ignore[attr-defined]  # f"data {name}": "data "
        elif isinstance(area, ast.Name):  # a loop over (name, ...) tuples: each name is an area
            loop = node
            while not isinstance(loop, ast.For):
                loop = parents[loop]
            areas |= {t.elts[0].value for t in loop.iter.elts}  # type: ignore[attr-defined]
    return areas, prefixes


def test_troubleshooting_has_a_section_for_every_check_the_preflight_can_fail() -> None:
    areas, prefixes = failing_areas()
    assert {"qos wall time", "submit", "python", "torch", "nvml", "all-reduce"} <= areas and "data " in prefixes
    page = read(DOCS / "troubleshooting.md")
    named = {span for line in page.splitlines() if line.startswith("### ") for span in re.findall(r"`([^`]+)`", line)}
    missing = sorted(areas - named) + sorted(p for p in prefixes if not any(n.startswith(p) for n in named))
    assert not missing, f"docs/troubleshooting.md has no ### section for the preflight check(s) {missing}"


def test_troubleshooting_gives_every_refusal_the_test_slurm_reproduces() -> None:
    source = read(REPO / "tests" / "launch" / "test_site_slurm.py")
    refusals = re.findall(r'^[A-Z_]+ = "(.+)"$', source, flags=re.M)
    assert len(refusals) >= 5
    page = read(DOCS / "troubleshooting.md")
    for words in refusals:
        assert words in page, f"docs/troubleshooting.md lacks Slurm's refusal {words!r}"


def test_the_screenshot_script_renders_the_main_screen(tmp_path: Path) -> None:
    sys.path.insert(0, str(DOCS / "images"))
    try:
        import make_screenshot
    finally:
        sys.path.remove(str(DOCS / "images"))
    svg = asyncio.run(make_screenshot.render(tmp_path / "cockpit.svg")).read_text(encoding="utf-8")
    committed = read(DOCS / "images" / "cockpit.svg")
    for text in ("local-demo", "4&#160;done", "speedup"):
        assert text in svg and text in committed, text


def test_a_run_that_skips_the_slurm_and_ssh_tests_counts_them_for_its_last_lines() -> None:
    from tests.conftest import cluster_skips

    def skipped(keywords: dict[str, int], reason: str) -> pytest.TestReport:
        return pytest.TestReport("t.py::t", ("t.py", 1, "t"), keywords, "skipped", ("t.py", 1, f"Skipped: {reason}"),
                                 "setup")

    reports = [skipped({"slurm": 1}, "the test Slurm is not running and starting it needs root"),
               skipped({}, "a real sshd needs root and Debian's openssh-server"), skipped({}, "no GPU here")]
    assert cluster_skips(reports) == 2


def test_a_run_that_skips_the_slurm_and_ssh_tests_says_so_in_its_last_lines(tmp_path: Path) -> None:
    """A real pytest run with the suite's own conftest: two tests skipped for the cluster, one for another
    reason; the section and the count come last, just above pytest's own count."""
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.slurm\n"
        "def test_a():\n    pytest.skip('the test Slurm is not running and starting it needs root')\n\n"
        "def test_b():\n    pytest.skip('a real sshd needs root and Debian\\'s openssh-server')\n\n"
        "def test_c():\n    pytest.skip('no GPU here')\n\n"
        "def test_d():\n    pass\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-c", os.devnull, "-p", "tests.conftest",
                           "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning",
                           str(tmp_path / "test_skips.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Slurm and SSH not tested" in lines[-3] and lines[-2].startswith("Slurm and SSH tests skipped: 2."), lines
    assert "1 passed, 3 skipped" in lines[-1], lines


# the verbs whose examples run here on the demo study and its store (the others start jobs: run, open,
# preflight and demo have tests of their own; --online needs the network, --maintenance a Slurm cluster:
# tests/control/test_maintenance.py runs it on the test Slurm)
READS_A_STUDY = ("plan", "report", "export")


def runnable_here(command: str) -> bool:
    argv = shlex.split(command)
    if argv[0] == "hlm-train":
        return argv[1] == "prepare" and "--synthetic" in argv  # the others read the reader's own databases
    return argv[1] in READS_A_STUDY and not {"--online", "--maintenance"} & set(argv) and not re.search(r"[|<>]|OTHER", command)


@pytest.mark.parametrize("where,command", sorted(((w, c) for c, w in {c: w for w, c in all_commands()
                                                                           if runnable_here(c)}.items()),
                                                  key=lambda wc: wc[1]))  # each command once, from one page
def test_every_example_that_reads_a_study_runs_on_the_demo_study(where: str, command: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The pages' `study.toml` and `store.sqlite` are the reader's; here they are the demo study and the store
    `cockpit demo` wrote (tests/fixtures/demo-store, copied), `~` a fresh home and each named output folder a
    fresh one."""
    monkeypatch.setenv("HOME", str(tmp_path))
    demo = tmp_path / "demo-store"
    shutil.copytree(REPO / "tests" / "fixtures" / "demo-store", demo)
    stand_in = {"study.toml": str(demo / "study.toml"), "store.sqlite": str(demo / "local-demo" / "cockpit.sqlite")}
    argv = [stand_in.get(a) or (str(REPO / a) if (REPO / a).is_file() or ("/" in a and (REPO / a).is_dir())
                                else os.path.expanduser(a))  # the repository's files and folders (a path)
            for a in shlex.split(command)]
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"), "WANDB_MODE": "offline",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{where}: `{command}` exited {done.returncode}: {done.stderr}"
