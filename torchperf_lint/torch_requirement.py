"""The PyTorch versions a project declares it runs on, read from its packaging files.

When `torch-version` is not configured, the rules that depend on the PyTorch version (TPL301,
TPL603) take it from what the project installs. A directory declares PyTorch when one of
these names `torch` with or without a version:

- `pyproject.toml`: `[project].dependencies`;
- `setup.cfg`: `[options] install_requires`;
- `setup.py`, read without running it: the strings of `install_requires=[...]` (or of the
  list literal a module-level name it passes is bound to), the `.txt` files it names
  (`open("requirements.txt")`), read as requirements files, and the checks of
  `torch.__version__` it runs at its top level (`assert torch_ver >= [1, 8]`, `if
  version.parse(torch.__version__) < version.parse("1.8"): raise ...`), which raise the
  floor of the folder's other declarations to 1.8, or declare `torch>=1.8` when there is
  none;
- `requirements*.txt` (also `*-requirements.txt` and `*_requirements.txt`) and
  `requirements/*.txt`;
- in any of these, a pinned Triton (`triton==2.1.0`): each PyTorch release requires one
  Triton release, so the pin names the PyTorch it installs with (`torch==2.1.*`), narrowing
  the file's `torch` lines, or alone where the file is the folder's one requirements file
  (among several, a Triton pin with no torch line is what an optional feature needs:
  `requirements/requirements-sparseattention.txt`) (Triton 2.0–2.3 go with PyTorch 2.0–2.3,
  3.0–3.4 with 2.4–2.8; other Triton releases say nothing); so does a pinned torchvision,
  torchaudio or torchtext, each release of which requires one PyTorch release
  (`torchtext==0.14.0` installs PyTorch 1.13; torchvision 0.5–0.24 go with PyTorch
  1.4–2.9, torchaudio 0.4–0.13 and 2.0–2.9 with 1.4–1.13 and 2.0–2.9, torchtext 0.5–0.18 with
  1.4–2.3);
- a conda environment file (`environment.yml`, `environment.yaml`, `environment-gpu.yml`,
  or a conda file named `requirements.yaml`, `conda.yml`): its `dependencies`
  (`pytorch=1.12.1`, `pytorch>=2.1`, `pytorch::pytorch`, also `pytorch-gpu`/`pytorch-cpu`)
  and the requirement lines of their `pip:` list (`torch==2.1.0`). Conda's `=1.12.1` allows
  the releases that start with it (`==1.12.1.*`), `==` exactly that one; a build string after
  a second `=` is not read. A `pytorch-cuda=11.7` entry narrows the file's PyTorch to the
  releases PyTorch's conda channel builds for that CUDA version (11.7: 1.13 and 2.0);
- a README (`README.md`, `readme.md`, `README.rst`, `README`) or `INSTALL.md`, in a
  project's root or in a folder below it when no packaging file of the folders above
  declares torch (a README in `examples/community/` may pin what one of its scripts
  needs; the project's packaging says what the project runs on): its install
  commands (`pip install torch==1.7.1 torchvision==0.8.2`, `conda install pytorch==1.8.0
  cudatoolkit=11.1 -c pytorch`, also `python -m pip`, `pip3`, `mamba`), and the lines of
  its fenced code blocks that are requirement lines (`torch==1.7.1` in a "Requirements"
  block), and the items of its lists that are one (`- PyTorch == 1.11.0` under
  "Dependencies"); only those that give torch a version: the README's other mentions of PyTorch
  are prose, and `pip install torch` says nothing about a version. Before a README, an
  install script in the folder (`install.sh`, `install_req.sh`) is read the same way where
  the packaging files declare nothing: it installs what it names, so its `pip install
  torch==1.9.0` pins as a requirements file does. A README declares a
  floor only, the oldest release the code must keep running on (`torch==1.8.0` there is
  `torch>=1.8.0`): it shows an environment its authors tested, which nothing installs
  for the user, so it caps nothing (the code may well run, and warn, on newer releases),
  but a fix must not break the code on the release it names. It is read only where the
  folder's packaging files declare nothing: they say what the project runs on.

An OpenMMLab package refuses at import every mmcv outside the range it was written for
(`mmcv_maximum_version = '1.4.0'` and an `assert` in `mmaction/__init__.py`, also `MMCV_MAX`),
and mmcv's compiled releases (`mmcv-full` 1.x, `mmcv` 2.x) go with the PyTorch releases out
when they shipped: the newest one the range allows caps torch (mmcv 1.4: before 1.12; 2.0:
before 2.1, the first one mmcv 2.1.0 was built for), and declares that cap alone where
nothing names torch. The check is read in a package folder (one with an `__init__.py`) of a
folder whose packaging files or requirements are read: the project's root.

A conda environment file is a recipe for the whole environment: where it gives torch a
version, a `torch` that another file of the folder names without one
(`install_requires=["torch"]` in a `setup.py`) only says that the project needs PyTorch,
and the environment's version holds.

A pip constraints file (`constraints*.txt`, also `requirements/constraints*.txt`), which
`pip install -c` applies to every install of the project (its CI's), caps every declaration:
the range gets the constraint's upper bound (`torch<1.13.0`). A constraint only narrows: it
never declares torch on its own (a directory with a constraints file and no declaration
declares nothing), and its floor is not read. Several constraints files that cap torch are
alternatives: the highest cap holds, and none when one names torch without a bound.

Extras (`optional-dependencies`, `extras_require`) are not read: they are what an optional
feature needs (a tool, the docs), often another range than the code the project installs.

Each requirement line is one declaration; its specifiers hold together (`torch>=2.4.1,<2.7`).
Different declarations are different ways to install the project (the `-min` pins, an
extra, a marker for old Pythons), so the project runs on any of them: the oldest version is
the lowest floor among them, and there is an upper bound only when every declaration has one.
Environment markers are not evaluated, and a URL requirement (`torch @ https://...`) says
nothing about the version. Nothing here imports `packaging`: the core depends only on
libcst and click.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on older interpreters
    import tomli as tomllib

Version = tuple[int, ...]

# Patterns, compiled (and kept by `re`) when first used: most projects declare PyTorch in no
# requirements file, and a run reads no declaration unless one is there.
_NAME = r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*(.*)"
_SPECIFIER = (
    r"(?i)\s*(~=|===|==|!=|<=|>=|<|>)\s*v?(\d+(?:\.\d+)*)(\.\*)?"
    # A pre-, post-, dev- or local part: the release numbers decide here.
    r"(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview|post|rev|r|dev)[-_.]?\d*)*(?:\+[A-Za-z0-9.]+)?\s*"
)
_REQUIREMENTS_FILE = r"(?:[^/\\]*[-_])?requirements[^/\\]*\.txt"
_CONSTRAINTS_FILE = r"constraints[^/\\]*\.txt"
# Conda environment files: `environment.yml`, also `environment-gpu.yaml`, a conda file
# named `requirements.yaml` or `conda.yml`.
_CONDA_ENVIRONMENT_FILE = r"(?:[^/\\]*[-_])?(?:environment|requirements|conda)[^/\\]*\.ya?ml"
# Conda's names for PyTorch's package, on its own channel and on conda-forge.
_CONDA_TORCH_PACKAGES = ("pytorch", "pytorch-gpu", "pytorch-cpu")
# The files that say how to install a project in prose, with commands.
_README_FILE = r"(?i)(?:readme|install)(?:\.(?:md|markdown|rst|txt))?"
# Shell scripts that install a project's packages: `install.sh`, `install_req.sh`.
_INSTALL_SCRIPT = r"(?i)install[\w.-]*\.sh"
# A command that installs packages: `pip install`, `python3 -m pip install`, `conda install`.
_INSTALL_COMMAND = (
    r"(?:sudo\s+)?(?:python[\d.]*\s+-m\s+)?(pip[\d.]*|conda|mamba|micromamba)\s+install\s+(.*)"
)
# The options of those commands that take a value (`-c pytorch`, `-f <url>`): not packages.
_OPTIONS_WITH_A_VALUE = frozenset(
    ("-c", "--channel", "-f", "--find-links", "-i", "--index-url", "--extra-index-url", "-n",
     "--name", "-p", "--prefix", "-r", "--requirement", "-e", "--editable", "--target", "-t")
)
# A file `setup.py` names that may hold requirements: a relative path to a `.txt` file.
_REQUIREMENTS_PATH = r"[\w.-]+(?:/[\w.-]+)*\.txt"


class TorchRange(NamedTuple):
    """The PyTorch releases one declaration (or a whole project) allows: at least `oldest`
    (None: no floor), older than `below` (None: no upper bound). Versions are release
    numbers padded to three parts: `(2, 4, 0)`."""

    oldest: Version | None = None
    below: Version | None = None

    def union(self, other: TorchRange) -> TorchRange:
        """The releases either allows (as one range: the lower floor, the higher bound)."""
        floors = [v for v in (self.oldest, other.oldest) if v is not None]
        below = None if self.below is None or other.below is None else max(self.below, other.below)
        return TorchRange(min(floors) if floors else None, below)

    def raised(self, oldest: Version | None) -> TorchRange:
        """The releases this range allows that are also `oldest` or newer (None: no floor)."""
        if oldest is None or (self.oldest is not None and self.oldest >= oldest):
            return self
        return TorchRange(oldest, self.below)

    def narrowed(self, other: TorchRange) -> TorchRange | None:
        """The releases both allow; None when there are none (`torch>=2.4` with a pin that
        only PyTorch 2.1 installs with)."""
        both = self.raised(other.oldest).capped(other.below)
        empty = both.oldest is not None and both.below is not None and both.below <= both.oldest
        return None if empty else both

    def capped(self, below: Version | None) -> TorchRange:
        """The releases this range allows that are also older than `below` (None: no cap)."""
        if below is None or (self.below is not None and self.below <= below):
            return self
        return TorchRange(self.oldest, below)


class DeclaredTorch(NamedTuple):
    """The PyTorch a project declares, and where: the file names, relative to `directory`,
    of its declarations."""

    directory: Path
    versions: TorchRange
    files: tuple[str, ...]


def parse_torch_requirement(text: str) -> TorchRange | None:
    """The releases a PEP 508 requirement line allows, when it names `torch` (any extras);
    None for another project, or a line whose version specifiers cannot be read.

    `torch==1.11.0` is `[1.11.0, 1.11.1)`, `torch~=2.1` is `[2.1.0, 3.0.0)`, `torch>2.0` is
    taken as `>=2.0` (a floor is what matters), `!=` excludes too little to matter, and
    `torch @ <url>` allows anything."""
    match = re.fullmatch(_NAME, text.split(";", 1)[0].split(" #", 1)[0].strip())
    if match is None or match.group(1).lower() != "torch":
        return None
    rest = match.group(2).strip()
    if rest.startswith("@"):
        return TorchRange()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    oldest: Version | None = None
    below: Version | None = None
    for specifier in filter(str.strip, rest.split(",")):
        parsed = re.fullmatch(_SPECIFIER, specifier)
        if parsed is None:
            return None
        parts = tuple(int(part) for part in parsed.group(2).split("."))
        floor, bound = _bounds(parsed.group(1), parts, wildcard=parsed.group(3) is not None)
        if floor is not None:
            oldest = floor if oldest is None else max(oldest, floor)
        if bound is not None:
            below = bound if below is None else min(below, bound)
    return TorchRange(oldest, below)


def _bounds(operator: str, parts: Version, wildcard: bool) -> tuple[Version | None, Version | None]:
    """The floor and the exclusive upper bound one specifier (`operator` and the release
    numbers written) sets."""
    release = _release_of(parts)
    if operator in ("==", "==="):
        # `==2.3.*` allows any 2.3 release, `==2.3` only 2.3.0.
        return release, _next(parts if wildcard else release)
    if operator in (">=", ">"):
        return release, None
    if operator == "<=":
        return None, _next(release)
    if operator == "<":
        return None, release
    if operator == "~=" and len(parts) >= 2:  # `~=2.1`: >=2.1, ==2.*
        return release, _release_of(_next(parts[:-1]))
    return None, None  # `!=`, or `~=` with one part (invalid): no bound worth reading.


def newest_before(below: Version) -> tuple[int, int]:
    """The newest `major.minor` older than the release `below`: 2.0 before 2.1.0, 1.12 before
    1.12.2 (1.12.1 is older), 1.99 (any 1.x) before 2.0.0."""
    major, minor, patch = below
    if patch:
        return major, minor
    return (major, minor - 1) if minor else (major - 1, 99)


def _release_of(parts: Version) -> Version:
    return parts + (0,) * (3 - len(parts))


def _next(release: Version) -> Version:
    """The smallest release after every release that starts with `release` (`2.3` → `2.4`)."""
    return _release_of(release[:-1] + (release[-1] + 1,))


def declared_torch(directory: Path, readmes: bool = True) -> DeclaredTorch | None:
    """What the packaging files in `directory` declare about torch (with `readmes`, its
    README's install lines too); None when none names it (or none can be read)."""
    try:
        names = set(os.listdir(directory))
    except OSError:
        return None
    found: list[tuple[str, TorchRange]] = []
    requirement_files = sorted(name for name in names if re.fullmatch(_REQUIREMENTS_FILE, name))
    if "pyproject.toml" in names:
        found.extend(("pyproject.toml", r) for r in _torch_in(_pyproject(directory / "pyproject.toml")))
    if "setup.cfg" in names:
        found.extend(("setup.cfg", r) for r in _torch_in(_setup_cfg(directory / "setup.cfg")))
    checks: list[TorchRange] = []
    if "setup.py" in names:
        install_requires, named_files, version_checks = _setup_py(directory / "setup.py")
        found.extend(("setup.py", r) for r in _torch_in(install_requires))
        requirement_files.extend(name for name in named_files if os.path.isfile(directory / name))
        checks = list(_torch_in(version_checks))
    constraint_files = sorted(name for name in names if re.fullmatch(_CONSTRAINTS_FILE, name))
    if "requirements" in names and os.path.isdir(directory / "requirements"):
        try:
            listed = sorted(os.listdir(directory / "requirements"))
        except OSError:
            listed = []
        for name in listed:
            if re.fullmatch(_CONSTRAINTS_FILE, name):
                constraint_files.append(f"requirements/{name}")
            elif name.endswith(".txt"):
                requirement_files.append(f"requirements/{name}")
    # A Triton pin alone declares torch only in the folder's one requirements file: among
    # several, it is what an optional feature needs (`requirements-sparseattention.txt`).
    sole = len(set(requirement_files)) == 1
    for name in dict.fromkeys(requirement_files):
        found.extend(
            (name, r) for r in _torch_in(_requirement_lines(directory / name), pin_declares=sole)
        )
    environments: list[tuple[str, TorchRange]] = []
    for name in sorted(name for name in names if re.fullmatch(_CONDA_ENVIRONMENT_FILE, name)):
        environments.extend((name, r) for r in _torch_in(_conda_requirement_lines(directory / name)))
    if any(declaration != TorchRange() for _, declaration in environments):
        # The environment's version holds over a `torch` named without one (`install_requires`).
        found = [(name, r) for name, r in found if r != TorchRange()]
    found.extend(environments)
    if not found and not checks:  # an install script installs what it pins, as a requirements file
        for name in sorted(name for name in names if re.fullmatch(_INSTALL_SCRIPT, name)):
            found.extend((name, r) for r in _torch_in(_script_requirement_lines(directory / name)))
    if not found and not checks:  # the packaging says what the project runs on, if it does
        for name in sorted(name for name in names if readmes and re.fullmatch(_README_FILE, name)):
            found.extend(
                (name, TorchRange(r.oldest)) for r in _torch_in(_readme_requirement_lines(directory / name))
            )
    if not found and checks:
        found = [("setup.py", check) for check in checks[:1]]
    packaged = found or requirement_files or names & {"setup.py", "setup.cfg", "pyproject.toml"}
    mmcv_cap = _mmcv_cap(directory, names) if packaged else None
    if not found and mmcv_cap is not None:
        found = [(mmcv_cap[0], TorchRange(None, mmcv_cap[1]))]
    if not found:
        return None
    versions = found[0][1]
    for _, declaration in found[1:]:
        versions = versions.union(declaration)
    for check in checks:  # `assert torch_ver >= [1, 8]` refuses what the files allow below it
        versions = versions.raised(check.oldest)
    files = tuple(dict.fromkeys(name for name, _ in found))
    constraints = [
        (name, constraint)
        for name in constraint_files
        for constraint in _torch_in(_requirement_lines(directory / name))
    ]
    capped = versions.narrowed(TorchRange(None, mmcv_cap[1])) if mmcv_cap is not None else None
    if mmcv_cap is not None and capped is not None and capped != versions:
        versions = capped
        files += (mmcv_cap[0],)
    if constraints:
        caps = [constraint.below for _, constraint in constraints]
        cap = None if None in caps else max(c for c in caps if c is not None)
        if cap is not None and versions.capped(cap) != versions:
            versions = versions.capped(cap)
            files += tuple(dict.fromkeys(name for name, _ in constraints))
    return DeclaredTorch(directory, versions, files)


def _torch_in(lines: Iterable[str], pin_declares: bool = True) -> Iterator[TorchRange]:
    """The torch declarations of one file's requirement lines, each narrowed to the
    releases that the file's pin of a companion package goes with (`_torch_of_companion`);
    with `pin_declares`, the pin alone declares them."""
    lines = list(lines)
    declarations = [r for r in map(parse_torch_requirement, lines) if r is not None]
    paired = None
    for companion in filter(None, map(_torch_of_companion, lines)):
        # Several pins hold together (`pytorch-cuda=12.1` and `triton==2.2.0`: PyTorch 2.2);
        # one that contradicts the others says nothing.
        paired = companion if paired is None else paired.narrowed(companion) or paired
    if paired is None:
        yield from declarations
        return
    if not declarations and pin_declares:
        yield paired
    for declaration in declarations:
        # A pin the torch line contradicts (`torch>=2.4` with `triton==2.1.0`) says nothing.
        yield declaration.narrowed(paired) or declaration


# Packages pinned beside PyTorch that only some of its releases go with, by the pin's
# `major.minor`: the oldest PyTorch release and the first one past them.
# - Each PyTorch wheel requires one Triton release (`torch 2.1.* → triton==2.1.0`, `2.4.* →
#   3.0.0`); releases before 2.0 require none, so Triton's 0.x and 1.x, which no 2.x wheel
#   accepts, go with PyTorch 1 only.
# - PyTorch's conda channel builds each release for a few CUDA versions, chosen with the
#   `pytorch-cuda` package (from 1.13, its first, to 2.5, its last): `pytorch-cuda=11.7`
#   installs PyTorch 1.13 or 2.0.
# - Each release of torchvision, torchaudio and torchtext is built against one PyTorch
#   release and requires it (their compatibility tables): torchvision 0.5–0.14 go with
#   PyTorch 1.4–1.13 and 0.15–0.24 with 2.0–2.9; torchaudio 0.4–0.13 with 1.4–1.13 and 2.0–2.9
#   with the same PyTorch; torchtext 0.5–0.14 with 1.4–1.13 and 0.15–0.18 with 2.0–2.3.
_TORCH_OF_COMPANION: dict[str, dict[tuple[int, int], tuple[Version, Version]]] = {
    "triton": {
        (0, 2): ((1, 0), (2, 0)), (0, 3): ((1, 0), (2, 0)), (0, 4): ((1, 0), (2, 0)),
        (1, 0): ((1, 0), (2, 0)), (1, 1): ((1, 0), (2, 0)), (2, 0): ((2, 0), (2, 1)), (2, 1): ((2, 1), (2, 2)), (2, 2): ((2, 2), (2, 3)),
        (2, 3): ((2, 3), (2, 4)), (3, 0): ((2, 4), (2, 5)), (3, 1): ((2, 5), (2, 6)),
        (3, 2): ((2, 6), (2, 7)), (3, 3): ((2, 7), (2, 8)), (3, 4): ((2, 8), (2, 9)),
    },
    "pytorch-cuda": {
        (11, 6): ((1, 13), (1, 14)), (11, 7): ((1, 13), (2, 1)), (11, 8): ((2, 0), (2, 6)),
        (12, 1): ((2, 1), (2, 6)), (12, 4): ((2, 4), (2, 6)),
    },
    "torchvision": {
        (0, 4): ((1, 2), (1, 4)), **{(0, minor): ((1, minor - 1), (1, minor)) for minor in range(5, 15)},
        **{(0, minor): ((2, minor - 15), (2, minor - 14)) for minor in range(15, 25)},
    },
    "torchaudio": {
        **{(0, minor): ((1, minor), (1, minor + 1)) for minor in range(4, 14)},
        **{(2, minor): ((2, minor), (2, minor + 1)) for minor in range(10)},
    },
    "torchtext": {
        **{(0, minor): ((1, minor - 1), (1, minor)) for minor in range(5, 15)},
        **{(0, minor): ((2, minor - 15), (2, minor - 14)) for minor in range(15, 19)},
    },
}


def _torch_of_companion(line: str) -> TorchRange | None:
    """The PyTorch releases a pin of a companion package installs with (`triton==2.1.0`,
    `pytorch-cuda==11.7`, also `==X.Y.*`); None for another line, another specifier, or a
    release not in the table."""
    match = re.fullmatch(_NAME, line.split(";", 1)[0].split(" #", 1)[0].strip())
    releases = _TORCH_OF_COMPANION.get(match.group(1).lower()) if match is not None else None
    if releases is None:
        return None
    pinned = re.fullmatch(r"==\s*(\d+)\.(\d+)(?:\.\d+)*(?:\.\*)?", match.group(2).strip())
    paired = pinned and releases.get((int(pinned.group(1)), int(pinned.group(2))))
    if not paired:
        return None
    return TorchRange(_release_of(paired[0]), _release_of(paired[1]))


# The newest mmcv release (by `major.minor`) a package allows, and the first PyTorch release
# mmcv published no compiled wheel of it for: mmcv-full 1.3.18 (November 2021) was built up
# to PyTorch 1.10, 1.4.8 up to 1.11, 1.6.2 up to 1.12, mmcv 2.0.1 up to 2.0 and 2.1.0 up to
# 2.1. mmcv-full 1.7 and mmcv 2.2 reach PyTorch releases this table does not follow: no cap.
_TORCH_BELOW_MMCV: dict[tuple[int, int], Version] = {
    (1, 0): (1, 11, 0), (1, 1): (1, 11, 0), (1, 2): (1, 11, 0), (1, 3): (1, 11, 0),
    (1, 4): (1, 12, 0), (1, 5): (1, 13, 0), (1, 6): (1, 13, 0), (2, 0): (2, 1, 0), (2, 1): (2, 2, 0),
}
# `mmcv_maximum_version = '1.4.0'` (MMDetection, MMAction2, MMYOLO) or `MMCV_MAX = '1.5.0'`
# (MMSegmentation), and whether the check excludes it: `mmcv_version < digit_version(...)`.
_MMCV_MAXIMUM = r"(?m)^(mmcv_maximum_version|MMCV_MAX)\s*=\s*['\"](\d+(?:\.\d+)*)"
# The check's comparison with it, `<` or `<=`: `mmcv_version < digit_version(mmcv_maximum_version)`,
# `mmcv_version <= mmcv_max_version`, or the message, `<={mmcv_maximum_version}`.
_MMCV_MAXIMUM_COMPARED = r"<(=?)\s*(?:\{|digit_version\(\s*)?(?:mmcv_max\w*|MMCV_MAX)\b"


def _mmcv_cap(directory: Path, names: set[str]) -> tuple[str, Version] | None:
    """The torch cap that the mmcv check of a package of `directory` makes, and the package's
    `__init__.py` (relative to `directory`); None when no package checks mmcv's version, or
    the newest release it allows is not in `_TORCH_BELOW_MMCV`."""
    for name in sorted(names):
        init = f"{name}/__init__.py"
        if name.startswith(".") or not os.path.isfile(directory / init):
            continue
        text = _text_of(directory / init)
        maximum = re.search(_MMCV_MAXIMUM, text) if "mmcv" in text.lower() else None
        if maximum is None:
            continue
        release = _release_of(tuple(int(part) for part in maximum.group(2).split(".")))
        comparison = re.search(_MMCV_MAXIMUM_COMPARED, text)
        excluded = comparison is not None and not comparison.group(1)
        below = _TORCH_BELOW_MMCV.get(newest_before(release) if excluded else release[:2])
        return None if below is None else (init, below)
    return None


def _pyproject(path: Path) -> list[str]:
    try:
        with path.open("rb") as stream:
            project = tomllib.load(stream).get("project", {})
    except (OSError, ValueError):
        return []
    dependencies = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(dependencies, list):
        return []
    return [item for item in dependencies if isinstance(item, str)]


def _setup_cfg(path: Path) -> list[str]:
    # Here: most projects have no setup.cfg, and a cached run reads the settings.
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return []
    return parser.get("options", "install_requires", fallback="").splitlines()


def _setup_py(path: Path) -> tuple[list[str], list[str], list[str]]:
    """The strings `setup.py` passes as `install_requires` (a literal, or the literal a
    module-level name is bound to), the `.txt` files it names, and its checks of
    `torch.__version__` as requirement lines; nothing when it does not parse."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return [], [], []
    bound = {
        target.id: statement.value
        for statement in tree.body
        if isinstance(statement, ast.Assign)
        for target in statement.targets
        if isinstance(target, ast.Name)
    }
    install_requires = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "install_requires":
            value = bound.get(node.value.id, node.value) if isinstance(node.value, ast.Name) else node.value
            install_requires.extend(_string_literals(value))
    named_files = [text for text in _string_literals(tree) if re.fullmatch(_REQUIREMENTS_PATH, text)]
    return install_requires, named_files, _version_checks(tree, bound)


# A check that refuses older versions, and the requirement it makes: `assert version >= v`,
# `if version < v: raise ...`.
_ASSERTED = {ast.GtE: ">=", ast.Gt: ">"}
_REFUSED = {ast.Lt: ">=", ast.LtE: ">"}


def _version_checks(tree: ast.Module, bound: dict[str, ast.expr]) -> list[str]:
    """Requirement lines for the checks of `torch.__version__` that `setup.py` runs at the
    top level: `assert torch_ver >= [1, 8]` (with `torch_ver` computed from
    `torch.__version__`) declares `torch>=1.8`, as does `if version.parse(torch.__version__)
    < version.parse("1.8"): raise RuntimeError(...)`. Checks inside branches are not read."""

    def reads_torch_version(node: ast.expr, depth: int = 2) -> bool:
        for child in ast.walk(node):
            if (
                isinstance(child, ast.Attribute)
                and child.attr == "__version__"
                and isinstance(child.value, ast.Name)
                and child.value.id == "torch"
            ):
                return True
            if (
                depth
                and isinstance(child, ast.Name)
                and child.id in bound
                and reads_torch_version(bound[child.id], depth - 1)
            ):
                return True
        return False

    lines = []
    for statement in tree.body:
        if isinstance(statement, ast.Assert):
            test, operators = statement.test, _ASSERTED
        elif isinstance(statement, ast.If) and isinstance(statement.body[0], ast.Raise):
            test, operators = statement.test, _REFUSED
        else:
            continue
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            continue
        operator = operators.get(type(test.ops[0]))
        version = _version_literal(test.comparators[0])
        if operator and version and reads_torch_version(test.left):
            lines.append(f"torch{operator}{version}")
    return lines


def _version_literal(node: ast.expr) -> str | None:
    """`[1, 8]`, `(1, 8)`, `"1.8"`, `version.parse("1.8")`: the version written, else None."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if re.fullmatch(r"\d+(\.\d+)*", node.value) else None
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts and all(
        isinstance(part, ast.Constant) and type(part.value) is int for part in node.elts
    ):
        return ".".join(str(part.value) for part in node.elts)
    return None


def _conda_requirement_lines(path: Path) -> list[str]:
    """The entries of a conda environment file's `dependencies`, as pip requirement lines:
    a conda PyTorch package (`pytorch=1.12.1=py3.8_cuda11.3_0`, `pytorch::pytorch>=2.1`) as
    `torch` with its version (`torch==1.12.1.*`), the lines of the `pip:` list as written.
    Read line by line (the core depends on no YAML parser): a list item under `dependencies:`
    is a conda package, one indented under its `- pip:` item a pip requirement."""
    text = _text_of(path)
    lines: list[str] = []
    in_dependencies = False
    pip_indent: int | None = None  # the indentation of the `- pip:` item whose list we are in
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            in_dependencies = line.startswith("dependencies:")
            pip_indent = None
            continue
        item = re.fullmatch(r"\s*-\s+(.*)", line)
        if not in_dependencies or item is None:
            continue
        entry = item.group(1).strip().strip("'\"")
        if pip_indent is not None and indent > pip_indent:
            lines.append(entry)
        elif re.fullmatch(r"pip\s*:", entry):
            pip_indent = indent
        else:
            pip_indent = None
            requirement = _conda_torch(entry) or _conda_pytorch_cuda(entry)
            if requirement is not None:
                lines.append(requirement)
    return lines


def _readme_requirement_lines(path: Path) -> list[str]:
    """The torch requirements a README's install commands and code blocks give a version,
    as pip requirement lines (`conda install pytorch==1.8.0` as `torch==1.8.0`)."""
    text = _text_of(path)
    lines: list[str] = []
    in_code_block = False
    for raw in text.splitlines():
        if raw.strip().startswith(("```", "~~~")):
            in_code_block = not in_code_block
            continue
        line = raw.strip().lstrip("$>!").strip()
        # A line that is a command; not one quoted in a sentence, which may say what to run
        # in another case (`without it, run `pip install 'torch>=2.1'``).
        command = re.fullmatch(_INSTALL_COMMAND, line.strip("`").strip())
        if command is not None:
            lines.extend(_installed_torch(command.group(1), command.group(2)))
            continue
        item = re.fullmatch(r"[-*+]\s+`?(?:py)?(torch\s*[<>=~!][^`]*)`?", line, re.IGNORECASE)
        if item is not None:  # `- PyTorch == 1.11.0` in a list of dependencies
            requirement = item.group(1)
        elif in_code_block:
            requirement = line.split(" #", 1)[0].strip()
        else:
            continue
        if parse_torch_requirement(requirement) not in (None, TorchRange()):
            lines.append(requirement)
    return lines


def _script_requirement_lines(path: Path) -> list[str]:
    """The torch requirements with a version that an install script's commands name
    (`pip install torch==1.9.0 torchvision -U | cat`), as pip requirement lines."""
    lines: list[str] = []
    for raw in _text_of(path).splitlines():
        command = re.fullmatch(_INSTALL_COMMAND, raw.split(" #", 1)[0].strip())
        if command is not None:
            lines.extend(_installed_torch(command.group(1), command.group(2)))
    return lines


def _installed_torch(installer: str, arguments: str) -> list[str]:
    """The torch requirements with a version that one install command names: `torch==1.7.1`
    for pip, `pytorch==1.8.0` (or `pytorch=1.8`) for conda; a command ends at `&&` or `;`."""
    found = []
    words = re.split(r"\s*(?:&&|;|\|\|)\s*", arguments, maxsplit=1)[0].split()
    skip_value = False
    for word in words:
        word = word.strip("'\"")
        if skip_value or word.startswith("-"):
            skip_value = not skip_value and word in _OPTIONS_WITH_A_VALUE
            continue
        requirement = word if installer.startswith("pip") else _conda_torch(word)
        if requirement is not None and parse_torch_requirement(requirement) not in (None, TorchRange()):
            found.append(requirement)
    return found


def _conda_torch(spec: str) -> str | None:
    """A conda match spec of PyTorch's package as a pip requirement line (None for another
    package): `pytorch=1.12` is `torch==1.12.*`, `pytorch==1.12.1` and `pytorch>=2.1` keep
    their operator, `pytorch 1.12.1` is `torch==1.12.1.*`."""
    match = re.fullmatch(r"(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(.*)", spec)
    if match is None or match.group(1).lower() not in _CONDA_TORCH_PACKAGES:
        return None
    version = match.group(2).strip()
    if not version:
        return "torch"
    if re.fullmatch(r"=?\d[\w.*]*(=\S*)?", version) and not version.startswith("=="):
        # `=1.12.1`, `=1.12.1=<build>`, or a bare `1.12.1`: the releases that start with it.
        release = version.lstrip("=").split("=", 1)[0].rstrip(".*")
        return f"torch=={release}.*"
    if version.startswith("=="):
        version = "==" + version[2:].split("=", 1)[0]  # `==1.12.1=<build>`
    return f"torch{version}"


def _conda_pytorch_cuda(spec: str) -> str | None:
    """`pytorch-cuda=11.7` as the requirement line `pytorch-cuda==11.7.*`, which narrows the
    PyTorch of the same file (`_torch_of_companion`); None for another package."""
    match = re.fullmatch(r"(?:[\w.-]+::)?pytorch-cuda\s*=?=?\s*(\d+\.\d+)(?:\.\*)?", spec)
    return None if match is None else f"pytorch-cuda=={match.group(1)}.*"


def _string_literals(node: ast.AST) -> list[str]:
    return [
        child.value
        for child in ast.walk(node)
        if isinstance(child, ast.Constant) and isinstance(child.value, str)
    ]


def _text_of(path: Path) -> str:
    """The text of the file at `path`, undecodable bytes replaced; empty when it cannot be
    read (a folder named like a README, a file gone or forbidden)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _requirement_lines(path: Path) -> list[str]:
    """The requirement lines of a pip requirements file: comments, options (`-r`, `-e`,
    `--index-url`) and blank lines dropped."""
    text = _text_of(path)
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-"))]
