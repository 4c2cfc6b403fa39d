"""The run's settings (`program.options`): the defaults Python declares, the values launchers
give, and which tests of a setting a shipped run passes."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from torchperf_lint.config import Configuration
from torchperf_lint.discovery import discover, program_files
from torchperf_lint.facts.guards import setting_test
from torchperf_lint.program.link import ProgramFacts
from torchperf_lint.program.options import (
    declared_settings,
    python_settings,
    settings_in_launcher,
    summarize_launcher,
    takes,
)
from torchperf_lint.program.plain import summarize_plain
from torchperf_lint.program.summary import ModuleSummary


def declared(source: str) -> tuple[list[list], list[list]]:
    """The defaults and the given settings of `source`."""
    settings = declared_settings(ast.parse(textwrap.dedent(source)))
    return settings.defaults, settings.given


def test_command_line_options_declare_their_defaults_by_destination() -> None:
    defaults, given = declared(
        """
        parser.add_argument("-v", "--verbose", action="store_true")
        parser.add_argument("--no-ema", action="store_false", dest="ema")
        parser.add_argument("--qa-mask", type=int, default=0)
        parser.add_argument("--resume", type=str)
        parser.add_argument("--lr", default=get_lr())
        parser.add_argument("--data", required=True)
        parser.add_argument("config")
        parser.add_argument("--modes", action=CustomAction)
        parser.set_defaults(amp=True)
        """
    )
    assert defaults == [
        ["verbose", False], ["ema", True], ["qa_mask", 0], ["resume", None], ["lr"],
        ["data"], ["modes"], ["amp", True],
    ]
    assert given == []
    aliases = declared_settings(ast.parse('parser.add_argument("-r", "--l2-reg", "--reg")')).aliases
    assert aliases == [["r", "l2_reg"], ["reg", "l2_reg"]]
    flags = declared_settings(ast.parse(textwrap.dedent(
        """
        parser.add_argument("-v", "--verbose", action="store_true")
        parser.add_argument("--fp16", action="store_true", default=True)
        parser.add_argument("--no-ema", action="store_false", dest="ema")
        parser.add_argument("--qa-mask", type=int, default=0)
        """
    ))).flags
    assert flags == [["verbose", True], ["fp16", True], ["ema", False]]


def test_a_config_tree_declares_each_entry_it_sets_at_its_top_level() -> None:
    defaults, _ = declared(
        """
        from yacs.config import CfgNode as CN
        _C = CN()
        _C.TRAIN = CN()
        _C.TRAIN.CLIP_GRAD = 5.0
        _C.TRAIN.LR_SCHEDULER = CN()
        _C.TRAIN.LR_SCHEDULER.NAME = "cosine"
        _C.AUG.MIXUP = (0.8, 1.0)
        _C.DATA.PATH = os.environ["DATA"]
        model = build()
        model.training = False

        def update(config):
            config.TRAIN.CLIP_GRAD = 0.0
        """
    )
    assert defaults == [
        ["TRAIN.CLIP_GRAD", 5.0], ["TRAIN.LR_SCHEDULER.NAME", "cosine"], ["AUG.MIXUP", True],
        ["DATA.PATH"],
    ]


def test_the_fields_of_a_class_of_arguments_declare_their_defaults() -> None:
    defaults, _ = declared(
        """
        class Args(Tap):
            clip: int = -1
            name: str
            mixup: float = 0.8

        @dataclass
        class TrainingArguments:
            fp16: bool = field(default=False, metadata={"help": "..."})
            output_dir: str = field(metadata={"help": "..."})

        @dataclass
        class ModelConfig:
            use_cache: bool = True

        @dataclasses.dataclass(kw_only=True)
        class PPO_CFG(AgentCfg):
            kl_threshold: float = 0.0
        """
    )
    assert defaults == [
        ["clip", -1], ["mixup", 0.8], ["fp16", False], ["output_dir"], ["kl_threshold", 0.0]
    ]


def test_a_python_launcher_names_the_options_of_the_commands_it_builds() -> None:
    defaults, given = declared(
        """
        parser.add_argument("--epochs", default=10, help="see --lr too")
        cmd = ["python", "train.py", "--verbose", f"--lr={lr}"]
        os.system("python train.py --amp --batch-size 64")
        """
    )
    assert defaults == [["epochs", 10]]
    assert sorted(given) == [["amp"], ["batch_size"], ["lr"], ["verbose"]]


def test_a_file_that_declares_nothing_is_not_walked_and_a_broken_one_gives_nothing() -> None:
    source = "import torch\nx = 1 - -2\n"
    assert python_settings(source, ast.parse(source)) == ([], [], [], [])
    assert summarize_plain("parser.add_argument('--x', default=1\n") is None


def test_a_launcher_gives_options_config_keys_and_dotted_overrides_with_their_values() -> None:
    text = textwrap.dedent(
        """\
        python train.py --cfg configs/swin.yaml --verbose --batch-size 64 --lr=1e-3 \\
            --opts TRAIN.CLIP_GRAD 0.0 model.name=vit --name 'run one'
        TRAIN:
          CLIP_GRAD: 0.0  # no clipping
          EPOCHS: 300
          SCHEDULER:
        {
          "use_amp": true,
          "drop_path": null
        }
        """
    )
    assert settings_in_launcher(text) == [
        ["cfg", "configs/swin.yaml"], ["verbose"], ["batch_size", 64], ["lr", 0.001],
        ["opts", "TRAIN.CLIP_GRAD"], ["name"],
        ["CLIP_GRAD", 0.0], ["EPOCHS", 300], ["use_amp", True], ["drop_path", None],
        ["CLIP_GRAD", 0.0], ["name", "vit"],
    ]
    empty = summarize_launcher("# nothing here\n")
    assert (empty.settings_given, empty.mentions) == ([], ["here", "nothing"])


def test_keys_under_another_callables_keyword_arguments_are_not_the_runs_settings() -> None:
    text = textwrap.dedent(
        """\
        agent:
          learning_rate_scheduler_kwargs:
            kl_threshold: 0.008
            - min_lr: 1e-5
          kl_threshold: 0.0
        model_kwargs: {
            "dropout": 0.1
        }
        dropout: 0.0
        """
    )
    assert settings_in_launcher(text) == [["kl_threshold", 0.0], ["dropout", 0.0]]


def test_a_setting_is_not_set_by_a_constructor_storing_an_attribute_of_that_name(
    tmp_path: Path,
) -> None:
    """skrl: `if self.cfg.kl_threshold and kl > self.cfg.kl_threshold:`, the threshold 0.0 in
    every agent's config, while the KL-adaptive scheduler stores its own threshold."""
    linked = program(tmp_path, {
        "ppo.py": """\
            import dataclasses
            import torch

            @dataclasses.dataclass
            class PPO_CFG:
                kl_threshold: float = 0.0

            class KLAdaptiveLR(torch.optim.lr_scheduler.LRScheduler):
                def __init__(self, optimizer, kl_threshold=0.008):
                    self.kl_threshold = kl_threshold

            scheduler = KLAdaptiveLR(None)
        """,
    })
    assert linked.setting_values("kl_threshold") == [0.0]
    assert linked.never_passed(["kl_threshold", "truth", None, True])
    assert "kl_threshold" in linked.switched_on  # the scheduler's own switch stays on


