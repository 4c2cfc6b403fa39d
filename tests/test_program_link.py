"""The linker on small programs written inline: resolution, the call graph and its facts."""

from __future__ import annotations

import textwrap
from pathlib import PurePosixPath

import libcst as cst

from torchperf_lint.facts import FileFacts
from torchperf_lint.program.link import ProgramFacts, Target
from torchperf_lint.program.options import summarize_launcher
from torchperf_lint.program.plain import summarize_plain
from torchperf_lint.program.summarize import summarize
from torchperf_lint.program.summary import ModuleSummary


def summary(source: str, name: str = "x.py") -> ModuleSummary:
    text = textwrap.dedent(source)
    return summarize(FileFacts(cst.parse_module(text), PurePosixPath(name)))


def program(files: dict[str, str]) -> ProgramFacts:
    """A program of files: path -> source."""
    return ProgramFacts({name: summary(source, name) for name, source in files.items()})


def function(file: str, qualname: str) -> Target:
    return Target(file, qualname, "function")


def test_imports_resolve_beside_the_script_in_packages_and_through_reexports() -> None:
    linked = program({
        "train.py": """
            from utils import log
            from pkg import train_one_epoch
            import pkg.engine as engine
        """,
        "utils.py": "def log(x): pass\n",
        "pkg/__init__.py": "from .engine import train_one_epoch\n",
        "pkg/engine.py": "def train_one_epoch(): pass\n",
    })
    assert linked.resolve("train.py", "import:utils.log") == function("utils.py", "log")
    expected = function("pkg/engine.py", "train_one_epoch")
    assert linked.resolve("train.py", "import:pkg.train_one_epoch") == expected
    assert linked.resolve("train.py", "import:pkg.engine.train_one_epoch") == expected
    assert linked.resolve("pkg/__init__.py", "import:.engine.train_one_epoch") == expected


def test_star_imports_and_namespace_packages_resolve() -> None:
    linked = program({
        "train.py": "from helpers import *\nimport ldm.modules.ema\n",
        "helpers.py": "def log(x): pass\n",
        "ldm/modules/ema.py": "class LitEma: pass\n",
    })
    # `log` is not defined in train.py: the star import defines it.
    assert linked.resolve("train.py", "def:log") == function("helpers.py", "log")
    assert linked.resolve("train.py", "import:ldm.modules.ema.LitEma") == Target(
        "ldm/modules/ema.py", "LitEma", "class"
    )


def test_a_project_inside_the_repository_imports_its_namespace_packages_from_its_setup_folder() -> None:
    linked = program({
        "applications/chat/setup.py": "import setuptools\nsetuptools.setup(name='chat')\n",
        "applications/chat/training/sft/main.py": "from chat.utils.data import create_dataset\n",
        "applications/chat/chat/utils/data.py": "def create_dataset(): pass\n",
        # Without a `setup.py`, a folder is no project of its own: only the top folder counts.
        "examples/demo/scripts/run.py": "from lib.util import helper\n",
        "examples/demo/lib/util.py": "def helper(): pass\n",
    })
    assert linked.resolve("applications/chat/training/sft/main.py", "import:chat.utils.data.create_dataset") == (
        function("applications/chat/chat/utils/data.py", "create_dataset")
    )
    assert linked.resolve("examples/demo/scripts/run.py", "import:lib.util.helper") is None


def test_a_name_two_files_answer_to_stays_unresolved_and_cycles_end() -> None:
    linked = program({
        "app/train.py": "from utils import log\n",
        "a/utils.py": "def log(x): pass\n",
        "b/utils.py": "def log(x): pass\n",
        "first.py": "from second import f\n",
        "second.py": "from first import f\n",
    })
    assert linked.resolve("app/train.py", "import:utils.log") is None
    assert linked.resolve("first.py", "import:second.f") is None


def test_star_import_cycles_of_a_package_resolve_by_every_path() -> None:
    # `__init__` star-imports modules that import from it again (skorch's callbacks). Looking
    # up `Callback` in `__init__` meets that lookup again through `logging.py` first: what
    # `logging.py` found then (nothing) is not kept, so its own `Callback` still resolves.
    modules = {
        "pkg/__init__.py": "".join(f"from .m{n} import *\n" for n in range(12))
        + "from .logging import *\nfrom .base import *\n",
        "pkg/logging.py": "from pkg import Callback\nclass PrintLog(Callback): pass\n",
        "pkg/base.py": "class Callback:\n    def on_batch_end(self): pass\n",
    }
    for n in range(12):
        modules[f"pkg/m{n}.py"] = f"from pkg import Callback, PrintLog\nclass Hook{n}(Callback): pass\n"
    linked = program(modules)
    callback = Target("pkg/base.py", "Callback", "class")
    assert linked.resolve("pkg/__init__.py", "def:Callback") == callback
    assert linked.resolve("pkg/logging.py", "def:Callback") == callback
    assert linked.resolve("pkg/m3.py", "def:PrintLog") == Target("pkg/logging.py", "PrintLog", "class")
    assert linked.resolve("pkg/m7.py", "def:Missing") is None


