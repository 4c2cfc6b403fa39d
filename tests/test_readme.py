"""The README's promises: every command and snippet in it, copied as written, works on a fresh
clone of this repository.

Each ```sh block is run line by line with bash in a clone of HEAD (or is listed in
`NOT_RUN_HERE` with the reason, so a new block cannot go untested by accident); the install
commands run in a fresh virtualenv, the public git URL replaced by the clone's own
`git+file://` URL, tagged with the README's release tag; the CI snippets (GitHub Actions,
GitLab CI) are parsed and their commands run in a project with findings, and their reports
checked; every TOML block is a valid configuration. The sample output is what the example
prints today.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest
from cli_helpers import EXECUTABLE, torchperf_lint, write_files
from consumer_schemas import GITLAB_SCHEMA

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SAMPLE = re.compile(
    r"```\n\$ torchperf-lint examples/train\.py --output-format concise\n(?P<output>.*?)```",
    re.DOTALL,
)
URL = "https://github.com/torchperf-lint/torchperf-lint"
TAG = "v0.1.0"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def block(language: str, first_line: str) -> str:
    """The block of `language` whose first line starts with `first_line`."""
    (found,) = [b for b in blocks(language) if b.startswith(first_line)]
    return found


SETUP = "python -m pip install -e . && torchperf-lint examples/train.py"
CI_COMMAND = "bash scripts/test-supported-pythons.sh"
INSTALL = f'python -m pip install "torchperf-lint @ git+{URL}@{TAG}"'
# Blocks run by the tests of this module, keyed by their first line.
RUN_HERE = {
    SETUP: "test_setup_and_install_commands_in_a_fresh_virtualenv",
    INSTALL: "test_setup_and_install_commands_in_a_fresh_virtualenv",
    "torchperf-lint src/": "test_using_it_commands",
    "torchperf-lint --statistics": "test_adopting_on_a_large_codebase",
    "torchperf-lint check --output-format json": "test_editor_stdin_command",
    "torchperf-lint --show-settings": "test_troubleshooting_commands",
}
NOT_RUN_HERE = {
    CI_COMMAND: "the CI command itself: it runs this test",
}


def test_every_shell_block_is_run_or_says_why_not():
    for text in blocks("sh"):
        first = text.splitlines()[0]
        assert any(first.startswith(key) for key in (*RUN_HERE, *NOT_RUN_HERE)), first


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A fresh clone of HEAD, tagged with the README's release tag."""
    if not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to clone")
    path = tmp_path_factory.mktemp("readme") / "torchperf-lint"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(path)], check=True, timeout=120)
    # --force: once the release is tagged, the clone has the tag already; here it names HEAD.
    subprocess.run(["git", "-C", str(path), "tag", "--force", TAG], check=True, timeout=60)
    return path


