"""The PyTorch a project declares (its packaging files), and what TPL301 makes of it."""

from __future__ import annotations

import json

import pytest
from cli_helpers import torchperf_lint, write_files

from torchperf_lint.config import Configuration, Overrides
from torchperf_lint.discovery import project_root
from torchperf_lint.torch_requirement import TorchRange, declared_torch, parse_torch_requirement


@pytest.mark.parametrize(
    ("line", "oldest", "below"),
    [
        ("torch==1.11.0", (1, 11, 0), (1, 11, 1)),
        ("torch==2.3", (2, 3, 0), (2, 3, 1)),
        ("torch==2.3.*", (2, 3, 0), (2, 4, 0)),
        ("torch===2.4", (2, 4, 0), (2, 4, 1)),
        ("torch>=1.11", (1, 11, 0), None),
        ("torch>1.11", (1, 11, 0), None),
        ("torch>=2.4.1,<2.7", (2, 4, 1), (2, 7, 0)),
        ("torch >= 2.4.1, < 2.7.0", (2, 4, 1), (2, 7, 0)),
        ("torch<2.4", None, (2, 4, 0)),
        ("torch<2.4.1", None, (2, 4, 1)),
        ("torch<=2.3.1", None, (2, 3, 2)),
        ("torch<=2.4", None, (2, 4, 1)),
        ("torch~=2.1", (2, 1, 0), (3, 0, 0)),
        ("torch~=2.1.0", (2, 1, 0), (2, 2, 0)),
        ("torch!=2.0.1", None, None),
        ("torch", None, None),
        ("Torch", None, None),
        ("torch[opt-einsum]>=2.0", (2, 0, 0), None),
        ('torch>=2.0; python_version >= "3.8"', (2, 0, 0), None),
        ("torch>=2.0  # the first with torch.compile", (2, 0, 0), None),
        ("torch (>=1.8)", (1, 8, 0), None),
        ("torch>=2.1.0rc1", (2, 1, 0), None),
        ("torch==2.0.0+cu118", (2, 0, 0), (2, 0, 1)),
        ("torch==2.0.0.post1", (2, 0, 0), (2, 0, 1)),
        ("torch>=v2.2", (2, 2, 0), None),
        ("torch @ https://download.pytorch.org/whl/torch-2.0.0.whl", None, None),
    ],
)
def test_a_torch_requirement_gives_its_floor_and_its_exclusive_upper_bound(line, oldest, below):
    assert parse_torch_requirement(line) == TorchRange(oldest, below)


@pytest.mark.parametrize(
    "line", ["torchvision>=0.15", "pytorch-lightning>=2.0", "torch-geometric", "numpy", "torch>=two"]
)
def test_other_projects_and_unreadable_versions_declare_nothing(line):
    assert parse_torch_requirement(line) is None


def test_declarations_are_alternatives_the_lowest_floor_and_highest_bound_win():
    pinned = TorchRange((1, 11, 0), (1, 11, 1))
    assert pinned.union(TorchRange((2, 4, 0), (2, 7, 0))) == TorchRange((1, 11, 0), (2, 7, 0))
    # A declaration without a bound lifts the bound; one without a floor keeps the other's.
    assert pinned.union(TorchRange()) == TorchRange((1, 11, 0), None)


def test_every_packaging_file_is_read_but_not_the_extras(tmp_path):
    write_files(
        tmp_path,
        {
            "pyproject.toml": (
                '[build-system]\nrequires = ["torch==1.0"]\n'
                '[project]\nname = "p"\ndependencies = ["numpy", "torch>=2.4"]\n'
                '[project.optional-dependencies]\nold = ["torch>=1.0"]\n'
            ),
            "setup.cfg": (
                "[options]\ninstall_requires =\n    torch>=2.5, <2.8\n"
                "[options.extras_require]\nold = torch>=1.0\n"
            ),
            "setup.py": (
                "from setuptools import setup\n"
                "REQUIRES = ['torch>=2.2']\n"
                "with open('deps.txt') as f:\n    deps = f.read().splitlines()\n"
                "setup(install_requires=REQUIRES, extras_require={'old': ['torch>=1.0']})\n"
            ),
            "deps.txt": "torch>=2.1\n",
            "requirements-min.txt": "# the oldest we test\n-r requirements.txt\ntorch==2.0.1\n",
            "requirements/docs.txt": "sphinx\ntorch>=1.13 ; python_version < '3.9'\n",
        },
    )
    declared = declared_torch(tmp_path)
    assert declared is not None
    assert declared.versions == TorchRange((1, 13, 0), None)
    assert declared.files == (
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "requirements-min.txt",
        "deps.txt",
        "requirements/docs.txt",
    )


def test_setup_py_install_requires_written_in_the_call(tmp_path):
    write_files(
        tmp_path,
        {"setup.py": "import setuptools\nsetuptools.setup(install_requires=['numpy', 'torch==1.12.1'])\n"},
    )
    assert declared_torch(tmp_path).versions == TorchRange((1, 12, 1), (1, 12, 2))