def test_a_name_no_module_of_a_star_import_cycle_defines_is_looked_up_once_per_module(
    monkeypatch,
) -> None:
    # `Callback` is defined in a file the program does not hold (no `torch` in its text):
    # every star-imported module imports it from the package again. A resolution looks it up
    # once in each module, not once per path through the cycle (5 ** 32 paths).
    modules = {"pkg/__init__.py": "".join(f"from .m{n} import *\n" for n in range(5))}
    for n in range(5):
        modules[f"pkg/m{n}.py"] = f"from pkg import Callback\nclass Hook{n}(Callback): pass\n"
    linked = program(modules)
    looked_up: list[tuple[str, tuple[str, ...]]] = []
    look_up = ProgramFacts._look_up
    monkeypatch.setattr(
        ProgramFacts,
        "_look_up",
        lambda self, file, parts, depth: looked_up.append((file, parts))
        or look_up(self, file, parts, depth),
    )
    for n in range(5):
        looked_up.clear()
        assert linked.resolve(f"pkg/m{n}.py", "def:Callback") is None
        assert len(looked_up) == len(set(looked_up)) <= 6


def test_methods_resolve_through_self_super_bases_instances_and_calls_of_instances() -> None:
    linked = program({
        "base.py": """
            class Base:
                def log(self): pass
                def forward(self, x): pass
        """,
        "model.py": """
            from base import Base

            class Model(Base):
                def __init__(self):
                    self.trainer = Helper()

                def step(self):
                    self.log()
                    super().log()
                    self.trainer.optimize()

            class Helper:
                def optimize(self): pass

            def run():
                model = Model()
                model(1)
                model.step()
        """,
    })
    log = function("base.py", "Base.log")
    assert linked.resolve("model.py", "method:Model:log") == log
    assert linked.resolve("model.py", "super:Model:log") == log
    assert linked.resolve("model.py", "forward:def:Model") == function("base.py", "Base.forward")
    steps = linked.summaries["model.py"].functions["Model.step"].calls
    assert [linked.callee("model.py", site) for site in steps] == [
        log, log, function("model.py", "Helper.optimize"),
    ]
    runs = linked.summaries["model.py"].functions["run"].calls
    assert [linked.callee("model.py", site) for site in runs] == [
        function("model.py", "Model.__init__"),
        function("base.py", "Base.forward"),
        function("model.py", "Model.step"),
    ]


TRAIN = """
import torch
from steps import train_step
from helpers import log, rare, fail


def main(loader, model, optimizer):
    for step, (x, y) in enumerate(loader):
        loss = train_step(model, optimizer, x, y)
        log(loss)
        if step % 100 == 0:
            rare(loss)
        if torch.isnan(loss):
            fail(loss)
            raise FloatingPointError
"""
STEPS = """
def train_step(model, optimizer, x, y):
    return inner(model, optimizer, x, y)


def inner(model, optimizer, x, y):
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    return loss


def saliency(model, x):
    loss = model(x).sum()
    loss.backward()
    return x.grad
"""
HELPERS = """
def log(loss):
    record(loss)


def record(loss):
    print(loss.item())


def rare(loss):
    print(loss.item())


def fail(loss):
    print(loss.item())
"""


def test_step_helpers_make_training_loops_and_per_step_paths_follow_calls() -> None:
    linked = program({"train.py": TRAIN, "steps.py": STEPS, "helpers.py": HELPERS})
    # `saliency` backpropagates and steps nothing: it is no training step.
    assert linked.step_helpers == {
        function("steps.py", "train_step"), function("steps.py", "inner")
    }
    kind, path = linked.per_step(function("helpers.py", "record"))
    assert kind == "train"
    assert [(hop.file, hop.callee) for hop in path] == [("train.py", "log"), ("helpers.py", "record")]
    # A periodic guard and an error path end the per-step path.
    assert linked.per_step(function("helpers.py", "rare")) is None
    assert linked.per_step(function("helpers.py", "fail")) is None


