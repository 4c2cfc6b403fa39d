"""The facts the TPL2xx rules lean on: tensor expressions, module references, sparse guards."""

from __future__ import annotations

from pathlib import PurePath

import libcst as cst
import pytest

from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.guards import loop_counter


def facts_of(source: str) -> FileFacts:
    return FileFacts(cst.parse_module(source), PurePath("train.py"))


def expression_at(facts: FileFacts, code: str) -> cst.BaseExpression:
    """The last expression in the module whose source is exactly `code`."""
    found = [
        node
        for node in facts.index.parents
        if isinstance(node, cst.BaseExpression) and facts.code(node) == code
    ]
    assert found, code
    return found[-1]


TRAINING = """
import torch
import torch.nn.functional as F
from torch import nn

class Net(nn.Module):
    pass

def train(loader, optimizer):
    model = Net().cuda()
    criterion = nn.CrossEntropyLoss()
    for i, (x, y) in enumerate(loader):
        x = x.cuda()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        correct = (out.argmax(1) == y).sum()
        out.argmax(1) == y
        out.shape[0]
        out.device
        x is None
        "aux" in out
        model.training
        criterion
        self.encoder
"""


@pytest.mark.parametrize(
    ("code", "is_tensor"),
    [
        ("(out.argmax(1) == y).sum()", True),
        ("out.argmax(1) == y", True),
        ("out.shape[0]", False),
        ("out.device", False),
        ("model.training", False),
        ("x is None", False),
        ('"aux" in out', False),
        ("Net()", False),
        ("model", False),
        ("loss", True),
    ],
)
def test_tensor_expressions(code: str, is_tensor: bool) -> None:
    facts = facts_of(TRAINING)
    assert facts.tensors.is_tensor(expression_at(facts, code)) is is_tensor


ITEMS = """
import torch

def forward(self, input_ids, attention_mask, chunks):
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids, dtype=torch.bool)
    else:
        attention_mask = attention_mask.bool()
    rows = [ids[ids_mask] for ids, ids_mask in zip(input_ids, attention_mask)]
    for i, row in enumerate(rows):
        row
    for part in torch.split(attention_mask, 2):
        part
    for chunk in chunks:
        chunk
    for output in self.model(input_ids):
        output
    for label in ["a", "b"]:
        label
"""


@pytest.mark.parametrize(
    ("code", "is_tensor"),
    [
        ("ids_mask", True),  # a row of a tensor
        ("ids", False),  # a row of a parameter: anything
        ("ids[ids_mask]", True),  # only tensors take a boolean mask
        ("row", True),  # an item of a list of tensors
        ("part", True),  # a chunk of `torch.split`
        ("chunk", False),
        ("output", False),  # a model may return a dict, which yields its keys
        ("label", False),
    ],
)
def test_the_items_of_tensors_are_tensors(code: str, is_tensor: bool) -> None:
    facts = facts_of(ITEMS)
    assert facts.tensors.is_tensor(expression_at(facts, code)) is is_tensor


def test_functional_losses_are_not_module_constructions() -> None:
    facts = facts_of(TRAINING)
    assert "loss" not in facts.tensors.module_names
    assert "criterion" in facts.tensors.module_names


@pytest.mark.parametrize(
    ("code", "is_module"),
    [("model", True), ("criterion", True), ("self.encoder", True), ("loss", False), ("x", False)],
)
def test_module_references(code: str, is_module: bool) -> None:
    facts = facts_of(TRAINING)
    assert facts.tensors.is_module_reference(expression_at(facts, code)) is is_module


def test_constructing_a_module_class_is_not_running_a_module() -> None:
    facts = facts_of(TRAINING)
    assert not facts.tensors.is_module_call(expression_at(facts, "Net()"))
    assert facts.tensors.is_module_call(expression_at(facts, "model(x)"))


def guard_of(source: str, code: str) -> str | None:
    facts = facts_of(source)
    node = expression_at(facts, code)
    loop = facts.loops.nearest_loop(node)
    assert loop is not None
    guard = facts.guards.sparse_guard(node, loop.node)
    return None if guard is None else facts.code(guard.test)