@pytest.mark.parametrize(
    ("check", "oldest"),
    [
        # detectron2's setup.py
        (
            (
                'torch_ver = [int(x) for x in torch.__version__.split(".")[:2]]\n'
                'assert torch_ver >= [1, 8], "Requires PyTorch >= 1.8"\n'
            ),
            (1, 8, 0),
        ),
        (
            (
                'if version.parse(torch.__version__) < version.parse("1.10"):\n'
                '    raise RuntimeError("too old")\n'
            ),
            (1, 10, 0),
        ),
        ("assert tuple(map(int, torch.__version__.split('.')[:2])) > (1, 7)\n", (1, 7, 0)),
    ],
)
def test_a_setup_py_version_check_declares_a_floor(tmp_path, check, oldest):
    setup_py = f"import torch\nfrom setuptools import setup\n{check}setup()\n"
    write_files(tmp_path, {"setup.py": setup_py})
    declared = declared_torch(tmp_path)
    assert (declared.versions.oldest, declared.versions.below, declared.files) == (
        oldest, None, ("setup.py",)
    )


def test_a_version_check_raises_the_floor_of_the_folders_other_declarations(tmp_path):
    # Vim's `det/`: a vendored detectron2 `setup.py` asserts 1.8, `det-requirements.txt`
    # installs 2.1.2; and `requirements-min.txt` allows what the check refuses.
    check = "import torch\nassert tuple(int(x) for x in torch.__version__.split('.')[:2]) >= (1, 8)\n"
    write_files(
        tmp_path,
        {
            "det/setup.py": check,
            "det/det-requirements.txt": "torch==2.1.2+cu121\n",
            "lib/setup.py": check,
            "lib/requirements-min.txt": "torch>=1.4\n",
            "lib/requirements.txt": "torch>=2.0\n",
        },
    )
    det = declared_torch(tmp_path / "det")
    assert (det.versions, det.files) == (TorchRange((2, 1, 2), (2, 1, 3)), ("det-requirements.txt",))
    lib = declared_torch(tmp_path / "lib")
    assert lib.versions == TorchRange((1, 8, 0), None)


@pytest.mark.parametrize(
    "check",
    [
        # In a branch (a ROCm build), not at the top level.
        "if rocm:\n    assert torch.__version__ >= [1, 8]\n",
        # A check that refuses nothing.
        "if torch_ver < [1, 7]:\n    flags = []\n",
        # Another package's version.
        "assert numpy.__version__ >= '1.20'\n",
    ],
)
def test_other_setup_py_checks_declare_nothing(tmp_path, check):
    write_files(tmp_path, {"setup.py": f"import torch\n{check}"})
    assert declared_torch(tmp_path) is None


def test_a_constraints_file_caps_every_declaration(tmp_path):
    write_files(
        tmp_path,
        {
            "requirements.txt": "torch>=1.10.0\n",
            "setup.py": "from setuptools import setup\nsetup(install_requires=['torch>=1.8,<2.8'])\n",
            # pip's constraints file: `pip install -c constraints.txt`, as every CI install does.
            "constraints.txt": "# core\ntorch<1.13.0\ntorchvision<0.14.0\n",
        },
    )
    declared = declared_torch(tmp_path)
    assert declared.versions == TorchRange((1, 8, 0), (1, 13, 0))
    assert declared.files == ("setup.py", "requirements.txt", "constraints.txt")


def test_a_constraint_only_narrows(tmp_path):
    # A higher cap than the declarations' leaves the range (and the files) as they are.
    write_files(tmp_path, {"requirements.txt": "torch>=1.11,<2.4\n", "constraints.txt": "torch<2.6\n"})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((1, 11, 0), (2, 4, 0)), ("requirements.txt",))
    # Its floor is not read: a constraint caps, it does not raise the oldest supported.
    write_files(tmp_path, {"constraints.txt": "torch>=2.0,<2.2\n"})
    assert declared_torch(tmp_path).versions == TorchRange((1, 11, 0), (2, 2, 0))
    # A pin caps too (`torch==1.12.1` allows nothing from 1.12.2 on).
    write_files(tmp_path, {"constraints.txt": "torch==1.12.1\n"})
    assert declared_torch(tmp_path).versions == TorchRange((1, 11, 0), (1, 12, 2))


def test_a_constraint_never_declares_torch_on_its_own(tmp_path):
    write_files(
        tmp_path,
        {
            "constraints.txt": "torch<1.13.0\n",
            "requirements/constraints-ci.txt": "torch<1.13.0\n",
            "requirements/base.txt": "numpy\n",
        },
    )
    assert declared_torch(tmp_path) is None


def test_constraints_files_in_the_requirements_folder_and_alternatives(tmp_path):
    write_files(
        tmp_path,
        {
            "requirements/base.txt": "torch>=1.9\n",
            # Not a declaration: `requirements/constraints*.txt` only caps.
            "requirements/constraints.txt": "torch<1.12\n",
            "constraints-gpu.txt": "torch<=1.12.1\n",
            "constraints-docs.txt": "sphinx<6\n",
        },
    )
    declared = declared_torch(tmp_path)
    # Two constraints files cap torch: either may be the one used, the higher cap holds.
    assert declared.versions == TorchRange((1, 9, 0), (1, 12, 2))
    assert declared.files == ("requirements/base.txt", "constraints-gpu.txt", "requirements/constraints.txt")
    # One that names torch without a bound caps nothing.
    write_files(tmp_path, {"constraints-docs.txt": "torch\n"})
    assert declared_torch(tmp_path).versions == TorchRange((1, 9, 0), None)