def test_a_function_passed_to_one_that_calls_it_runs_at_the_call_that_passes_it() -> None:
    linked = program({
        "train.py": """
            from timing import every, gpu_timer, keep

            def main(model, loader, optimizer):
                for step, x in enumerate(loader):
                    def train_step():
                        model(x).sum().backward()
                        optimizer.step()

                    def log():
                        pass

                    def report():
                        pass

                    gpu_timer(train_step)
                    every(10, step, log)
                    keep(report)
        """,
        "timing.py": """
            def gpu_timer(closure):
                return closure()

            def every(n, step, closure):
                if step % n == 0:
                    closure()

            def keep(hook):
                HOOKS.append(hook)
        """,
    })
    # The loop trains through the step helper it passes; the path names the runner.
    assert function("train.py", "main.train_step") in linked.step_helpers
    kind, path = linked.per_step(function("train.py", "main.train_step"))
    assert kind == "train"
    assert [(hop.callee, hop.through) for hop in path] == [("main.train_step", "gpu_timer")]
    # A runner that calls it every n-th step, or keeps it, does not run it on every step.
    assert linked.per_step(function("train.py", "main.log")) is None
    assert linked.per_step(function("train.py", "main.report")) is None


def test_instances_come_from_factories_class_methods_and_arguments_kept_on_self() -> None:
    linked = program({
        "loss.py": """
            class LossCompute:
                @classmethod
                def from_opts(cls, opt):
                    compute = cls(opt)
                    return compute

                def forward(self, output):
                    pass

            def build_loss(opt):
                return LossCompute.from_opts(opt)
        """,
        "trainer.py": """
            from loss import build_loss

            class Trainer:
                def __init__(self, model, train_loss):
                    self.train_loss = train_loss

                def step(self, x):
                    return self.train_loss(x)

            def build(opt, model):
                return Trainer(model, build_loss(opt))
        """,
    })
    loss_compute = Target("loss.py", "LossCompute", "class")
    assert linked.returned_classes(function("loss.py", "build_loss")) == {loss_compute}
    # `Trainer(model, ...)`, in `Trainer`'s own file, passes `model` after `self`.
    stored = "argument:__call__:Trainer.__init__:train_loss"
    assert linked.resolve("trainer.py", stored) == function("loss.py", "LossCompute.forward")


def test_test_files_start_no_per_step_path_and_are_no_cuda_evidence() -> None:
    linked = program({
        "tests/test_train.py": """
            import torch
            from helpers import record

            def test_loop(model, optimizer, loader):
                model.cuda()
                for x in loader:
                    model(x).sum().backward()
                    optimizer.step()
                    record(x)
        """,
        "helpers.py": HELPERS,
    })
    assert linked.per_step(function("helpers.py", "record")) is None
    assert linked.cuda_files == set()


def test_cuda_flows_to_imports_through_training_programs_and_from_device_helpers() -> None:
    linked = program({
        "train.py": """
            import torch
            import dist_util
            from engine import train_one_epoch
            from data import build

            def main(model):
                model.to(dist_util.dev())
        """,
        "dist_util.py": """
            import torch

            def dev():
                if torch.cuda.is_available():
                    return torch.device("cuda")
                return torch.device("cpu")
        """,
        "engine.py": """
            import torch
            import metrics

            def train_one_epoch(model, loader, optimizer):
                for x in loader:
                    model(x).sum().backward()
                    optimizer.step()
        """,
        "metrics.py": "import torch\n",
        "data.py": "import torch\n",
        "cpu_tool.py": "import torch\n",
    })
    # train.py is an entry: what it imports is one program, which trains (engine.py) on CUDA.
    program_files = {"train.py", "dist_util.py", "engine.py", "metrics.py", "data.py"}
    assert linked.cuda_training_files == program_files
    assert linked.cuda_files == program_files


def test_no_grad_wrappers_and_callers_that_all_turn_autograd_off() -> None:
    linked = program({
        "utils.py": """
            import torch

            def smart_inference_mode():
                def decorate(fn):
                    return torch.inference_mode()(fn)
                return decorate
        """,
        "val.py": """
            import torch
            from utils import smart_inference_mode

            def evaluate(model): pass
            def probe(model): pass
            def unused(model): pass

            @smart_inference_mode()
            def run(model):
                evaluate(model)

            def main(model):
                with torch.no_grad():
                    evaluate(model)
                probe(model)

            if __name__ == "__main__":
                main(None)
        """,
        "tests/test_val.py": "from val import evaluate\n\ndef test_it(model):\n    evaluate(model)\n",
    })
    assert linked.is_no_grad_wrapper(function("utils.py", "smart_inference_mode"))
    assert linked.always_without_grad(function("val.py", "evaluate"))
    assert not linked.always_without_grad(function("val.py", "probe"))
    assert not linked.always_without_grad(function("val.py", "unused"))


