"""The core per-file facts, each on its own: names, loops, guards, CUDA use, DataLoaders,
argument binding, and the engine's promise to parse only files that can hold PyTorch code."""

from __future__ import annotations

import textwrap
from pathlib import Path, PurePath

import libcst as cst
import pytest

from torchperf_lint.engine import LintSettings, lint_text
from torchperf_lint.facts import FileFacts, is_test_file
from torchperf_lint.facts.arguments import MISSING, SIGNATURES, UNKNOWN, argument_value
from torchperf_lint.facts.index import build_index, descendants
from torchperf_lint.facts.names import dotted_name
from torchperf_lint.facts.program import Program, ProgramAnswers
from torchperf_lint.fixes import fix_text
from torchperf_lint.rules import BY_CODE


def facts_of(source: str, path: str = "train.py") -> FileFacts:
    return FileFacts(cst.parse_module(textwrap.dedent(source)), PurePath(path))


def calls_named(facts: FileFacts, method: str) -> list[cst.Call]:
    """Calls whose callee is `method` or ends in `.method`, in source order."""
    found = []
    for call in facts.index.calls:
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name == method:
            found.append(call)
    return found


# Names


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch\ntorch.utils.data.DataLoader(ds)", "torch.utils.data.DataLoader"),
        ("import torch as T\nT.optim.Adam(p)", "torch.optim.Adam"),
        ("from torch.utils.data import DataLoader as DL\nDL(ds)", "torch.utils.data.DataLoader"),
        ("from torch.cuda import amp\namp.autocast()", "torch.cuda.amp.autocast"),
        ("import torch.nn as nn\nnn.Linear(1, 2)", "torch.nn.Linear"),
        ("from torch import nn, optim\noptim.SGD(p)", "torch.optim.SGD"),
        # Re-exports resolve to the public name.
        ("from torch.utils.data.dataloader import DataLoader\nDataLoader(ds)",
         "torch.utils.data.DataLoader"),
        ("import torch\nDL = torch.utils.data.DataLoader\nDL(ds)", "torch.utils.data.DataLoader"),
        ("float(x)", "builtins.float"),
        # A star import of a project module may bring `torch` (a notebook's helpers).
        ("from tutorial_utils import *\ntorch.no_grad()", "torch.no_grad"),
    ],
)
def test_qualified_names_follow_imports_and_aliases(source: str, expected: str) -> None:
    facts = facts_of(source)
    assert facts.names.call_name(facts.index.calls[-1]) == expected


def test_a_local_definition_shadows_the_import_only_in_its_own_scope() -> None:
    facts = facts_of(
        """
        from torch.utils.data import DataLoader

        def mine(ds):
            class DataLoader:
                pass
            return DataLoader(ds)

        def theirs(ds):
            return DataLoader(ds)
        """
    )
    shadowed, real = calls_named(facts, "DataLoader")
    assert facts.names.call_name(shadowed) is None
    assert facts.names.call_name(real) == "torch.utils.data.DataLoader"


def test_a_module_level_class_shadows_everywhere_and_relative_imports_are_not_torch() -> None:
    facts = facts_of(
        """
        from torch.utils.data import DataLoader
        from .loaders import Loader
        class DataLoader:
            pass
        DataLoader(ds)
        Loader(ds)
        """
    )
    assert [facts.names.call_name(call) for call in facts.index.calls] == [None, None]


@pytest.mark.parametrize(
    "source",
    [
        "torch.no_grad()",  # nothing binds it
        "from torch import *\ntorch.no_grad()",  # PyTorch's own star import binds no `torch`
        "from tutorial_utils import *\ntorch = load()\ntorch.no_grad()",
    ],
)
def test_an_unbound_torch_is_not_pytorch_without_a_project_star_import(source: str) -> None:
    facts = facts_of(source)
    assert facts.names.call_name(facts.index.calls[-1]) is None


# Loops