@pytest.mark.parametrize(
    ("dependency", "oldest", "below"),
    [
        # Conda's `=` allows the releases that start with the version, `==` that one only.
        ("pytorch=1.12.1", (1, 12, 1), (1, 12, 2)),
        ("pytorch=1.12", (1, 12, 0), (1, 13, 0)),
        ("pytorch=1.12.*", (1, 12, 0), (1, 13, 0)),
        ("pytorch 1.12.1", (1, 12, 1), (1, 12, 2)),
        ("pytorch=1.12.1=py3.8_cuda11.3_cudnn8.2.0_0", (1, 12, 1), (1, 12, 2)),
        ("pytorch==1.12.1", (1, 12, 1), (1, 12, 2)),
        ("pytorch==2.1.0=cuda118", (2, 1, 0), (2, 1, 1)),
        ("pytorch>=1.10,<2", (1, 10, 0), (2, 0, 0)),
        ("pytorch::pytorch>=2.1", (2, 1, 0), None),
        ("conda-forge::pytorch-gpu=2.3", (2, 3, 0), (2, 4, 0)),
        ("'pytorch-cpu'", None, None),
    ],
)
def test_a_conda_environment_file_declares_its_pytorch_package(tmp_path, dependency, oldest, below):
    environment = f"name: train\nchannels:\n  - pytorch\ndependencies:\n  - python=3.8\n  - {dependency}\n"
    write_files(tmp_path, {"environment.yaml": environment})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange(oldest, below), ("environment.yaml",))


def test_a_conda_environment_file_reads_its_pip_list_and_nothing_outside_dependencies(tmp_path):
    write_files(
        tmp_path,
        {
            "environment.yml": (
                "name: pytorch  # the environment's name, not a package\n"
                "channels:\n"
                "  - pytorch\n"
                "dependencies:\n"
                "  - torchvision=0.13.1\n"
                "  - pip=20.3\n"
                "  - pip:\n"
                "      - torch==1.13.1  # pinned by pip\n"
                "      - timm==0.6.12\n"
                "  - numpy\n"
                "variables:\n"
                "  - pytorch=2.4\n"
            ),
        },
    )
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((1, 13, 1), (1, 13, 2)), ("environment.yml",))
    # A conda package named like a pip requirement is not PyTorch's conda package.
    write_files(tmp_path, {"environment.yml": "dependencies:\n  - torch=1.0\n  - pip:\n    - numpy\n"})
    assert declared_torch(tmp_path) is None


def test_a_directory_without_torch_declares_nothing(tmp_path):
    write_files(
        tmp_path,
        {
            "pyproject.toml": '[build-system]\nrequires = ["torch"]\n[project]\nname = "p"\n',
            "setup.py": "this is not Python(\n",
            "requirements.txt": "numpy\n--index-url https://example.org\n",
            "broken/pyproject.toml": "[project\n",
        },
    )
    assert declared_torch(tmp_path) is None
    assert declared_torch(tmp_path / "broken") is None
    assert declared_torch(tmp_path / "missing") is None


def test_files_take_the_declaration_nearest_to_them_within_their_project(tmp_path):
    write_files(
        tmp_path,
        {
            "project/setup.py": "",
            "project/requirements.txt": "torch==1.11.0\n",
            "project/pkg/deep/train.py": "",
            "project/examples/new/requirements.txt": "torch>=2.4\n",
            "project/examples/new/train.py": "",
            # A project of its own, which does not name torch: the outer one's pin is not its.
            "project/tools/pyproject.toml": '[project]\nname = "tools"\ndependencies = ["click"]\n',
            "project/tools/run.py": "",
        },
    )
    project = tmp_path / "project"
    configuration = Configuration(cwd=project)
    pinned = configuration.settings_for(project / "pkg/deep/train.py").options
    assert (pinned.torch_version, pinned.torch_below) == ((1, 11), (1, 11, 1))
    newer = configuration.settings_for(project / "examples/new/train.py").options
    assert (newer.torch_version, newer.torch_below) == ((2, 4), None)
    tools = configuration.settings_for(project / "tools/run.py").options
    assert (tools.torch_version, tools.torch_below) == ((2, 3), None)
    assert configuration.declared_torch(project / "pkg").files == ("requirements.txt",)


def test_a_package_module_named_setup_py_is_no_project_root(tmp_path):
    write_files(
        tmp_path,
        {
            "requirements.txt": "torch==2.0.0\n",
            ".git/HEAD": "",
            # A module of the package that sets up a model: the root's pin holds below it.
            "pkg/__init__.py": "",
            "pkg/eval/__init__.py": "",
            "pkg/eval/setup.py": "def setup_and_build_model(args):\n    return args\n",
            "pkg/eval/knn.py": "",
            # A package folder whose setup.py builds a distribution is a project of its own.
            "pkg/vendored/__init__.py": "",
            "pkg/vendored/setup.py": "from setuptools import setup\nsetup(name='v')\n",
            "pkg/vendored/ops.py": "",
        },
    )
    configuration = Configuration(cwd=tmp_path)
    pinned = configuration.settings_for(tmp_path / "pkg/eval/knn.py").options
    assert (pinned.torch_version, pinned.torch_below) == ((2, 0), (2, 0, 1))
    assert project_root(tmp_path / "pkg/eval/knn.py") == tmp_path
    vendored = configuration.settings_for(tmp_path / "pkg/vendored/ops.py").options
    assert (vendored.torch_version, vendored.torch_below) == ((2, 3), None)
    assert project_root(tmp_path / "pkg/vendored/ops.py") == tmp_path / "pkg/vendored"


def test_a_configured_torch_version_wins_over_the_declared_one(tmp_path):
    write_files(tmp_path, {"requirements.txt": "torch==1.11.0\n", "train.py": ""})
    by_option = Configuration(Overrides(torch_version=(2, 4)), cwd=tmp_path)
    options = by_option.settings_for(tmp_path / "train.py").options
    assert (options.torch_version, options.torch_below) == ((2, 4), None)
    write_files(tmp_path, {"pyproject.toml": '[tool.torchperf-lint]\ntorch-version = "2.2"\n'})
    options = Configuration(cwd=tmp_path).settings_for(tmp_path / "train.py").options
    assert (options.torch_version, options.torch_below) == ((2, 2), None)