@pytest.mark.parametrize(
    ("test", "sparse"),
    [
        ("step % 10 == 0", True),
        ("step % 10 == 0 and rank == 0", True),
        ("not step % 10", True),
        ("step == 0", True),
        ("step + 1 == len(loader)", True),
        ("last or step % 10 == 0", True),
        ("verbose or step % 10 == 0", False),
        ("rank == 0", False),
        ("verbose", False),
        ("total == 0", False),
        ("step > 0", False),
        ("step < 5", True),
        ("step <= 4", True),
        ("5 > step", True),
        ("0 <= step <= 2", True),  # `0 <= step and step <= 2`
        ("0 < step < last_idx", False),
        ("step < last_idx", False),
        ("step >= 5", False),
        ("total < 5", False),
    ],
)
def test_sparse_guards(test: str, sparse: bool) -> None:
    source = (
        "def train(loader, rank, verbose, last_idx, total):\n"
        "    for step, batch in enumerate(loader):\n"
        "        last = step == last_idx\n"
        f"        if {test}:\n"
        "            report(batch)\n"
    )
    assert guard_of(source, "report(batch)") == (test if sparse else None)


@pytest.mark.parametrize(
    ("loop", "test"),
    [
        ("for batch in loader:", "step < 5"),  # a counter the loop increments itself
        ("for batch in loader:", "do_reg"),  # a name bound to a modulo test
        ("while True:", "step == 0"),
        ("while True:", "do_reg"),
    ],
)
def test_guards_in_loops_without_their_own_counter(loop: str, test: str) -> None:
    source = (
        "def train(loader, k):\n"
        "    step = 0\n"
        f"    {loop}\n"
        "        do_reg = step % k == 0\n"
        f"        if {test}:\n"
        "            report(batch)\n"
        "        step += 1\n"
    )
    assert guard_of(source, "report(batch)") == test


def test_a_lazy_initialisation_runs_once() -> None:
    source = (
        "def decode(steps, scores):\n"
        "    attn = None\n"
        "    for step in range(steps):\n"
        "        if attn is None:\n"
        "            attn = report(scores)\n"
        "        if scores is None:\n"
        "            other(scores)\n"
    )
    assert guard_of(source, "report(scores)") == "attn is None"
    assert guard_of(source, "other(scores)") is None


def test_an_accumulator_is_no_counter() -> None:
    source = (
        "for x in loader:\n"
        "    total += x.sum()\n"
        "    if total < 5:\n"
        "        report(x)\n"
    )
    assert guard_of(source, "report(x)") is None


def test_sparse_guard_covers_the_body_not_the_else() -> None:
    source = (
        "for step in range(100):\n"
        "    if step % 10 == 0:\n"
        "        quiet()\n"
        "    else:\n"
        "        report()\n"
    )
    assert guard_of(source, "quiet()") == "step % 10 == 0"
    assert guard_of(source, "report()") is None


def test_a_counter_test_outside_the_loop_does_not_count() -> None:
    source = (
        "for epoch in range(10):\n"
        "    if epoch == 0:\n"
        "        for x in loader:\n"
        "            report(x)\n"
    )
    assert guard_of(source, "report(x)") is None


@pytest.mark.parametrize(
    ("loop", "counter"),
    [
        ("for i in range(n): pass", "i"),
        ("for i, (x, y) in enumerate(loader): pass", "i"),
        ("for x, y in loader: pass", None),
        ("for i in items: pass", None),
        ("while True: pass", None),
    ],
)
def test_loop_counter(loop: str, counter: str | None) -> None:
    node = cst.parse_module(loop + "\n").body[0]
    assert isinstance(node, (cst.For, cst.While))
    assert loop_counter(node) == counter


@pytest.mark.parametrize(
    ("code", "is_model"),
    [
        ("teacher_model(x)", True),
        ("self.ema_model(x)", True),
        ("self.build_model(cfg)", False),  # a method this module defines
        ("runner.load_model(path)", False),  # an action on a model, named as one
        ("get_model(name)", False),
    ],
)
def test_a_model_call_calls_a_model_object(code: str, is_model: bool) -> None:
    facts = facts_of(
        "class Runner:\n"
        "    def build_model(self, cfg):\n"
        "        return cfg\n"
        "    def run(self, x, cfg, path, name, teacher_model, runner):\n"
        f"        return {code}\n"
    )
    assert facts.tensors.is_module_call(expression_at(facts, code)) is is_model