def test_training_loops_and_the_nearest_loop_of_each_call() -> None:
    facts = facts_of(
        """
        for epoch in range(3):
            for x, y in loader:
                loss = model(x)
                loss.backward()
                optimizer.step()
                stats = [t.item() for t in loss]
                def later():
                    return loss.item()
            print(epoch_loss.item())
        """
    )
    epoch_loop, step_loop = facts.loops.all
    assert (epoch_loop.is_training, step_loop.is_training) == (False, True)
    first_item, in_def, after = calls_named(facts, "item")
    # A comprehension belongs to the enclosing loop; a nested def to no loop.
    assert facts.loops.loop_of_call(first_item) is step_loop
    assert facts.loops.loop_of_call(in_def) is None
    assert facts.loops.loop_of_call(after) is epoch_loop
    assert [loop.node for loop in facts.loops.enclosing_loops(first_item)] == [
        step_loop.node, epoch_loop.node
    ]


@pytest.mark.parametrize(
    ("body", "is_training"),
    [
        ("accelerator.backward(loss)", True),
        ("if ready:\n        scaler.step(optimizer)", True),
        ("opt.step()", True),  # bound to a torch.optim construction below
        ("scheduler.step()", False),
        ("env.step(action)", False),
        # timm's and MAE's NativeScaler runs backward and the optimizer step in __call__.
        ("loss_scaler(loss, optimizer, parameters=model.parameters())", True),
        ("loss_scaler(loss)", False),
        # Short names of optimizers (GAN code: `d_opt`, `opt_g`), not other words with "opt".
        ("d_opt.step()", True),
        ("opt_g.step()", True),
        ("options.step()", False),
    ],
)
def test_what_makes_a_training_loop(body: str, is_training: bool) -> None:
    facts = facts_of(
        f"import torch\nopt = torch.optim.SGD(params)\nfor batch in batches:\n    {body}\n"
    )
    assert facts.loops.all[0].is_training is is_training


def test_a_parameter_annotated_as_an_optimizer_steps() -> None:
    facts = facts_of(
        """
        import torch

        def optimize(o: torch.optim.Optimizer, unknown):
            for group in groups:
                o.step()
            for group in groups:
                unknown.step()
        """
    )
    assert [loop.is_training for loop in facts.loops.all] == [True, False]


def test_a_loop_name_in_its_own_iterable_is_answered_without_endless_recursion() -> None:
    # `for m in [m, d]:` asks whether `m` is a tensor through the items of the list, one of
    # which is `m` again, at the same depth (pyro's tests once ended in a RecursionError).
    facts = facts_of(
        """
        import torch

        def bounded(d):
            m = torch.ones(3).sum().item()
            for m in [m, d]:
                assert (m <= 1).all()
        """
    )
    loop = facts.loops.all[0]
    assert facts.tensors.is_tensor(loop.node.target) is False


def _reaching(body: str) -> list[str] | None:
    """The source of each binding `reaching_bindings` gives for the last `use(x)` of `body`
    (its header for a loop)."""
    facts = facts_of("def f(a):\n" + textwrap.indent(textwrap.dedent(body), "    "))
    (use,) = [call for call in calls_named(facts, "use") if facts.code(call) == "use(x)"][-1:]
    found = facts.scopes.reaching_bindings(use.args[0].value)
    if found is None:
        return None
    return [
        f"for {facts.code(site.target)}"
        if isinstance(site, cst.For)
        else facts.code(facts.index.parents[site])  # the assignment of a target
        for site in found
    ]