def test_a_bare_torch_leaves_the_default_version(tmp_path):
    write_files(tmp_path, {"requirements.txt": "torch\n", "train.py": ""})
    options = Configuration(cwd=tmp_path).settings_for(tmp_path / "train.py").options
    assert (options.torch_version, options.torch_below) == ((2, 3), None)


# TPL301 on projects that declare their PyTorch.

TRAIN = """\
import torch
from torch.cuda.amp import GradScaler

scaler = GradScaler()
with torch.cuda.amp.autocast():
    pass
"""
FIXED = """\
import torch
from torch.amp import GradScaler

scaler = GradScaler("cuda")
with torch.amp.autocast("cuda"):
    pass
"""


def findings(tmp_path, *options: str) -> list[tuple[str, int, int, str | None, str | None]]:
    result = torchperf_lint("--no-cache", "--output-format", "json", *options, ".", cwd=tmp_path)
    return [
        (
            d["code"],
            d["location"]["row"],
            d["location"]["column"],
            d["fix"] and d["fix"]["applicability"],
            d["fix"] and d["fix"]["message"],
        )
        for d in json.loads(result.stdout)
    ]


def fix(tmp_path, *options: str) -> str:
    torchperf_lint("--no-cache", "--fix", "--unsafe-fixes", *options, ".", cwd=tmp_path)
    return (tmp_path / "train.py").read_text()


SAFE = [
    ("TPL301", 2, 28, "safe", 'Use `torch.amp.GradScaler` with `"cuda"`'),
    ("TPL301", 4, 10, "safe", 'Use `torch.amp.GradScaler` with `"cuda"`'),
    ("TPL301", 5, 6, "safe", 'Use `torch.amp.autocast` with `"cuda"`'),
]


def test_a_project_pinned_before_the_deprecation_gets_no_finding(tmp_path):
    write_files(tmp_path, {"requirements.txt": "torch==1.11.0\n", "train.py": TRAIN})
    assert findings(tmp_path) == []
    assert fix(tmp_path) == TRAIN


def test_a_project_capped_before_the_deprecation_gets_no_finding(tmp_path):
    write_files(
        tmp_path,
        {"setup.py": "from setuptools import setup\nsetup(install_requires=['torch>=1.8,<2.4'])\n",
         "train.py": TRAIN},
    )
    assert findings(tmp_path) == []


def test_a_project_whose_constraints_cap_it_before_the_deprecation_gets_no_finding(tmp_path):
    write_files(
        tmp_path,
        {"requirements.txt": "torch>=1.10.0\n", "constraints.txt": "torch<1.13.0\n", "train.py": TRAIN},
    )
    assert findings(tmp_path) == []
    assert fix(tmp_path) == TRAIN
    # Without the constraint, the same project gets the findings.
    (tmp_path / "constraints.txt").write_text("torch<2.6\n")
    assert [finding[:3] for finding in findings(tmp_path)] == [finding[:3] for finding in SAFE]


def test_a_project_pinned_in_its_conda_environment_gets_no_finding(tmp_path):
    environment = "dependencies:\n  - cudatoolkit=11.3\n  - pytorch=1.12.1\n  - pip:\n      - einops\n"
    write_files(tmp_path, {"environment.yaml": environment, "ldm/util.py": TRAIN})
    assert findings(tmp_path) == []
    # Unpinned there, the same project gets the findings.
    write_files(tmp_path, {"environment.yaml": "dependencies:\n  - pytorch\n"})
    assert [finding[:3] for finding in findings(tmp_path)] == [finding[:3] for finding in SAFE]


def test_a_project_that_pins_triton_of_an_older_release_gets_no_finding(tmp_path):
    write_files(tmp_path, {"vim_requirements.txt": "timm\ntriton==2.1.0\n", "train.py": TRAIN})
    assert findings(tmp_path) == []
    assert fix(tmp_path) == TRAIN
    # With the Triton of PyTorch 2.4, the same project gets the findings.
    write_files(tmp_path, {"vim_requirements.txt": "timm\ntriton==3.0.0\n"})
    assert [finding[:3] for finding in findings(tmp_path)] == [finding[:3] for finding in SAFE]


def test_a_program_that_imports_a_module_removed_in_torch_2_gets_no_finding(tmp_path):
    # VideoMAE: every entry point imports `utils`, whose `from torch._six import inf` fails
    # on PyTorch 2.0 and later, long before these names warn (2.4).
    write_files(
        tmp_path,
        {
            "utils.py": "import torch\nfrom torch._six import inf\n",
            "engine.py": TRAIN,
            "run_pretraining.py": "import torch\nimport engine\nimport utils\n",
            "run_finetuning.py": "import torch\nfrom engine import scaler\nfrom utils import inf\n",
        },
    )
    assert findings(tmp_path) == []
    # A program that does not import it runs on any release: the module both use is reported.
    write_files(tmp_path, {"evaluate.py": "import torch\nimport engine\n"})
    assert [finding[:3] for finding in findings(tmp_path)] == [finding[:3] for finding in SAFE]


