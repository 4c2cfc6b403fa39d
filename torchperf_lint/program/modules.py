"""Which file an import names: module names from package roots, and a script's own folder.

A file inside packages (folders with `__init__.py`) is importable by its dotted path from the
folder above its topmost package (Ruff's `detect_package_root`); a script is importable from its
own folder, which Python puts first on `sys.path` (`import utils` beside `train.py`); and every
file by its path from the project's top folder (where scripts are run from), namespace
packages included, and from the folder of the nearest `setup.py` above it: a project inside
the repository (`applications/chat/setup.py` beside `applications/chat/dschat/...`), whose
scripts run from there or import it installed. A name that two files could answer to, with
neither in the importer's folder, stays unresolved.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import PurePosixPath


def _module_parts(path: PurePosixPath) -> tuple[str, ...]:
    parts = path.parts[:-1]
    stem = path.stem
    return parts if stem == "__init__" else (*parts, stem)


class ModuleMap:
    """Module names of the program's files, each file named by its (posix) path."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = set(files)
        packages = {
            str(PurePosixPath(file).parent) for file in self.files
            if PurePosixPath(file).name == "__init__.py"
        }
        self._packages = packages
        # The folders of the projects inside the repository: where a `setup.py` is.
        project_folders = {
            PurePosixPath(file).parent for file in self.files
            if PurePosixPath(file).name == "setup.py" and str(PurePosixPath(file).parent) != "."
        }
        self.name_of: dict[str, str] = {}
        self._by_name: dict[str, set[str]] = defaultdict(set)
        self._by_path: dict[str, str] = {}
        self._resolved: dict[tuple[str, str], tuple[str, tuple[str, ...]] | None] = {}
        for file in self.files:
            path = PurePosixPath(file)
            if path.suffix != ".py":
                continue  # Notebooks are leaves: nothing imports them.
            self._by_path[str(path.with_suffix(""))] = file
            if path.name == "__init__.py":
                self._by_path[str(path.parent)] = file
            name = ".".join(_module_parts(self._relative_to_package_root(path)))
            if name:
                self.name_of[file] = name
                self._by_name[name].add(file)
            # Scripts run from the project's top folder import its folders as namespace
            # packages too (`import ldm.modules.ema` without `ldm/__init__.py`).
            from_top = ".".join(_module_parts(path))
            if from_top and from_top != name and not path.is_absolute() and ".." not in path.parts:
                self._by_name[from_top].add(file)
                project = next((f for f in path.parents if f in project_folders), None)
                if project is not None:
                    from_project = ".".join(_module_parts(path.relative_to(project)))
                    if from_project and from_project != name:
                        self._by_name[from_project].add(file)

    def _relative_to_package_root(self, path: PurePosixPath) -> PurePosixPath:
        """`path` from the folder above its outermost package; from the top folder when that
        is a package itself (an `__init__.py` beside the project's `setup.py`)."""
        folder = path.parent
        root = folder
        while str(folder) in self._packages and folder.parent != folder:
            root = folder.parent
            folder = folder.parent
        if root == path.parent and str(path.parent) not in self._packages:
            return PurePosixPath(path.name)
        return path.relative_to(root) if str(root) != "." else path

    def package_of(self, file: str) -> tuple[str, ...] | None:
        """The dotted package a relative import in `file` starts from."""
        name = self.name_of.get(file)
        if name is None:
            return None
        parts = tuple(name.split("."))
        return parts if PurePosixPath(file).name == "__init__.py" else parts[:-1]

    def resolve(self, importer: str, dotted: str) -> tuple[str, tuple[str, ...]] | None:
        """The file of the longest module prefix of `dotted` (an import target, with leading
        dots when relative) and the attribute names after it, or None."""
        key = (importer, dotted)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(importer, dotted)
        return self._resolved[key]

    def _resolve(self, importer: str, dotted: str) -> tuple[str, tuple[str, ...]] | None:
        level = len(dotted) - len(dotted.lstrip("."))
        parts = tuple(part for part in dotted[level:].split(".") if part)
        if level:
            package = self.package_of(importer)
            if package is None or level - 1 > len(package):
                return self._resolve_in_folder(importer, level, parts)
            base = package[: len(package) - (level - 1)]
            return self._longest(base, parts, importer, script_relative=False)
        return self._longest((), parts, importer, script_relative=True)

    def _resolve_in_folder(
        self, importer: str, level: int, parts: tuple[str, ...]
    ) -> tuple[str, tuple[str, ...]] | None:
        """A relative import in a file outside packages: relative to its folder."""
        folder = PurePosixPath(importer).parent
        for _ in range(level - 1):
            folder = folder.parent
        for end in range(len(parts), 0, -1):
            found = self._by_path.get(str(folder.joinpath(*parts[:end])))
            if found is not None:
                return found, parts[end:]
        return None

    def _longest(
        self, base: tuple[str, ...], parts: tuple[str, ...], importer: str, script_relative: bool
    ) -> tuple[str, tuple[str, ...]] | None:
        folder = PurePosixPath(importer).parent
        for end in range(len(parts), -1, -1):
            name = (*base, *parts[:end])
            if not name:
                continue
            if script_relative:
                beside = self._by_path.get(str(folder.joinpath(*name)))
                if beside is not None:
                    return beside, parts[end:]
            candidates = self._by_name.get(".".join(name))
            if candidates and len(candidates) == 1:
                return next(iter(candidates)), parts[end:]
        return None