@pytest.mark.parametrize(
    "body, expected",
    [
        ("x = 1\nx = 2\nuse(x)", ["x = 2"]),
        ("x = 1\nif a:\n    x = 2\nelse:\n    x = 3\nuse(x)", ["x = 2", "x = 3"]),
        ("x = 1\nif a:\n    x = 2\nuse(x)", ["x = 2", "x = 1"]),
        ("x = 1\nif a:\n    x = 2\nelif a > 1:\n    x = 3\nuse(x)", ["x = 2", "x = 3", "x = 1"]),
        ("x = 1\nwith a:\n    x, y = 2, 3\nuse(x)", ["x, y = 2, 3"]),
        # A loop's target rebinds the name on each iteration, whatever came before.
        ("x = 1\nfor x in a:\n    use(x)", ["for x"]),
        ("x = 1\nfor i, x in enumerate(a):\n    y = x + 1\n    use(x)", ["for i, x"]),
        # The iteration before: what the end of the body binds, then what came before.
        ("x = 1\nfor i in a:\n    use(x)\n    x = 2", ["x = 2", "x = 1"]),
        ("x = 1\nfor i in a:\n    x = 2\nuse(x)", ["x = 2", "x = 1"]),
        ("x = 1\nfor x in a:\n    pass\nuse(x)", ["for x", "x = 1"]),
        # Unknown: a path with no binding in the function (a parameter), a `try`, `with as`.
        ("if a:\n    x = 1\nuse(x)", None),
        ("x = a\nfor a in x:\n    a = 2\nuse(a)\nuse(x)", ["x = a"]),
        ("x = 1\ntry:\n    x = 2\nexcept E:\n    use(x)", None),
        ("x = 1\nwith a as x:\n    use(x)", None),
        # A branch that leaves the function binds nothing the code after it reads.
        (
            "if a:\n    x = 1\nelif b:\n    x = 2\nelse:\n    print(a)\n    exit(-1)\nuse(x)",
            ["x = 1", "x = 2"],
        ),
        ("if a:\n    x = 1\nelse: raise ValueError(a)\nuse(x)", ["x = 1"]),
        ("if not a:\n    return None\nelse:\n    x = 2\nuse(x)", ["x = 2"]),
        # A branch that may leave, and may not, still reaches the use with `x` unbound.
        ("if a:\n    x = 1\nelse:\n    if b:\n        sys.exit(1)\nuse(x)", None),
    ],
)
def test_the_bindings_that_reach_a_use(body: str, expected: list[str] | None) -> None:
    assert _reaching(body) == expected


@pytest.mark.parametrize(
    "body, shown",
    [
        ("x = None\nif a:\n    x = 2\nuse(x)", True),
        ("x: int = 1\nx += 1\nuse(x)", True),
        ("x, y = 1, 2\nuse(x)", True),
        # Unpacked from a value the module does not spell out, a loop or `with` target, a walrus.
        ("if a:\n    x, y = [split(i) for i in a]\nelse:\n    x = None\nuse(x)", False),
        ("x = None\nfor x in a:\n    pass\nuse(x)", False),
        ("x = None\nwith a as x:\n    pass\nuse(x)", False),
        ("x = None\nif (x := a):\n    pass\nuse(x)", False),
    ],
)
def test_whether_the_module_shows_every_value_bound_to_a_name(body: str, shown: bool) -> None:
    facts = facts_of("def f(a):\n" + textwrap.indent(body, "    "))
    use = next(call for call in facts.index.calls if dotted_name(call.func) == "use")
    assert facts.scopes.shows_every_binding(use.args[0].value) is shown
    # A parameter may hold what any caller passes.
    facts = facts_of("def f(x=None):\n    x = None\n    use(x)")
    use = next(call for call in facts.index.calls if dotted_name(call.func) == "use")
    assert not facts.scopes.shows_every_binding(use.args[0].value)


def test_a_for_loops_iterable_runs_once_and_a_while_test_every_iteration() -> None:
    facts = facts_of(
        """
        for x in make_batches().items():
            pass
        while queue.get().item() > 0:
            pass
        """
    )
    for_loop, while_loop = facts.loops.all
    (items,) = calls_named(facts, "items")
    (item,) = calls_named(facts, "item")
    assert facts.loops.loop_of_call(items) is None
    assert facts.loops.loop_of_call(item) is while_loop
    assert for_loop.own_calls == []


def test_loops_over_dataloaders_are_hot() -> None:
    facts = facts_of(
        """
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, pin_memory=True)
        for i, batch in enumerate(loader):
            pass
        for batch in tqdm(self.val_loader):
            pass
        for row in rows:
            pass
        pbar = tqdm(loader, unit="batch")
        for batch in pbar:
            pass
        """
    )
    known, by_name, plain, wrapped = facts.loops.all
    assert [loop.is_hot for loop in (known, by_name, plain, wrapped)] == [True, True, False, True]
    assert facts.dataloaders.loader_of(known.node).pins_memory
    assert facts.dataloaders.loader_of(by_name.node) is None
    assert facts.dataloaders.loader_of(wrapped.node) is facts.dataloaders.loader_of(known.node)


# Guards