@pytest.mark.parametrize(
    "imported",
    [
        # ColossalAI's examples: modules only its releases for PyTorch 1 had, and its legacy
        # engine, whose releases support PyTorch 2.1 at most.
        "from colossalai.utils.memory_utils.utils import colo_set_process_memory_fraction\n",
        "from colossalai.gemini import ChunkManager, GeminiManager\n",
        "import colossalai.engine\n",
        # timm 0.3's `Dataset`: its releases import `torch._six.container_abcs` (gone in 1.9).
        "from timm.data import Dataset, create_loader\n",
    ],
)
def test_a_program_that_imports_a_framework_module_of_old_releases_gets_no_finding(tmp_path, imported):
    write_files(tmp_path, {"utils.py": "import torch\n" + imported, "train.py": "import utils\n" + TRAIN})
    assert findings(tmp_path) == []


def test_a_guarded_import_of_a_removed_module_runs_on_any_release(tmp_path):
    guarded = "try:\n    from torch._six import inf\nexcept ImportError:\n    from torch import inf\n"
    write_files(tmp_path, {"utils.py": guarded, "train.py": "import utils\n" + TRAIN})
    assert [(code, row - 1, column) for code, row, column, *_ in findings(tmp_path)] == [
        finding[:3] for finding in SAFE
    ]


def test_a_floor_older_than_torch_amp_gets_the_finding_with_a_display_only_fix(tmp_path):
    write_files(
        tmp_path,
        {"pyproject.toml": '[project]\nname = "p"\ndependencies = ["torch>=1.11"]\n', "train.py": TRAIN},
    )
    needs = " (needs PyTorch 2.3; the oldest supported is 1.11)"
    assert findings(tmp_path) == [
        (code, row, column, "display-only", message + needs) for code, row, column, _, message in SAFE
    ]
    assert fix(tmp_path) == TRAIN


def test_a_floor_with_torch_amp_gets_the_safe_fix(tmp_path):
    write_files(tmp_path, {"requirements.txt": "torch>=2.4.1, <2.7.0\n", "train.py": TRAIN})
    assert findings(tmp_path) == SAFE
    assert fix(tmp_path) == FIXED


def test_without_a_packaging_file_the_default_version_holds(tmp_path):
    write_files(tmp_path, {"train.py": TRAIN})
    assert findings(tmp_path) == SAFE
    assert fix(tmp_path) == FIXED


def test_the_torch_version_option_overrides_the_declared_pin(tmp_path):
    write_files(tmp_path, {"requirements.txt": "torch==1.11.0\n", "train.py": TRAIN})
    assert findings(tmp_path, "--torch-version", "2.4") == SAFE
    assert fix(tmp_path, "--torch-version", "2.4") == FIXED


def test_editing_the_requirements_misses_the_cache(tmp_path):
    write_files(tmp_path, {"requirements.txt": "torch==1.11.0\n", "train.py": TRAIN})
    first = torchperf_lint("--output-format", "concise", ".", cwd=tmp_path)
    assert (first.returncode, first.stdout) == (0, "All checks passed!\n")
    write_files(tmp_path, {"requirements.txt": "torch>=2.4\n"})
    second = torchperf_lint("--output-format", "concise", ".", cwd=tmp_path)
    assert second.returncode == 1
    assert [line.split(" TPL301 ")[0] for line in second.stdout.splitlines()] == [
        "train.py:2:28:",
        "train.py:4:10:",
        "train.py:5:6:",
        "Found 3 errors (3 fixable with --fix).",
    ]


def test_show_settings_names_where_the_version_comes_from(tmp_path):
    write_files(tmp_path, {"requirements.txt": "torch>=1.11,<2.4\n", "train.py": TRAIN})

    def torch_line(*options: str) -> str:
        result = torchperf_lint("--show-settings", *options, "train.py", cwd=tmp_path)
        return next(line for line in result.stdout.splitlines() if line.startswith("torch-version"))

    assert torch_line() == 'torch-version = "1.11"  # declared in requirements.txt, below 2.4.0'
    assert torch_line("--torch-version", "2.4") == 'torch-version = "2.4"'
    write_files(tmp_path, {"requirements.txt": "torch>=1.11\n", "constraints.txt": "torch<1.13\n"})
    assert torch_line() == (
        'torch-version = "1.11"  # declared in requirements.txt, constraints.txt, below 1.13.0'
    )


# An OpenMMLab package's import-time check of mmcv (MMYOLO, MMAction2, MMSegmentation, MMTracking).
MMCV_CHECK = """import mmcv
from mmengine.utils import digit_version

mmcv_minimum_version = '2.0.0rc4'
mmcv_maximum_version = '{maximum}'
mmcv_version = digit_version(mmcv.__version__)

assert (mmcv_version >= digit_version(mmcv_minimum_version)
        and mmcv_version {compared} digit_version(mmcv_maximum_version)), \\
    f'Please install mmcv>={{mmcv_minimum_version}}, {compared}{{mmcv_maximum_version}}.'
"""
MMCV_MAX_CHECK = """MMCV_MIN = '1.3.1'
MMCV_MAX = '{maximum}'
mmcv_max_version = digit_version(MMCV_MAX)
assert (mmcv_min_version <= mmcv_version {compared} mmcv_max_version)
"""


