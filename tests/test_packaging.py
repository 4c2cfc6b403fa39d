"""The package as it is published: complete metadata (PEP 639 license expression and file,
valid classifiers, URLs, keywords, one version), and an sdist that carries its own tests and
passes them."""

from __future__ import annotations

import email.parser
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import torchperf_lint

ROOT = Path(__file__).resolve().parent.parent
# Tests that exercise what the sdist must carry: the fixtures, the examples and the README
# (test_readme), the rule pages (test_docs) and the shared test helpers (cli_helpers).
SDIST_TESTS = ["tests/test_rule_fixtures.py", "tests/test_docs.py", "tests/test_readme.py"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="build is a test dependency: pip install -e .[test]")
    outdir = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(outdir), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (archive,) = outdir.glob("torchperf_lint-*.tar.gz")
    return archive


def test_metadata_is_complete_and_the_version_single_sourced(sdist):
    trove = pytest.importorskip("trove_classifiers", reason="a test dependency")
    with tarfile.open(sdist) as archive:
        (info,) = [
            m
            for m in archive.getmembers()
            if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")
        ]
        metadata = email.parser.Parser().parsestr(archive.extractfile(info).read().decode())
    assert sdist.name == f"torchperf_lint-{torchperf_lint.__version__}.tar.gz"
    assert metadata["Version"] == torchperf_lint.__version__
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["Requires-Python"] == ">=3.9"
    classifiers = metadata.get_all("Classifier")
    assert set(classifiers) <= trove.classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639 forbids both.
    versions = [
        c.rsplit(" ", 1)[1]
        for c in classifiers
        if c.startswith("Programming Language :: Python :: 3.")
    ]
    assert versions == ["3.9", "3.10", "3.11", "3.12", "3.13"]
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL"))
    assert {"Homepage", "Repository", "Issues"} <= set(urls)
    assert "pytorch" in metadata["Keywords"].split(",")


def test_the_sdist_carries_its_tests_and_they_pass(sdist, tmp_path):
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        # The "data" filter (Python 3.12, backported to 3.9.17) refuses links out of the tree.
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(tmp_path, **safe)
    for needed in (
        "LICENSE",
        "README.md",
        ".pre-commit-hooks.yaml",
        "tests/cli_helpers.py",
        "tests/fixtures/TPL101.py",
        "tests/fixtures/notebooks/train_loop.ipynb",
        "examples/train.py",
        "rules/README.md",
        "scripts/install-test-env.sh",
    ):
        assert needed in names, f"the sdist lacks {needed}"
    assert not [name for name in names if "__pycache__" in name]
    (unpacked,) = tmp_path.iterdir()
    # The sdist's own package comes first, so its tests run against the code it ships.
    environment = dict(os.environ, PYTHONPATH=str(unpacked))

    def pytest(*arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments],
            cwd=unpacked, env=environment, capture_output=True, text=True, timeout=600,
            check=False,
        )

    collected = pytest("--collect-only")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    ran = pytest(*SDIST_TESTS)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert " passed" in ran.stdout.splitlines()[-1]