def test_a_test_of_a_setting_passes_by_its_truth_or_comparison() -> None:
    assert takes(["verbose", "truth", None, True], True)
    assert not takes(["verbose", "truth", None, True], False)
    assert takes(["TRAIN.CLIP_GRAD", "truth", None, False], 0.0)
    assert not takes(["qa_mask", "!=", 1, False], 0)
    assert takes(["mode", ">=", 1, True], "fast")  # cannot compare: it may pass


def program(root: Path, files: dict[str, str]) -> ProgramFacts:
    """The program of a project written under `root`, as the CLI links it (launchers too)."""
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    from torchperf_lint.runner import summarize_file

    summaries = {}
    for path in program_files([root], Configuration(cwd=root)):
        summary = summarize_file(path)
        if summary is not None:
            summaries[path.relative_to(root).as_posix()] = summary
    return ProgramFacts(summaries)


TRAIN = """\
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--qa-mask", type=int, default=0)
    args = parser.parse_args()
"""


def test_a_setting_no_launcher_names_holds_its_default(tmp_path: Path) -> None:
    linked = program(tmp_path, {"train.py": TRAIN})
    assert linked.setting_values("verbose") == [False]
    assert linked.never_passed(["verbose", "truth", None, True])
    assert not linked.never_passed(["verbose", "truth", None, False])
    assert linked.never_passed(["qa_mask", "!=", 1, False])
    assert linked.setting_values("epochs") is None  # declared nowhere


def test_a_launcher_or_code_that_sets_a_setting_makes_its_value_unknown(tmp_path: Path) -> None:
    linked = program(tmp_path, {
        "train.py": TRAIN + "args.qa_mask = 1 if args.verbose else 0\n",
        "scripts/run.sh": "python train.py --verbose\n",
    })
    assert linked.setting_values("verbose") is None
    assert linked.setting_values("qa_mask") is None