@pytest.mark.parametrize(
    ("check", "maximum", "compared", "below"),
    [
        # MMYOLO: mmcv 2.0.x, whose wheels stop at PyTorch 2.0.
        (MMCV_CHECK, "2.1.0", "<", (2, 1, 0)),
        # MMRazor allows 2.1.0 itself, built for PyTorch 2.1.
        (MMCV_CHECK, "2.1.0", "<=", (2, 2, 0)),
        # Video Swin's MMAction2: mmcv-full 1.3-1.4, built up to PyTorch 1.11.
        (MMCV_CHECK, "1.4.0", "<=", (1, 12, 0)),
        (MMCV_MAX_CHECK, "1.3.0", "<=", (1, 11, 0)),
        (MMCV_MAX_CHECK, "1.5.0", "<", (1, 12, 0)),
    ],
)
def test_an_import_time_check_of_mmcv_caps_torch(tmp_path, check, maximum, compared, below):
    write_files(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(install_requires=[])\n",
            "requirements/build.txt": "torch>=1.3\n",
            "mmpkg/__init__.py": check.format(maximum=maximum, compared=compared),
        },
    )
    declared = declared_torch(tmp_path)
    assert declared.versions == TorchRange((1, 3, 0), below)
    assert declared.files == ("requirements/build.txt", "mmpkg/__init__.py")


@pytest.mark.parametrize(
    ("check", "maximum", "compared"),
    [
        # MMTracking's `<2.0.0` allows any mmcv-full 1.x, and mmcv-full 1.7 reaches PyTorch 2.
        (MMCV_MAX_CHECK, "2.0.0", "<"),
        (MMCV_CHECK, "1.8.0", "<"),
        # mmcv 2.2 reaches releases the table does not follow.
        (MMCV_CHECK, "2.2.0", "<="),
    ],
)
def test_an_mmcv_check_past_the_table_caps_nothing(tmp_path, check, maximum, compared):
    write_files(
        tmp_path,
        {"requirements.txt": "torch>=1.8\n", "mmpkg/__init__.py": check.format(maximum=maximum, compared=compared)},
    )
    assert declared_torch(tmp_path).versions == TorchRange((1, 8, 0), None)


def test_an_mmcv_check_alone_declares_its_cap_and_the_newest_release_it_allows(tmp_path):
    write_files(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(install_requires=['mmengine'])\n",
            "mmpkg/__init__.py": MMCV_CHECK.format(maximum="2.1.0", compared="<"),
            "train.py": TRAIN,
        },
    )
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange(None, (2, 1, 0)), ("mmpkg/__init__.py",))
    result = torchperf_lint("--show-settings", "train.py", cwd=tmp_path)
    assert 'torch-version = "2.0"  # declared in mmpkg/__init__.py, below 2.1.0' in result.stdout.splitlines()
    # The deprecations TPL301 reports warn only from PyTorch 2.4 on.
    linted = torchperf_lint("--output-format", "concise", "--select", "TPL301", "train.py", cwd=tmp_path)
    assert (linted.returncode, linted.stdout) == (0, "All checks passed!\n")


@pytest.mark.parametrize(
    ("lines", "oldest", "below"),
    [
        # Vim's `vim_requirements.txt`: its torch line commented out, Triton pinned.
        ("# torch==2.1.1+cu118\ntriton==2.1.0\n", (2, 1, 0), (2, 2, 0)),
        ("triton==3.0.0\n", (2, 4, 0), (2, 5, 0)),
        ("triton == 2.3.*\n", (2, 3, 0), (2, 4, 0)),
        # The pin narrows the file's torch line.
        ("torch>=1.13\ntriton==2.1.0\n", (2, 1, 0), (2, 2, 0)),
        # VideoMAEv2: Triton 1.x goes with PyTorch 1 only, which needs no Triton.
        ("torch>=1.2\ntriton==1.0.0\n", (1, 2, 0), (2, 0, 0)),
        # A contradicting pin, a range, or a release not in the table say nothing.
        ("torch>=2.4\ntriton==2.1.0\n", (2, 4, 0), None),
        ("torch>=1.13\ntriton>=2.1\n", (1, 13, 0), None),
        ("torch>=1.13\ntriton==9.0.0\n", (1, 13, 0), None),
        # HyenaDNA: no torch line, and "torchtext==0.14.0 # this needs to align with the
        # pytorch version".
        ("torchvision\ntorchtext==0.14.0 # this needs to align with the pytorch version\n", (1, 13, 0), (1, 14, 0)),
        ("torch>=1.7\ntorchvision==0.8.2\n", (1, 7, 0), (1, 8, 0)),
        ("torchvision==0.15.2\ntorchaudio==2.0.2\n", (2, 0, 0), (2, 1, 0)),
        ("torchaudio==0.13.1\n", (1, 13, 0), (1, 14, 0)),
        ("torch\ntorchvision==0.19.*\n", (2, 4, 0), (2, 5, 0)),
        # A range, or a release past the table, says nothing.
        ("torch>=2.0\ntorchvision>=0.15\n", (2, 0, 0), None),
        ("torch>=2.0\ntorchvision==0.40.0\n", (2, 0, 0), None),
    ],
)
def test_a_pinned_companion_names_the_torch_release_it_installs_with(tmp_path, lines, oldest, below):
    # Triton, torchvision, torchaudio and torchtext each require one PyTorch release.
    write_files(tmp_path, {"requirements.txt": lines})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange(oldest, below), ("requirements.txt",))


def test_a_triton_range_alone_declares_nothing(tmp_path):
    write_files(tmp_path, {"requirements.txt": "triton>=2.1\nnumpy\n"})
    assert declared_torch(tmp_path) is None


CHECKPOINTED = """\
import torch
from torch.utils.checkpoint import checkpoint


def forward(block, x):
    return checkpoint(block, x)
"""