@pytest.mark.parametrize(
    ("test", "periodic"),
    [
        ("step % 100 == 0", True),
        ("step % args.log_every != 0", True),
        ("not step % 10", True),
        ("step % 10 == 0 and rank == 0", True),
        ("0 == step % 10", True),
        ("rank == 0", False),
        ("step % 10 == 0 or last", False),
        ("args.verbose", False),
        ("do_log", True),
        ("do_log and rank == 0", True),
        ("flag", False),
    ],
)
def test_periodic_guards(test: str, periodic: bool) -> None:
    facts = facts_of(
        "for step in range(9):\n"
        "    do_log = step % 10 == 0\n"
        "    flag = step > 3\n"
        f"    if {test}:\n"
        "        loss.item()\n"
    )
    (item,) = calls_named(facts, "item")
    assert (facts.guards.periodic_guard(item) is not None) is periodic


def test_the_else_branch_of_a_periodic_guard_runs_every_other_step() -> None:
    facts = facts_of("for s in r:\n    if s % 10 == 0:\n        pass\n    else:\n        x.item()\n")
    (item,) = calls_named(facts, "item")
    assert facts.guards.periodic_guard(item) is None


def test_autograd_is_off_under_no_grad_or_inference_mode_and_decorators() -> None:
    facts = facts_of(
        """
        import torch
        with torch.no_grad():
            a = model(x)
        @torch.inference_mode()
        def evaluate():
            def inner():
                return model(x)
            return model(x)
        with torch.set_grad_enabled(False):
            b = model(x)
        c = model(x)
        """
    )
    verdicts = [facts.guards.grad_disabled(call) for call in calls_named(facts, "model")]
    assert verdicts == [True, True, True, True, False]


def test_the_counters_of_a_loop_are_what_its_body_counts_outside_nested_scopes() -> None:
    facts = facts_of(
        """
        for i, batch in enumerate(loader):
            step += 1
            n = i + 1
            m = n // 4
            ni = i + nb * epoch
            total = epoch * len(loader) + i
            mixed = i * 2
            def hook():
                hidden += 1
            for j in range(3):
                inner += 1
        class Trainer:
            def fit(self):
                for self.it in range(9):
                    pass
                while True:
                    self.step += 1
                self.once += 1
        """
    )
    outer, nested, by_attribute, forever = facts.index.loops
    # Counted over all epochs: an offset that holds through the loop; not a multiple.
    assert facts.counters.of_loop(outer) == {"i", "step", "n", "m", "ni", "total", "inner"}
    assert facts.counters.of_loop(nested) == {"j", "inner"}
    assert facts.counters.of_loop(forever) == {"self.step"}
    assert facts.counters.of_class(facts.index.classes[0]) == {"self.it", "self.step"}
    assert by_attribute.target.attr.value == "it"


def test_a_progress_bar_over_an_enumerate_counts_with_its_first_target() -> None:
    facts = facts_of(
        """
        pbar = enumerate(loader)
        if rank == 0:
            pbar = tqdm(pbar, total=n)
        for i, batch in pbar:
            pass
        for j, batch in tqdm(enumerate(loader)):
            pass
        def resume(bar):
            bar = tqdm(bar)
            for k, batch in bar:
                pass
        """
    )
    wrapped, around, rewrapped_parameter = facts.index.loops
    assert facts.counters.of_loop(wrapped) == {"i"}
    assert facts.counters.of_loop(around) == {"j"}
    # Only rewrapped, never shown to be an `enumerate`: its pairs may be anything.
    assert facts.counters.of_loop(rewrapped_parameter) == set()


def test_the_facts_of_a_file_in_its_program_share_what_reads_no_program() -> None:
    facts = facts_of("for i in range(9):\n    if i == 0:\n        model(x)\n")
    _, call = facts.index.calls
    assert facts.guards.sparse_guard(call, facts.index.loops[0]) is not None
    facts.models  # noqa: B018 - built before the program is known, as the summary builds it
    linked = facts.with_program(Program())
    assert linked.counters is facts.counters and linked.guards.counters is facts.counters
    assert linked.models is facts.models
    assert linked.guards is not facts.guards  # it asks the program about no-grad wrappers
    assert linked.guards.sparse_guard(call, facts.index.loops[0]) is not None