def test_a_function_seldom_called_runs_under_periodic_guards_or_once() -> None:
    linked = program({
        "engine.py": """
            def validate(model, loader): pass
            def sample(model, loader): pass
            def evaluate(model, loader): pass
            def probe(model, loader): pass
            def unused(model, loader): pass
            def per_epoch(model, loader):
                probe(model, loader)
        """,
        "train.py": """
            from engine import validate, sample, evaluate, per_epoch

            def main(args, model, loader, optimizer):
                if args.eval:
                    validate(model, loader)
                    return
                for epoch in range(args.epochs):
                    for x, y in loader:
                        model(x, y).backward()
                        optimizer.step()
                    if epoch % 10 == 0:
                        validate(model, loader)
                        sample(model, loader)
                    evaluate(model, loader)
                    per_epoch(model, loader)

            if __name__ == "__main__":
                main(None, None, None, None)
        """,
    })
    assert linked.seldom_called(function("engine.py", "validate"))
    # Periodic calls only: the `--eval` one runs once, and may cover a whole corpus.
    assert not linked.seldom_called(function("engine.py", "validate"), once=False)
    assert linked.seldom_called(function("engine.py", "sample"), once=False)
    assert not linked.seldom_called(function("engine.py", "evaluate"))  # every epoch
    assert not linked.seldom_called(function("engine.py", "probe"))  # its caller runs each epoch
    assert not linked.seldom_called(function("engine.py", "unused"))


def test_loaders_follow_factories_parameters_and_end_on_cycles() -> None:
    linked = program({
        "data.py": """
            from torch.utils.data import DataLoader

            def build(dataset):
                return DataLoader(dataset, batch_size=8, pin_memory=True)

            def again(dataset):
                return build(dataset)

            def loop_a():
                return loop_b()

            def loop_b():
                return loop_a()
        """,
        "train.py": """
            import torch
            from data import again
            from engine import run

            def main(dataset):
                loader = again(dataset)
                run(loader)
        """,
        "engine.py": """
            import torch

            def run(loader):
                inner(loader)

            def inner(data):
                for x in data:
                    pass
        """,
    })
    assert linked.returned_loader(function("data.py", "again")) == [True, False]
    assert linked.returned_loader(function("data.py", "loop_a")) is None
    assert linked.loader_argument(function("engine.py", "inner"), "data") == [True, False]


def test_framework_hooks_are_found_through_project_base_classes() -> None:
    linked = program({
        "base.py": "import lightning as L\n\nclass Base(L.LightningModule):\n    pass\n",
        "model.py": """
            import torch
            from base import Base

            class Model(Base):
                def training_step(self, batch, index):
                    return self.helper(batch)

                def helper(self, batch):
                    return batch

                def validation_step(self, batch, index):
                    pass
        """,
    })
    assert linked.per_step(function("model.py", "Model.training_step")) == ("train", ())
    kind, path = linked.per_step(function("model.py", "Model.helper"))
    assert (kind, [hop.callee for hop in path]) == ("train", ["Model.helper"])
    assert linked.per_step(function("model.py", "Model.validation_step")) == ("eval", ())


def test_modules_only_tests_import_are_test_support() -> None:
    linked = program({
        "demos/boring.py": "import torch\n\nclass BoringModel: pass\n",
        "demos/shared.py": "import torch\n",
        "tests/test_boring.py": "from demos.boring import BoringModel\nfrom demos.shared import x\n",
        "train.py": "import torch\nfrom demos.shared import x\n",
        "helpers.py": "import demos.boring\n",
        "tests/test_helpers.py": "import helpers\nimport script\n",
        "script.py": "import torch\n\nif __name__ == '__main__':\n    pass\n",
    })
    # boring.py: imported by a test and by helpers.py, itself imported only by a test; a
    # script that tests import is still a script.
    assert linked.tests == {
        "tests/test_boring.py", "tests/test_helpers.py", "helpers.py", "demos/boring.py"
    }