def test_checkpointing_warns_only_from_torch_2_1(tmp_path):
    # VideoMAE's blocks: no release the code runs on warns about `use_reentrant`.
    write_files(tmp_path, {"requirements.txt": "torch==1.13.1\n", "model.py": CHECKPOINTED})
    assert findings(tmp_path) == []
    write_files(tmp_path, {"requirements.txt": "torch>=1.13.1\n"})
    assert findings(tmp_path) == [
        ("TPL502", 6, 12, "unsafe", "Pass `use_reentrant=False`"),
    ]
    # Before 1.11 the argument does not exist: the finding has no fix.
    write_files(tmp_path, {"requirements.txt": "torch>=1.8\n"})
    assert findings(tmp_path) == [("TPL502", 6, 12, None, None)]


def test_a_triton_pin_alone_in_a_feature_requirements_file_declares_nothing(tmp_path):
    # GPT-NeoX: `requirements/` holds the main list and one per optional feature.
    write_files(
        tmp_path,
        {
            "requirements/requirements.txt": "numpy\n",
            "requirements/requirements-sparseattention.txt": "triton==2.1.0\n",
        },
    )
    assert declared_torch(tmp_path) is None


def test_a_conda_pytorch_cuda_pin_narrows_the_files_pytorch(tmp_path):
    # PixArt: `pytorch >= 1.13` with `pytorch-cuda=11.7`, which only 1.13 and 2.0 are built for.
    environment = "dependencies:\n  - pytorch >= 1.13\n  - pytorch-cuda=11.7\n  - pip:\n      - timm\n"
    write_files(tmp_path, {"environment.yml": environment})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((1, 13, 0), (2, 1, 0)), ("environment.yml",))
    write_files(tmp_path, {"environment.yml": environment.replace("11.7", "12.4")})
    assert declared_torch(tmp_path).versions == TorchRange((2, 4, 0), (2, 6, 0))


def test_a_conda_file_named_requirements_yaml_is_read_and_its_pins_hold_together(tmp_path):
    # MDLM: `requirements.yaml` is a conda file; `pytorch-cuda=12.1` and `triton==2.2.0`
    # together install PyTorch 2.2.
    environment = (
        "name: mdlm\ndependencies:\n  - pytorch-cuda=12.1\n  - pip:\n"
        "      - lightning==2.2.1\n      - triton==2.2.0\n"
    )
    write_files(tmp_path, {"requirements.yaml": environment})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((2, 2, 0), (2, 3, 0)), ("requirements.yaml",))


@pytest.mark.parametrize(
    ("readme", "oldest"),
    [
        # GroupViT: a conda install command in a fenced block.
        (
            (
                "## Setup\n```shell\nconda create -n groupvit python=3.7 -y\n"
                "conda install pytorch==1.8.0 torchvision==0.9.0 cudatoolkit=11.1 -c pytorch\n```\n"
            ),
            (1, 8, 0),
        ),
        # A pip command with a local version and an index, prompt and all.
        (
            "    $ pip install torch==1.8.0+cu111 torchvision==0.9.0+cu111 -f https://x.org/whl\n",
            (1, 8, 0),
        ),
        # SNN-MLP: a requirements list in a code block.
        ("## Requirements\n```bash\ntorch==1.7.1\ntorchvision==0.8.2\ntimm==0.3.2\n```\n", (1, 7, 1)),
        # Two recipes (one per CUDA version) are alternatives.
        (
            "`pip install torch==1.12.1`\n\n    python -m pip install 'torch==1.10.0' && pip install -e .\n",
            (1, 10, 0),
        ),
        ("```\nconda install -y pytorch=1.4.0 cudatoolkit=10.0 -c pytorch\n```\n", (1, 4, 0)),
        # DAT: a list of dependencies, one item per package.
        ("## Dependencies\n\n- Python 3.9\n- PyTorch == 1.11.0\n- timm == 0.5.4\n", (1, 11, 0)),
        ("* `torch>=2.1,<2.4`\n", (2, 1, 0)),
    ],
)
def test_a_readme_install_command_declares_the_oldest_torch_the_code_runs_on(tmp_path, readme, oldest):
    # A floor only: the README shows an environment its authors tested, and caps nothing.
    write_files(tmp_path, {"README.md": readme})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange(oldest, None), ("README.md",))


@pytest.mark.parametrize(
    "readme",
    [
        "Requires PyTorch 1.8 or newer: torch==1.8 is what we tested.\n",  # prose
        "Without it, run `pip install 'torch>=2.1'` or `conda install pytorch==1.8.0`.\n",
        "```\npip install torch torchvision\n```\n",  # no version
        "```\npip install -r requirements.txt -c pytorch==1.8\nconda install -c pytorch==1.8 numpy\n```\n",
        "```\ntorch\nnumpy==1.24\n```\n",
        "- PyTorch 1.11 or newer, with torch==1.11 tested\n- PyTorch\n",
    ],
)
def test_a_readme_without_a_pinned_install_declares_nothing(tmp_path, readme):
    write_files(tmp_path, {"README.md": readme})
    assert declared_torch(tmp_path) is None


def test_an_install_script_pins_what_it_installs_before_a_readme_is_read(tmp_path):
    # VQ-Diffusion: no packaging file, an `install_req.sh` that runs pip.
    script = (
        "#!/bin/bash\n"
        "pip install torch==1.9.0 torchvision --no-cache-dir -U | cat\n"
        "pip install timm==0.3.4 --no-cache-dir -U | cat  # pinned too\n"
    )
    write_files(tmp_path, {"install_req.sh": script, "README.md": "pip install torch==1.8.0\n"})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((1, 9, 0), (1, 9, 1)), ("install_req.sh",))
    # The packaging says what the project runs on, when it says it.
    write_files(tmp_path, {"requirements.txt": "torch>=1.10\n"})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((1, 10, 0), None), ("requirements.txt",))
    # A script that installs torch without a version says nothing: the README's floor holds.
    write_files(tmp_path, {"requirements.txt": "", "install_req.sh": "pip install torch torchvision\n"})
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((1, 8, 0), None), ("README.md",))