def bash(
    script: str, cwd: Path, path: str | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    """`script` run by bash in `cwd`, with this environment's torchperf-lint (or `path`) first
    on PATH."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environment["PATH"] = (path or os.path.dirname(EXECUTABLE)) + os.pathsep + os.environ["PATH"]
    completed = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        timeout=600,
        check=False,
    )
    return subprocess.CompletedProcess(
        completed.args,
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def commands(text: str) -> list[str]:
    """The command lines of a shell block (comment-only lines dropped)."""
    return [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def test_readme_sample_output_is_what_the_example_prints(tmp_path: Path) -> None:
    match = SAMPLE.search(README)
    assert match, "the README shows the example's output"
    result = torchperf_lint(
        "examples/train.py", "--output-format", "concise", "--no-cache", cwd=ROOT
    )
    assert result.returncode == 1
    assert result.stdout == match.group("output")


@pytest.mark.slow
def test_setup_and_install_commands_in_a_fresh_virtualenv(clone, tmp_path):
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    bin_dir = str(environment / "bin")
    setup = bash(block("sh", SETUP).strip(), clone, path=bin_dir)
    # The example is full of findings on purpose: exit 1, and the summary says how many.
    assert setup.returncode == 1, setup.stdout + setup.stderr
    assert "Found 12 errors (4 fixable with --fix)." in setup.stdout
    installs = commands(block("sh", INSTALL))
    assert installs[0] == INSTALL
    for line in installs:
        # git+file://localhost/...: the pip that `venv` bundles with Python 3.9 to 3.11 rejects
        # a URL without a host.
        line = line.replace(f"git+{URL}", f"git+file://localhost{clone}")
        if "[verify]" in line:
            # The extra pulls in torch (gigabytes); its declaration is what is checked here.
            line = line.replace("install ", "install --no-deps ", 1)
        installed = bash(line, clone, path=bin_dir)
        assert installed.returncode == 0, installed.stdout + installed.stderr
        version = bash("torchperf-lint --version", tmp_path, path=bin_dir)
        assert version.stdout == "torchperf-lint, version 0.1.0\n", version.stderr
    requires = bash(
        "python -c \"import importlib.metadata as m; print(m.requires('torchperf-lint'))\"",
        tmp_path,
        path=bin_dir,
    )
    assert 'torch>=2.1; extra == "verify"' in requires.stdout


def using_it(clone: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """The commands name `src/` and `train.py`: the example scripts stand in for them."""
    project = tmp_path / "project"
    shutil.copytree(clone / "examples", project / "src")
    shutil.copy(clone / "examples" / "verify_demo.py", project / "train.py")
    shutil.copy(clone / "examples" / "verify_demo_data.py", project / "verify_demo_data.py")
    return project, commands(block("sh", "torchperf-lint src/"))


def test_using_it_commands(clone, tmp_path):
    project, lines = using_it(clone, tmp_path)
    for line in lines:
        if " verify " in line:
            continue  # Needs PyTorch: test_using_it_verify_command.
        result = bash(line, project)
        # 0 or 1 (findings); never a usage error or a crash.
        assert result.returncode in (0, 1), f"{line}\n{result.stdout}{result.stderr}"


@pytest.mark.torch
@pytest.mark.slow
def test_using_it_verify_command(clone, tmp_path):
    project, lines = using_it(clone, tmp_path)
    (line,) = [line for line in lines if " verify " in line]
    result = bash(line, project)
    assert result.returncode == 0, f"{line}\n{result.stdout}{result.stderr}"
    assert "as written" in result.stdout


def test_adopting_on_a_large_codebase(clone, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(clone / "examples", project)
    assert torchperf_lint("--no-cache", ".", cwd=project).returncode == 1
    for line in commands(block("sh", "torchperf-lint --statistics")):
        result = bash(line, project)
        assert result.returncode == 0, f"{line}\n{result.stdout}{result.stderr}"
    assert torchperf_lint("--no-cache", ".", cwd=project).returncode == 0
    (configuration,) = [b for b in blocks("toml") if 'extend-exclude = ["third_party/"]' in b]
    write_files(project, {"pyproject.toml": configuration})
    assert torchperf_lint("--show-settings", ".", cwd=project).returncode == 0


def test_every_toml_block_is_a_valid_configuration(tmp_path):
    for number, configuration in enumerate(blocks("toml")):
        project = tmp_path / f"project{number}"
        write_files(project, {"pyproject.toml": configuration, "a.py": "import torch\n"})
        result = torchperf_lint("--show-settings", ".", cwd=project)
        assert result.returncode == 0, configuration + result.stderr


def test_editor_stdin_command(clone):
    (line,) = commands(block("sh", "torchperf-lint check --output-format json"))
    result = bash(line, clone)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    assert len(findings) == 12
    assert {finding["filename"] for finding in findings} == {"examples/train.py"}


def test_troubleshooting_commands(clone):
    settings, files = commands(block("sh", "torchperf-lint --show-settings"))
    shown = bash(settings, clone)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f'Resolved settings for: "{clone.resolve()}/examples/train.py"')
    listed = bash(files, clone)
    assert listed.returncode == 0, listed.stderr
    assert f"{clone.resolve()}/examples/train.py" in listed.stdout.splitlines()


def yaml_block(marker: str) -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with pre-commit, a test dependency")
    (text,) = [b for b in blocks("yaml") if marker in b]
    return yaml.safe_load(text)


@pytest.fixture
def project_with_findings(clone, tmp_path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(clone / "examples", project)
    return project


def findings_in(project: Path) -> int:
    return len(json.loads(torchperf_lint("--output-format", "json", ".", cwd=project).stdout))


def test_github_actions_workflow(project_with_findings):
    workflow = yaml_block("upload-sarif")
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["torchperf-lint"]["steps"]
    runs = [step["run"] for step in steps if "run" in step]
    assert runs[0] == INSTALL
    lint, sarif = runs[1:]
    assert bash(lint, project_with_findings).returncode == 1
    report = bash(sarif, project_with_findings)
    # The report step must not fail on findings, and the upload runs whatever happened.
    assert report.returncode == 0, report.stderr
    upload = steps[-1]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["if"] == "always()" and steps[-2]["if"] == "always()"
    document = json.loads((project_with_findings / upload["with"]["sarif_file"]).read_text())
    assert document["version"] == "2.1.0"
    assert len(document["runs"][0]["results"]) == findings_in(project_with_findings)


def test_gitlab_ci_job(project_with_findings):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test dependency")

    job = yaml_block("codequality")["torchperf-lint"]
    install, report, lint = job["script"]
    assert install == INSTALL
    assert bash(report, project_with_findings).returncode == 0
    assert bash(lint, project_with_findings).returncode == 1
    assert job["artifacts"]["when"] == "always"
    path = project_with_findings / job["artifacts"]["reports"]["codequality"]
    issues = json.loads(path.read_text())
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert len(issues) == findings_in(project_with_findings)


def test_the_ci_command_is_what_ci_runs():
    assert block("sh", CI_COMMAND).strip() == CI_COMMAND
    assert CI_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