class _StepsInHelpers(Program):
    """A program in which every call named `train_step` runs a helper that steps."""

    def answers_for(self, facts: FileFacts) -> ProgramAnswers:
        class Answers(ProgramAnswers):
            def calls_step_helper(self, call: cst.Call) -> bool:
                return getattr(call.func, "value", None) == "train_step"

        return Answers()


def test_the_loops_of_a_file_in_its_program_are_those_found_afresh_in_it() -> None:
    source = """
        for batch in loader:
            train_step(batch)
        for epoch in range(3):
            for x in loader:
                loss.backward()
                train_step(x)
        """
    alone = facts_of(source)
    assert [loop.is_training for loop in alone.loops.all] == [False, False, True]
    linked = alone.with_program(_StepsInHelpers())
    fresh = FileFacts(alone.module, alone.path, _StepsInHelpers())
    assert linked.loops is not alone.loops
    assert [loop.is_training for loop in linked.loops.all] == [True, False, True]
    assert linked.loops.all == fresh.loops.all
    for call in alone.index.calls:
        assert linked.loops.loop_of_call(call) == fresh.loops.loop_of_call(call)
        assert linked.loops.nearest_loop(call) == fresh.loops.nearest_loop(call)
    assert [loop.is_training for loop in alone.loops.all] == [False, False, True]


def test_main_guard() -> None:
    facts = facts_of("if __name__ == '__main__':\n    main()\nother()\n")
    main, other = facts.index.calls
    assert facts.guards.under_main_guard(main)
    assert not facts.guards.under_main_guard(other)


# CUDA use


@pytest.mark.parametrize(
    ("source", "uses_cuda"),
    [
        ("model.cuda()", True),
        ("x.to('cuda:0')", True),
        ("torch.zeros(3, device='cuda')", True),
        ("torch.device('cuda' if torch.cuda.is_available() else 'cpu')", True),
        ("device = 'cuda'\nmodel.to(device)", True),
        # Device names built at run time from a literal that starts with one.
        (("device = torch.device('cuda:' + str(args.device)) if ok else torch.device('cpu')\n"
          "model.to(device)"), True),
        (("device = f'cuda:{args.device}' if torch.cuda.is_available() else 'cpu'\n"
          "device = torch.device(device)\nmodel.to(device)"), True),
        ("model.to('cuda:%d' % rank)", True),
        ("model.to('cuda:{}'.format(rank))", True),
        ("device = 'cpu:' + str(rank)\nmodel.to(device)", False),
        ("model.to('{}'.format(device))", False),
        ("torch.autocast('cuda')", True),
        ("torch.autocast(device_type='cuda')", True),
        ("torch.cuda.synchronize()", True),
        ("with torch.cuda.amp.autocast():\n    pass", True),
        ("x.to('cpu')\ntorch.cuda.is_available()", False),
        ("print('cuda')", False),
        ("model.to(device)", False),
        # Frameworks that put the model on the GPU themselves.
        ("from accelerate import Accelerator\nAccelerator()", True),
        ("import lightning as L\nL.Trainer(max_epochs=3)", True),
        ("import lightning as L\nL.Fabric(accelerator='auto')", True),
        ("import lightning as L\nL.Trainer(accelerator='cpu')", False),
        ("torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])", True),
        ("torch.nn.parallel.DistributedDataParallel(model)", False),
        ("torch.distributed.init_process_group('nccl')", True),
        ("torch.distributed.init_process_group(backend='gloo')", False),
        ("parser.add_argument('--device', default='cuda')", True),
        ("parser.add_argument('--device', default='cpu')", False),
    ],
)
def test_module_uses_cuda(source: str, uses_cuda: bool) -> None:
    assert facts_of("import torch\n" + source).uses_cuda is uses_cuda


# Arguments


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("DataLoader(ds, num_workers=0)", 0),
        ("DataLoader(ds, 10, False, None, None, 3)", 3),
        ("DataLoader(ds)", MISSING),
        ("DataLoader(ds, num_workers=n)", UNKNOWN),
        ("DataLoader(ds, **kwargs)", UNKNOWN),
        ("DataLoader(ds, *args)", UNKNOWN),
        ("DataLoader(ds, *args, num_workers=2)", 2),
    ],
)
def test_arguments_bind_by_keyword_or_position(call: str, expected: object) -> None:
    node = cst.parse_expression(call)
    signature = SIGNATURES["torch.utils.data.DataLoader"]
    assert argument_value(node, "num_workers", signature) == expected