def test_a_conda_environment_pin_holds_over_a_torch_named_without_a_version(tmp_path):
    # RCG: `install_requires=["torch"]` and a conda environment pinning PyTorch 1.7.1.
    write_files(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='rcg', install_requires=['torch', 'numpy'])\n",
            "environment.yaml": "dependencies:\n  - pytorch=1.7.1\n",
        },
    )
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((1, 7, 1), (1, 7, 2)), ("environment.yaml",))
    # A floor in the packaging is a way to install as well: the range stays open.
    write_files(tmp_path, {"requirements.txt": "torch>=1.6\n"})
    assert declared_torch(tmp_path).versions == TorchRange((1, 6, 0), None)
    # Without the environment's version, nothing declares one.
    write_files(tmp_path, {"environment.yaml": "dependencies:\n  - pytorch\n", "requirements.txt": ""})
    assert declared_torch(tmp_path).versions == TorchRange()


def test_a_readme_below_the_root_declares_only_where_the_packaging_above_does_not(tmp_path):
    pin = "```\nconda install pytorch==1.10.1 -c pytorch\n```\n"
    write_files(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='d', install_requires=['torch>=1.4'])\n",
            "examples/community/README.md": pin,
            "examples/community/pipeline.py": TRAIN,
            "research/snn/readme.md": pin,
            "research/snn/models/mlp.py": TRAIN,
        },
    )
    configuration = Configuration(cwd=tmp_path)
    community = configuration.declared_torch(tmp_path / "examples/community/pipeline.py")
    assert (community.directory, community.versions) == (tmp_path, TorchRange((1, 4, 0), None))
    (tmp_path / "setup.py").unlink()
    snn = Configuration(cwd=tmp_path).declared_torch(tmp_path / "research/snn/models/mlp.py")
    assert (snn.directory, snn.versions, snn.files) == (
        tmp_path / "research/snn",
        TorchRange((1, 10, 1), None),
        ("readme.md",),
    )


def test_a_readme_pin_keeps_the_finding_and_makes_a_breaking_fix_display_only(tmp_path):
    # Mask2Former's INSTALL.md installs PyTorch 1.9; the code runs, and warns, on newer
    # releases too, but `torch.amp.autocast` and `torch.amp.GradScaler` would break it there.
    readme = "# Install\n\n```\nconda install pytorch==1.9.0 torchvision==0.10.0 -c pytorch\n```\n"
    write_files(tmp_path, {"INSTALL.md": readme, "train.py": TRAIN})
    pinned = findings(tmp_path)
    assert [finding[:3] for finding in pinned] == [finding[:3] for finding in SAFE]
    assert fix(tmp_path) == TRAIN
    write_files(tmp_path, {"INSTALL.md": "# Install\n\n```\npip install torch torchvision\n```\n"})
    assert fix(tmp_path) != TRAIN


def test_a_readme_pin_adds_nothing_to_what_the_packaging_declares(tmp_path):
    # PixArt: the packaging caps PyTorch below 2.1.2; the README's install line neither
    # lifts that cap nor raises the floor.
    write_files(
        tmp_path,
        {
            "requirements.txt": "torch>=1.13,<2.1.2\n",
            "README.md": "```\npip install torch==2.1.1 torchvision==0.16.1\n```\n",
        },
    )
    declared = declared_torch(tmp_path)
    assert (declared.versions, declared.files) == (TorchRange((1, 13, 0), (2, 1, 2)), ("requirements.txt",))


def test_a_folder_named_like_a_readme_and_an_undecodable_readme_declare_nothing(tmp_path):
    (tmp_path / "install").mkdir()  # a folder of install scripts, not a README
    (tmp_path / "install" / "setup.sh").write_text("pip install torch==1.8.0\n")
    (tmp_path / "README").write_bytes(b"\xff\xfe\x00pip install torch\x00\n")
    assert declared_torch(tmp_path) is None


PRE_0_4_SCRIPT = """import torch
from torch.autograd import Variable
from torch.utils.data import DataLoader


def evaluate(model, dataset):
    model.eval()
    for data, target in DataLoader(dataset, batch_size=256, num_workers=4, pin_memory=True):
        data = data.cuda()
        scores = torch.zeros(256).cuda()
        scores += model(Variable(data, volatile=True)).data
"""


def test_advice_that_needs_torch_0_4_is_not_given_to_a_project_pinned_before_it(tmp_path):
    # knowledge-distillation-pytorch pins `torch==0.3.0.post4`: no `torch.no_grad()` (TPL701),
    # no `non_blocking=` (TPL104), no factory `device=` (TPL105).
    write_files(tmp_path, {"requirements.txt": "torch==0.3.0.post4\n", "evaluate.py": PRE_0_4_SCRIPT})
    assert findings(tmp_path) == []
    write_files(tmp_path, {"requirements.txt": "torch>=0.3\n"})
    assert [finding[:3] for finding in findings(tmp_path)] == [
        ("TPL701", 7, 5),
        ("TPL104", 9, 16),
        ("TPL105", 10, 18),
    ]