def test_a_constructor_switch_is_on_when_any_code_or_config_of_the_project_may_turn_it_on() -> None:
    backbone = """
        import torch
        class Block(torch.nn.Module):
            def __init__(self, dim, with_cp=False):
                self.with_cp = with_cp
        class Stage(torch.nn.Module):
            def __init__(self, with_cp=False, **kwargs):
                self.with_cp = with_cp
                self.block = Block(8, with_cp=self.with_cp)
        class Net(Stage):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
    """
    init = function("backbone.py", "Block.__init__")
    off = {"backbone.py": backbone, "config.py": "model = dict(type='Net', with_cp=False)\n"}
    linked = program(off)
    assert linked.never_built_with(init, "with_cp")
    assert "with_cp" not in linked.switched_on
    on = [
        "model = dict(type='Net', with_cp=True)\n",
        "model = {'type': 'Net', 'with_cp': 1}\n",
        "cfg['with_cp'] = flag\n",
        "cfg.model.with_cp = True\n",
    ]
    for config in on:
        linked = ProgramFacts({
            "backbone.py": summary(backbone, "backbone.py"), "config.py": summarize_plain(config),
        })
        assert not linked.never_built_with(init, "with_cp"), config
        assert "with_cp" in linked.switched_on, config
    train = "import torch\nfrom backbone import Stage\nStage(True)\n"
    by_position = program({**off, "train.py": train})
    assert not by_position.never_built_with(init, "with_cp")


def test_an_engine_runs_the_function_it_is_given_on_every_step_of_its_kind() -> None:
    linked = program({
        "train.py": """
            from ignite.engine import Engine

            def run(model, optimizer, loader):
                def train_step(engine, batch):
                    model(batch).sum().backward()
                    optimizer.step()

                def eval_step(engine, batch):
                    return model(batch)

                def handler(engine):
                    pass

                Engine(train_step).run(loader)
                Engine(process_function=eval_step).run(loader)
                handler(None)
        """,
    })
    kind, path = linked.per_step(function("train.py", "run.train_step"))
    assert (kind, [(hop.callee, hop.through) for hop in path]) == (
        "train", [("run.train_step", "Engine")]
    )
    kind, path = linked.per_step(function("train.py", "run.eval_step"))
    assert (kind, [(hop.callee, hop.through) for hop in path]) == ("eval", [("run.eval_step", "Engine")])
    assert linked.per_step(function("train.py", "run.handler")) is None


def test_in_the_framework_repository_its_own_engine_runs_the_step() -> None:
    linked = program({
        "ignite/__init__.py": "",
        "ignite/engine/__init__.py": "from ignite.engine.engine import Engine\n",
        "ignite/engine/engine.py": "class Engine:\n    def __init__(self, process_function):\n        self.f = process_function\n",
        "examples/mnist.py": """
            from ignite.engine import Engine

            def run(model, optimizer, loader):
                def train_step(engine, batch):
                    model(batch).sum().backward()
                    optimizer.step()

                Engine(train_step).run(loader)
        """,
    })
    kind, _ = linked.per_step(function("examples/mnist.py", "run.train_step"))
    assert kind == "train"