def test_test_files() -> None:
    assert is_test_file(PurePath("pkg/tests/helpers.py"))
    assert is_test_file(PurePath("test_model.py"))
    assert is_test_file(PurePath("model_test.py"))
    assert is_test_file(PurePath("conftest.py"))
    assert not is_test_file(PurePath("src/train.py"))
    assert not is_test_file(PurePath("src/contest.py"))


SELF_CHECK = """
import torch


def check_forward(dtype):
    out = op(torch.rand(2, 3).cuda())
    assert torch.allclose(out.cpu(), reference(dtype))


def check_time_cost(steps):
    return steps


if __name__ == "__main__":
    for dtype in (torch.float, torch.double):
        check_forward(dtype)
    check_time_cost(128)
"""


def test_a_script_that_only_runs_its_checks_is_a_test() -> None:
    # An op's numerical test named `test.py` next to the op: judged by what it runs.
    assert FileFacts(cst.parse_module(SELF_CHECK), PurePath("ops/test.py")).is_test_file
    evaluation = SELF_CHECK.replace("check_time_cost(128)", "evaluate(128)") + "def evaluate(n): ...\n"
    assert not FileFacts(cst.parse_module(evaluation), PurePath("ops/test.py")).is_test_file
    no_checks = SELF_CHECK.replace('if __name__ == "__main__":', "if False:")
    assert not FileFacts(cst.parse_module(no_checks), PurePath("tools/test.py")).is_test_file


@pytest.mark.parametrize(
    "path",
    [
        "src/accelerate/test_utils/training.py",  # a library's test utilities
        "src/lightning/pytorch/demos/test_utils_models.py",
        "src/transformers/testing_utils.py",
        "torch/testing/_internal/common_utils.py",
        "tests/fixtures/model.py",
        "project/fixtures/data.py",
        "docs/source/doctest_fixtures.py",  # what a doctest run sets up
    ],
)
def test_test_support_code_counts_as_tests(path: str) -> None:
    assert is_test_file(PurePath(path))


@pytest.mark.parametrize(
    "path", ["src/testbed/train.py", "examples/latest_model.py", "src/utils/testing.py"]
)
def test_names_that_merely_contain_test_are_not_tests(path: str) -> None:
    assert not is_test_file(PurePath(path))


# Engine


def test_files_without_torch_are_not_parsed() -> None:
    settings = LintSettings(rules=tuple(BY_CODE.values()))
    # Not valid Python: it would be a syntax error if it were parsed.
    assert lint_text("def broken(:\n", "tool.py", settings) == []


def test_findings_are_deterministic() -> None:
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loaders = {DataLoader(a), DataLoader(b)}\nx = torch.zeros(3).cuda()\n"
    )
    settings = LintSettings(rules=tuple(BY_CODE.values()))
    runs = {tuple(lint_text(source, "train.py", settings)) for _ in range(5)}
    assert len(runs) == 1


def test_adding_pin_memory_lets_the_non_blocking_fix_apply_in_the_same_run() -> None:
    source = textwrap.dedent(
        """
        import torch
        from torch.utils.data import DataLoader

        def train(ds, model, optimizer):
            loader = DataLoader(ds, num_workers=4)
            for x, y in loader:
                x = x.to("cuda")
                model(x).sum().backward()
                optimizer.step()
        """
    )
    settings = LintSettings(rules=(BY_CODE["TPL102"], BY_CODE["TPL104"]))
    fixed, applied, remaining = fix_text(source, "train.py", settings, unsafe_fixes=True)
    assert dict(applied) == {"TPL102": 1, "TPL104": 1}
    assert remaining == []
    assert "DataLoader(ds, num_workers=4, pin_memory=True)" in fixed
    assert 'x = x.to("cuda", non_blocking=True)' in fixed


def test_each_subtree_ends_at_its_last_node_in_source_order() -> None:
    module = cst.parse_module(
        (Path(__file__).parent.parent / "examples" / "train.py").read_text(encoding="utf-8")
    )
    index = build_index(module)
    for node, position in index.preorder.items():
        below = [index.preorder[child] for child in descendants(node) if child in index.preorder]
        assert index.subtree_end[node] == max([position, *below])
