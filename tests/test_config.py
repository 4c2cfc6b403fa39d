"""Settings: selection semantics, validation messages, nearest-file lookup, CLI on top."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import write_files

from torchperf_lint.config import (
    ConfigError,
    Configuration,
    Overrides,
    glob_regex,
    parse_config,
    resolve_selection,
)
from torchperf_lint.rules import ALL_RULES


def codes(rules) -> list[str]:
    return [rule.code for rule in rules]


def test_default_selection_is_the_default_rules():
    assert codes(resolve_selection(None)) == [r.code for r in ALL_RULES if r.default]


def test_all_prefixes_and_codes():
    assert codes(resolve_selection(["ALL"])) == codes(ALL_RULES)
    assert codes(resolve_selection(["TPL10"])) == [
        r.code for r in ALL_RULES if r.code[:5] == "TPL10"
    ]
    assert codes(resolve_selection(["TPL101"])) == ["TPL101"]
    assert codes(resolve_selection([])) == []


def test_more_specific_selector_wins_and_ignore_wins_ties():
    assert codes(resolve_selection(["TPL101"], ["TPL1"])) == ["TPL101"]
    assert "TPL101" not in codes(resolve_selection(["TPL1"], ["TPL101"]))
    assert codes(resolve_selection(["TPL101"], ["TPL101"])) == []
    assert codes(resolve_selection(None, ["ALL"], ["TPL103"])) == ["TPL103"]


def test_extend_select_adds_to_the_default_set():
    extended = codes(resolve_selection(None, (), ["TPL103"]))
    assert extended == sorted([r.code for r in ALL_RULES if r.default] + ["TPL103"])


@pytest.mark.parametrize("selector", ["TPL999", "TPL9999", "TPX", "", "E501"])
def test_unknown_selector_names_itself_and_the_source(selector):
    with pytest.raises(ConfigError) as error:
        resolve_selection([selector], source="pyproject.toml")
    assert str(error.value) == f"pyproject.toml: select: unknown rule code or prefix {selector!r}"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"selct": []}, "cfg: unknown key 'selct'"),
        ({"select": "TPL101"}, "cfg: select: expected a list of strings, got 'TPL101'"),
        ({"ignore": ["TPL999"]}, "cfg: ignore: unknown rule code or prefix 'TPL999'"),
        (
            {"target-device": "tpu"},
            "cfg: target-device: expected one of auto, cuda, cpu, got 'tpu'",
        ),
        ({"torch-version": "2"}, "cfg: torch-version: expected a version like \"2.3\", got '2'"),
        (
            {"per-file-ignores": {"a.py": ["TPL998"]}},
            "cfg: per-file-ignores: unknown rule code or prefix 'TPL998'",
        ),
    ],
)
def test_invalid_settings_name_key_and_file(table, message):
    with pytest.raises(ConfigError) as error:
        parse_config(table, Path("/"), "cfg")
    assert str(error.value) == message


def test_valid_settings_are_parsed():
    config = parse_config(
        {
            "select": ["tpl1"],
            "target-device": "cuda",
            "torch-version": "2.1",
            "per-file-ignores": {"tests/*": ["TPL101"]},
        },
        Path("/p"),
        "cfg",
    )
    assert config.select == ("TPL1",)
    assert (config.target_device, config.torch_version) == ("cuda", (2, 1))
    assert config.per_file_ignores == (("tests/*", ("TPL101",)),)


def test_nearest_configuration_wins_and_pyproject_without_table_is_skipped(tmp_path):
    write_files(
        tmp_path,
        {
            "pyproject.toml": '[tool.torchperf-lint]\nselect = ["TPL101"]\ntorch-version = "2.1"\n',
            "a/pyproject.toml": "[project]\nname = 'a'\n",
            "b/torchperf-lint.toml": 'select = ["TPL105"]\ntarget-device = "cpu"\n',
            "b/pyproject.toml": '[tool.torchperf-lint]\nselect = ["TPL102"]\n',
        },
    )
    configuration = Configuration(cwd=tmp_path)
    a = configuration.settings_for(tmp_path / "a" / "x.py")
    assert codes(a.rules) == ["TPL101"]
    assert a.options.torch_version == (2, 1)
    b = configuration.settings_for(tmp_path / "b" / "deep" / "x.py")
    assert codes(b.rules) == ["TPL105"]
    assert b.options.target_device == "cpu"


def test_command_line_on_top_of_the_files(tmp_path):
    write_files(tmp_path, {"torchperf-lint.toml": 'select = ["TPL1"]\nignore = ["TPL105"]\n'})
    ignore_more = Configuration(Overrides(ignore=("TPL101",)), cwd=tmp_path)
    assert "TPL101" not in codes(ignore_more.settings_for(tmp_path / "x.py").rules)
    assert "TPL105" not in codes(ignore_more.settings_for(tmp_path / "x.py").rules)
    fresh = Configuration(Overrides(select=("TPL105",), target_device="cuda"), cwd=tmp_path)
    settings = fresh.settings_for(tmp_path / "x.py")
    assert codes(settings.rules) == ["TPL105"]
    assert settings.options.target_device == "cuda"


def test_per_file_ignores(tmp_path):
    write_files(
        tmp_path,
        {
            "torchperf-lint.toml": (
                '[per-file-ignores]\n"tests/*" = ["TPL1"]\n"setup.py" = ["TPL101"]\n'
            )
        },
    )
    configuration = Configuration(cwd=tmp_path)
    assert codes(configuration.settings_for(tmp_path / "tests" / "sub" / "t.py").rules) == [
        r.code for r in ALL_RULES if r.default and not r.code.startswith("TPL1")
    ]
    assert "TPL101" not in codes(configuration.settings_for(tmp_path / "pkg" / "setup.py").rules)
    assert "TPL101" in codes(configuration.settings_for(tmp_path / "pkg" / "main.py").rules)


def test_explicit_config_file_and_broken_files(tmp_path):
    write_files(tmp_path, {"ci.toml": 'select = ["TPL105"]\n', "bad.toml": "select = [\n"})
    explicit = Configuration(Overrides(config_file=tmp_path / "ci.toml"), cwd=tmp_path)
    assert codes(explicit.settings_for(Path("/elsewhere/x.py")).rules) == ["TPL105"]
    with pytest.raises(ConfigError, match=r"bad\.toml: invalid TOML"):
        Configuration(Overrides(config_file=tmp_path / "bad.toml"), cwd=tmp_path)
    with pytest.raises(ConfigError, match=r"missing\.toml: cannot read"):
        Configuration(Overrides(config_file=tmp_path / "missing.toml"), cwd=tmp_path)


def test_is_excluded_checks_the_path_and_its_folders(tmp_path):
    write_files(tmp_path, {"torchperf-lint.toml": 'extend-exclude = ["gen_*.py", "src/legacy"]\n'})
    configuration = Configuration(cwd=tmp_path)
    assert configuration.is_excluded(tmp_path / "a" / "gen_model.py")
    assert configuration.is_excluded(tmp_path / "src" / "legacy" / "old.py")
    assert configuration.is_excluded(tmp_path / "build" / "x.py")
    assert not configuration.is_excluded(tmp_path / "src" / "model.py")
    replaced = tmp_path / "other"
    write_files(replaced, {"torchperf-lint.toml": 'exclude = ["vendored"]\n'})
    assert not Configuration(cwd=replaced).is_excluded(replaced / "build" / "x.py")


@pytest.mark.parametrize(
    ("pattern", "crosses", "path", "matches"),
    [
        ("*.py", False, "a.py", True),
        ("*.py", False, "d/a.py", False),
        ("*.py", True, "d/a.py", True),
        ("**/x.py", False, "x.py", True),
        ("**/x.py", False, "a/b/x.py", True),
        ("a/**", False, "a/b/c", True),
        ("a/**/b", False, "a/b", True),
        ("a/**/b", False, "a/x/y/b", True),
        ("file?.py", False, "file1.py", True),
        ("file[0-9].py", False, "filex.py", False),
        ("file[!0-9].py", False, "filex.py", True),
        ("a+b(c).py", False, "a+b(c).py", True),
    ],
)
def test_glob_regex(pattern, crosses, path, matches):
    assert bool(glob_regex(pattern, crosses).match(path)) is matches