def test_the_methods_of_a_class_nothing_names_never_run() -> None:
    quantize = """
        import torch
        class VectorQuantizer(torch.nn.Module):
            def __init__(self):
                super(VectorQuantizer, self).__init__()
            def forward(self, z):
                return torch.zeros(4).to(z)
        class VectorQuantizer2(torch.nn.Module):
            def forward(self, z):
                return z
        @register_model
        class Registered(torch.nn.Module):
            def forward(self, z):
                return z
        class Configured(torch.nn.Module):
            def forward(self, z):
                return z
        class Launched(torch.nn.Module):
            def forward(self, z):
                return z
        class SF2M(torch.nn.Module):
            def forward(self, z):
                return z
        class OneWaySF2M(SF2M):
            pass
        class Shared(torch.nn.Module):
            def forward(self, z):
                return z
        class Trained(Shared):
            pass
    """
    files = {
        "quantize.py": summary(quantize, "quantize.py"),
        "model.py": summary("from quantize import VectorQuantizer2 as VectorQuantizer\n", "model.py"),
        "train.py": summary("import quantize\nquantize.Trained()\n", "train.py"),
        # A config that is not PyTorch code, and a launcher's words, name classes too.
        "configs/base.py": summarize_plain("model = dict(target='quantize.Configured')\n"),
        "configs/run.yaml": summarize_launcher("model:\n  target: quantize.Launched\n"),
    }
    linked = ProgramFacts(files)
    # A file binds the legacy class's name to the improved one: it names the improved one
    # (ResShift's and VQ-Diffusion's autoencoders), and `super(VectorQuantizer, self)`
    # in the legacy class's own method names no use of it.
    assert linked.never_called(function("quantize.py", "VectorQuantizer.forward"))
    assert not linked.never_called(function("quantize.py", "VectorQuantizer2.forward"))
    files["model.py"] = summary("from quantize import VectorQuantizer\n", "model.py")
    assert not ProgramFacts(files).never_called(function("quantize.py", "VectorQuantizer.forward"))
    # A file that defines its own class of that name and builds it names its own (LlamaGen's
    # `vq_model.py` beside taming's legacy quantizer).
    files["model.py"] = summary(
        "import torch\nclass VectorQuantizer(torch.nn.Module):\n    pass\nq = VectorQuantizer()\n",
        "model.py",
    )
    assert ProgramFacts(files).never_called(function("quantize.py", "VectorQuantizer.forward"))
    # One that imports the name from a module where it is another class names that one
    # (TFB's Time-Series-Library models and the copies in its baselines' packages)...
    files["other.py"] = summary("import torch\nclass VectorQuantizer(torch.nn.Module):\n    pass\n", "other.py")
    files["model.py"] = summary("from other import VectorQuantizer\nq = VectorQuantizer()\n", "model.py")
    assert ProgramFacts(files).never_called(function("quantize.py", "VectorQuantizer.forward"))
    # ... unless it also imports this one (U-ViT's `get_nnet`, one import per model name).
    files["model.py"] = summary(
        "def get(name):\n"
        "    if name == 'a':\n"
        "        from other import VectorQuantizer\n"
        "        return VectorQuantizer()\n"
        "    from quantize import VectorQuantizer\n"
        "    return VectorQuantizer()\n",
        "model.py",
    )
    assert not ProgramFacts(files).never_called(function("quantize.py", "VectorQuantizer.forward"))
    del files["model.py"], files["other.py"]
    linked = ProgramFacts(files)
    assert linked.never_called(function("quantize.py", "VectorQuantizer.forward"))
    assert linked.never_called(function("quantize.py", "VectorQuantizer2.forward"))
    for kept in ("Registered", "Configured", "Launched"):
        assert not linked.never_called(function("quantize.py", f"{kept}.forward")), kept
    # A class named only as the base of classes nothing builds is built by nothing either;
    # one whose subclass is built runs its inherited methods.
    assert linked.never_called(function("quantize.py", "SF2M.forward"))
    assert not linked.never_called(function("quantize.py", "Shared.forward"))
    # A module no other file imports or names may be a library's API, or a script; one a
    # config names is used; one a package imports all the names of is its API.
    legacy = function("quantize.py", "VectorQuantizer2.forward")
    alone = {"quantize.py": files["quantize.py"]}
    assert not ProgramFacts(alone).never_called(legacy)
    alone["configs/model.yaml"] = summarize_launcher("target: src.quantize.Launched\n")
    assert ProgramFacts(alone).never_called(legacy)
    alone["__init__.py"] = summary("from quantize import *\n", "__init__.py")
    assert not ProgramFacts(alone).never_called(legacy)


def test_a_function_that_starts_by_copying_a_parameter_says_which() -> None:
    functions = summary(
        """
        import torch

        def prepare(args, batch, device):
            image, text = batch
            text = text.to(device)
            return image, text

        def encode(encoder, batch, device):
            features = encoder(batch[0])
            return features.to(device)

        class Trainer:
            def inputs(self, batch):
                return batch["image"].cuda()

            def staged(self, batch):
                return batch["image"].cuda(non_blocking=True)
        """
    ).functions
    assert functions["prepare"].uploads_first == "batch"
    assert functions["encode"].uploads_first is None
    assert functions["Trainer.inputs"].uploads_first == "batch"
    assert functions["Trainer.staged"].uploads_first is None


def test_both_summaries_record_the_packages_a_module_imports_by_a_computed_name() -> None:
    # The same file read with LibCST (it uses PyTorch) and with Python's parser (it does not).
    for importer in ("__import__", "importlib.import_module"):
        source = f'import importlib\n\nmodule = {importer}(name)\nother = {importer}(f"baselines.{{name}}")\n'
        assert summary("import torch\n" + source).imports_by_name == ["", "baselines"]
        assert summarize_plain(source).imports_by_name == ["", "baselines"]