def test_a_launcher_that_gives_a_value_adds_it(tmp_path: Path) -> None:
    linked = program(tmp_path, {
        "config.py": """\
            from yacs.config import CfgNode as CN
            _C = CN()
            _C.TRAIN = CN()
            _C.TRAIN.CLIP_GRAD = 5.0
            _C.TRAIN.EMA = False
        """,
        "configs/a.yaml": "TRAIN:\n  CLIP_GRAD: 1.0\n  EMA: true\n",
        "README.md": "Run `python main.py --cfg configs/a.yaml TRAIN.EMA False`.\n",
    })
    assert linked.setting_values("TRAIN.CLIP_GRAD") == [5.0, 1.0]
    assert linked.never_passed(["TRAIN.CLIP_GRAD", "truth", None, False])
    assert linked.setting_values("TRAIN.EMA") == [False, False, True]  # README.md, a.yaml
    assert not linked.never_passed(["TRAIN.EMA", "truth", None, True])


def test_a_file_with_pytorch_code_declares_settings_as_a_plain_one_does(tmp_path: Path) -> None:
    linked = program(tmp_path, {
        "config.py": """\
            import torch
            from easydict import EasyDict as edict
            __C = edict()
            __C.TRAIN = edict()
            __C.TRAIN.EMA = torch.cuda.is_available()
            __C.TRAIN.CLIP = 0.0
            model = torch.nn.Linear(2, 2)
            model.training = False
            parser = argparse.ArgumentParser(
                description="train",
            )
            parser.add_argument(
                "--amp",
                action="store_true",
            )
        """,
    })
    assert linked.summaries["config.py"].setting_defaults == [
        ["amp", False], ["TRAIN.EMA"], ["TRAIN.CLIP", 0.0],
    ]
    assert "EMA" not in linked.switched_on


def test_a_config_trees_defaults_turn_no_switch_on(tmp_path: Path) -> None:
    summary = summarize_plain("from yacs.config import CfgNode as CN\n_C = CN()\n_C.USE_CP = True\ncfg.with_cp = True\n")
    assert summary is not None
    assert summary.functions[""].switches == ["with_cp"]
    assert summary.setting_defaults == [["USE_CP", True]]


def test_a_launcher_gives_an_option_by_its_short_name_even_when_git_ignores_it(
    tmp_path: Path,
) -> None:
    linked = program(tmp_path, {
        "run.py": "import torch\nparser.add_argument('-r', '--regularization', default=0.0)\n",
        ".gitignore": "*.sh\n",
        "examples.sh": "python run.py --do_train -r 0.000002\n",
    })
    assert linked.setting_values("regularization") == [0.0, 0.000002]
    assert not linked.never_passed(["regularization", "!=", 0.0, True])


def test_the_fields_of_a_class_of_arguments_are_defaults_not_switches(tmp_path: Path) -> None:
    linked = program(tmp_path, {
        "train.py": """\
            import torch
            from tap import Tap

            class Args(Tap):
                clip: int = -1
                ema: bool = True

            class Block(torch.nn.Module):
                use_checkpoint: bool = True
        """,
    })
    assert linked.setting_values("clip") == [-1]
    assert linked.never_passed(["clip", ">", 0, True])
    assert "use_checkpoint" in linked.switched_on and "ema" not in linked.switched_on


def test_launchers_are_read_by_the_program_but_not_linted(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\n", encoding="utf-8")
    (tmp_path / "run.sh").write_text("python train.py --verbose\n", encoding="utf-8")
    (tmp_path / "data.json").write_text("[" + "1," * 200_000 + "1]", encoding="utf-8")
    found = discover([tmp_path], Configuration(cwd=tmp_path))
    assert found.files == [tmp_path / "train.py"]
    assert found.launchers == [tmp_path / "data.json", tmp_path / "run.sh"]
    from torchperf_lint.runner import summarize_file

    assert summarize_file(tmp_path / "data.json") is None  # too large to be a config
    assert summarize_file(tmp_path / "run.sh") == ModuleSummary(
        settings_given=[["verbose"]], mentions=["py", "python", "train", "verbose"]
    )


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("args.verbose", ["verbose", "truth", None, True]),
        ("not config.TRAIN.CLIP_GRAD", ["TRAIN.CLIP_GRAD", "truth", None, False]),
        ("self.args.qa_mask != 1", ["qa_mask", "!=", 1, True]),
        # One agent's entry of a setting that one value may set for all (skrl's IPPO).
        ("self.cfg.kl_threshold[uid]", ["kl_threshold", "truth", None, True]),
        ("self.cfg.kl_threshold[uid] > 0", ["kl_threshold", ">", 0, True]),
        ("args.cuda", None),  # picks the device
        ("losses[uid]", None),
    ],
)
def test_a_test_of_the_runs_settings_names_its_key(test: str, expected: list | None) -> None:
    assert setting_test(cst.parse_expression(test)) == expected
