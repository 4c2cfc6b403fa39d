"""The host-sync facts (facts/syncs.py) and the loop facts TPL1xx/2xx/5xx/7xx share."""

from __future__ import annotations

import libcst as cst
import pytest
from test_facts_sync import expression_at, facts_of

from torchperf_lint.diagnostics import Location, Related
from torchperf_lint.engine import LintSettings, lint_text
from torchperf_lint.facts.names import root_name, target_names
from torchperf_lint.facts.syncs import HostSyncs
from torchperf_lint.registry import BY_CODE

TRAINING = """
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

def train(dataset, env, optimizer):
    model = nn.Linear(4, 2).cuda()
    loader = DataLoader(dataset)
    order = torch.randperm(10)
    drawn = torch.randint(4, (1,), device="cpu")
    placed = torch.randint(4, (1,), device="cuda")
    for x, y in loader:
        y.tolist()
        x = x.cuda()
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        loss.item()
        int(torch.randint(4, (1,)))
        x.cpu().numpy()
        print("step")
        float(loss)
        model.cpu()
        print(f"{loss:.3f}")
        order.tolist()
        np.zeros(3).tolist()
        env.step(loss.argmax().item())
        loss = model(x).sum()
        if torch.isnan(loss).any():
            pass
        if loss > 1:
            pass
        if x is None:
            pass
        loss[loss > 0]
        loss[loss > 0] = 0
        x.nonzero()
        torch.unique(x)
        y.nonzero()
"""


def test_device_reads_are_the_values_the_host_waits_for() -> None:
    facts = facts_of(TRAINING)
    found = [
        (facts.code(part.node), part.description)
        for site in facts.host_syncs.device_reads
        for part in (site, *site.others)
    ]
    assert found == [
        ("loss.item()", "`.item()`"),
        ("x.cpu()", "`.cpu()`"),  # `.numpy()` of a host copy waits for nothing more
        ("float(loss)", "`float()` of a tensor"),
        ('print(f"{loss:.3f}")', "`print` of a tensor"),
        ("torch.isnan(loss).any()", "A tensor used as a condition"),
        ("loss > 1", "A tensor used as a condition"),
    ]


def reads_and_their_others(facts) -> list[tuple[str, list[str]]]:
    """Each site of `HostSyncs.device_reads`, with the reads folded into it, as source."""
    return [
        (facts.code(site.node), [facts.code(other.node) for other in site.others])
        for site in facts.host_syncs.device_reads
    ]


def test_reads_after_a_read_with_nothing_queued_between_go_with_it() -> None:
    """The first read empties the queue: a later one waits for nothing new, also past host
    work, into a `with` on host values or an `if` on a plain flag, and after a read in an
    `if`'s test; device work between ends it, and a read after a wait reported nowhere (one
    its comment says is on purpose) is dropped."""
    facts = facts_of(TRAINING)
    found = reads_and_their_others(facts)
    assert found == [
        ("loss.item()", []),  # `int(torch.randint(4, (1,)))` queues work between
        ("x.cpu()", ["float(loss)", 'print(f"{loss:.3f}")']),
        ("torch.isnan(loss).any()", ["loss > 1"]),
    ]
    facts = facts_of(
        "import torch\n"
        "def step(model, x, log, rank):\n"
        "    loss = model(x).sum()\n"
        "    total = loss.item()\n"
        "    n = total * 2\n"
        "    with torch.no_grad():\n"
        "        avg = loss.item()\n"
        "    if rank == 0:\n"
        "        print(loss.item())\n"
        "    if torch.isnan(loss):\n"
        "        return\n"
        "    loss = model(x).sum()\n"
        "    value = loss.item()  # sync\n"
        "    print(loss.item())\n"
        "    loss = model(x).sum()\n"
        "    if step % 10 == 0:\n"
        "        print(loss.item())\n"
        "    print(loss.item())\n"
    )
    found = reads_and_their_others(facts)
    assert found == [
        ("loss.item()", ["loss.item()", "loss.item()", "torch.isnan(loss)"]),
        ("loss.item()", []),  # under `if step % 10 == 0:`
        ("loss.item()", []),  # a branch that may not run empties nothing
    ]
    # A loop that logs each metric reads at least one (jukebox's train.py).
    facts = facts_of(
        "import torch\n"
        "def step(model, x, metrics):\n"
        "    loss = model(x).sum()\n"
        "    for key, value in metrics.items():\n"
        "        metrics[key] = value.item()\n"
        "    metrics['loss'] = loss.item()\n"
    )
    assert reads_and_their_others(facts) == [("value.item()", ["loss.item()"])]


def test_an_accuracy_of_reductions_converted_to_a_dtype_between_two_reads_queues_little() -> None:
    """Sums of comparisons, a conversion to a dtype and a division queue a few small kernels
    (pretrain-gnns' `acc = (torch.sum(pos > 0) + torch.sum(neg < 0)).to(torch.float32) /
    n`): the accuracy's read goes with the loss's; a move to a device does not."""
    facts = facts_of(
        "import torch\n"
        "def step(model, x, pos, neg, device):\n"
        "    loss = model(x).sum()\n"
        "    total = float(loss.detach().cpu().item())\n"
        "    acc = (torch.sum(pos > 0) + torch.sum(neg < 0)).to(torch.float32) / float(2 * len(pos))\n"
        "    accuracy = float(acc.detach().cpu().item())\n"
        "    moved = (torch.sum(pos > 0) + torch.sum(neg < 0)).to(device)\n"
        "    count = moved.item()\n"
    )
    assert reads_and_their_others(facts) == [
        ("loss.detach().cpu()", ["acc.detach().cpu()"]),
        ("moved.item()", []),
    ]


def test_an_elementwise_criterion_between_two_reads_queues_little() -> None:
    """PyTorch's elementwise criteria, as functions or as modules bound to a name, queue a
    kernel or two (STTN's trainer); a criterion of the project may run a network."""
    facts = facts_of(
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from torch import nn\n"
        "class Trainer:\n"
        "    def __init__(self):\n"
        "        self.l1_loss = nn.L1Loss()\n"
        "        self.perceptual_loss = PerceptualLoss()\n"
        "    def step(self, pred, frames, masks, writer):\n"
        "        gan_loss = self.model(pred).mean()\n"
        "        writer.add_scalar('gan', gan_loss.item())\n"
        "        hole_loss = self.l1_loss(pred * masks, frames * masks) / torch.mean(masks)\n"
        "        writer.add_scalar('hole', hole_loss.item())\n"
        "        valid_loss = F.mse_loss(pred, frames)\n"
        "        writer.add_scalar('valid', valid_loss.item())\n"
        "        style_loss = self.perceptual_loss(pred, frames)\n"
        "        writer.add_scalar('style', style_loss.item())\n"
    )
    assert reads_and_their_others(facts) == [
        ("gan_loss.item()", ["hole_loss.item()", "valid_loss.item()"]),
        ("style_loss.item()", []),
    ]


def test_a_logging_helper_of_the_module_queues_nothing_between_two_reads() -> None:
    """STTN's trainer logs each loss through `self.add_summary`, which only adds the value
    to a dict and a writer; a helper that runs a model queues work."""
    facts = facts_of(
        "import torch\n"
        "class Trainer:\n"
        "    def add_summary(self, writer, name, value):\n"
        "        self.summary[name] = self.summary.get(name, 0) + value\n"
        "        if self.iteration % 100 == 0:\n"
        "            writer.add_scalar(name, self.summary[name] / 100, self.iteration)\n"
        "    def score(self, x):\n"
        "        return self.model(x).mean()\n"
        "    def step(self, pred, writer):\n"
        "        loss = self.model(pred).mean()\n"
        "        self.add_summary(writer, 'loss', loss.item())\n"
        "        hole = torch.abs(pred).mean()\n"
        "        self.add_summary(writer, 'hole', hole.item())\n"
        "        score = self.score(pred)\n"
        "        self.add_summary(writer, 'score', score.item())\n"
    )
    assert reads_and_their_others(facts) == [
        ("loss.item()", ["hole.item()"]),
        ("score.item()", []),
    ]


def test_a_host_copy_a_scipy_solver_needs_is_the_algorithm() -> None:
    """DETR's Hungarian matching and braindecode's: the assignment is needed now, for this
    step's loss; another read of the same function is still one."""
    facts = facts_of(
        "import numpy as np\n"
        "import torch\n"
        "from scipy.optimize import linear_sum_assignment\n"
        "def match(outputs, targets, sizes):\n"
        "    C = torch.cdist(outputs, targets).cpu()\n"
        "    indices = [linear_sum_assignment(c[i]) for i, c in enumerate(C.split(sizes, -1))]\n"
        "    cost = np.nan_to_num(torch.cdist(outputs, targets).detach().cpu().numpy())\n"
        "    rows, cols = linear_sum_assignment(cost)\n"
        "    total = outputs.sum().item()\n"
        "    return indices, rows, cols, total\n"
    )
    assert [facts.code(site.node) for site in facts.host_syncs.device_reads] == ["outputs.sum().item()"]


def test_statements_in_a_row_that_read_are_one_site_at_the_first_read() -> None:
    facts = facts_of(
        "import torch\n"
        "def step(out):\n"
        "    out = torch.zeros(3, device='cuda') + out\n"
        "    a = out[0].item(); b = out[1].item()\n"
        "    c = float(out[2])\n"
        "    out = torch.matmul(out, out)\n"
        "    d = out.sum().item()\n"
        "    if out.max() > 1:\n"
        "        pass\n"
        "    e = out.min().item()\n"
    )
    found = [(facts.code(site.node), site.description) for site in facts.host_syncs.device_reads]
    assert found == [
        (
            "out[0].item()",
            "A run of 3 statements with 3 host syncs (2 × `.item()`, `float()` of a tensor)",
        ),
        ("out.sum().item()", "`.item()`"),  # other work ends the run before it
    ]
    # A compound statement ends the run too, but what follows the read waits for nothing new.
    assert [facts.code(other.node) for other in facts.host_syncs.device_reads[1].others] == [
        "out.max() > 1", "out.min().item()"
    ]


def test_reads_in_the_branches_of_an_if_whose_test_reads_are_part_of_the_tests_site() -> None:
    facts = facts_of(
        "import torch\n"
        "def step(y):\n"
        "    y = torch.zeros(3, device='cuda') + y\n"
        "    if torch.min(y) < -1:\n"
        "        print(torch.min(y))\n"
        "        if y.any():\n"
        "            log(y.sum().item())\n"
        "    else:\n"
        "        log(y.max().item())\n"
        "    if y.sum() > 0 and y.mean() > 0:\n"
        "        pass\n"
    )
    sites = facts.host_syncs.device_reads
    found = [
        (facts.code(site.node), site.description, [facts.code(other.node) for other in site.others])
        for site in sites
    ]
    assert found == [
        (
            "torch.min(y) < -1",
            (
                "A test and the branches it guards with 5 host syncs (2 × a tensor used as a "
                "condition, `print` of a tensor, 2 × `.item()`)"
            ),
            ["print(torch.min(y))", "y.any()", "y.sum().item()", "y.max().item()"],
        ),
        (
            "y.sum() > 0",
            "One statement with 2 host syncs (2 × a tensor used as a condition)",
            ["y.mean() > 0"],
        ),
    ]


def test_the_fact_is_computed_once_per_file() -> None:
    facts = facts_of(TRAINING)
    assert facts.host_syncs is facts.host_syncs
    assert facts.host_syncs.device_reads is facts.host_syncs.device_reads


def test_data_dependent_shapes_are_reads_of_data_sized_results() -> None:
    facts = facts_of(TRAINING)
    found = [(facts.code(s.node), s.description) for s in facts.host_syncs.data_dependent_shapes]
    assert found == [
        ("x.nonzero()", "`.nonzero()`"),
        ("torch.unique(x)", "`torch.unique`"),
        ("loss[loss > 0]", "boolean-mask indexing"),
    ]


@pytest.mark.parametrize(
    ("code", "host"),
    [
        ("order", True),  # built without `device=`
        ("drawn", True),  # built on the CPU
        ("placed", False),
        ("np.zeros(3)", True),
        ('"step"', True),
        ("loss", False),
        ("x", False),
    ],
)
def test_host_values(code: str, host: bool) -> None:
    facts = facts_of(TRAINING)
    assert facts.host_syncs.is_host_value(expression_at(facts, code)) is host


def test_a_legacy_variable_keeps_its_tensor_where_it_is() -> None:
    facts = facts_of(
        "import torch\nfrom torch.autograd import Variable\n"
        "x = torch.zeros(3)\nv = Variable(x, requires_grad=True)\nw = Variable(x.cuda())\n"
    )
    syncs = facts.host_syncs
    assert syncs.is_host_value(expression_at(facts, "Variable(x, requires_grad=True)"))
    assert not syncs.is_host_value(expression_at(facts, "Variable(x.cuda())"))


def test_attributes_bound_only_to_host_tensors_are_host_values() -> None:
    facts = facts_of(
        "import torch\n"
        "class Data(torch.nn.Module):\n"
        "    def __init__(self, split, decay):\n"
        "        super().__init__()\n"
        "        self.index = torch.from_numpy(split)\n"
        "        self.index = self.index\n"
        "        self.moved = torch.from_numpy(split)\n"
        "        self.register_buffer('decay', torch.tensor(decay))\n"
        "    def step(self, device):\n"
        "        self.moved = self.moved.to(device)\n"
        "        return self.index.sum(), self.moved.sum(), self.decay.sum()\n"
    )
    syncs = facts.host_syncs
    assert syncs.is_host_value(expression_at(facts, "self.index.sum()"))
    # Rebound to a copy on the device, or a buffer, which moves with its module.
    assert not syncs.is_host_value(expression_at(facts, "self.moved.sum()"))
    assert not syncs.is_host_value(expression_at(facts, "self.decay.sum()"))


def test_a_list_filled_with_host_values_joins_into_a_host_tensor() -> None:
    facts = facts_of(
        "import torch\n"
        "def features(model, loader):\n"
        "    feats = []\n"
        "    raw = []\n"
        "    for x in loader:\n"
        "        out = model(x)\n"
        "        feats.append(out.cpu())\n"
        "        raw.append(out)\n"
        "    return torch.cat(feats), torch.cat(raw)\n"
    )
    syncs = facts.host_syncs
    assert syncs.is_host_value(expression_at(facts, "torch.cat(feats)"))
    assert not syncs.is_host_value(expression_at(facts, "torch.cat(raw)"))


def test_what_rpc_receives_from_another_process_is_a_host_value() -> None:
    facts = facts_of(
        "import torch\n"
        "import torch.distributed.rpc as rpc\n"
        "def gather(workers, fn, device):\n"
        "    rrefs = [rpc.remote(w, fn) for w in workers]\n"
        "    stacked = torch.stack([rref.to_here() for rref in rrefs], 0)\n"
        "    future = rpc.rpc_async(workers[0], fn)\n"
        "    state = future.wait()\n"
        "    result = rpc.rpc_sync(workers[0], fn)\n"
        "    print(state, result, stacked.sum())\n"
        "    moved = stacked.to(device)\n"
        "    work = torch.distributed.all_reduce(moved, async_op=True)\n"
        "    work.wait()\n"
    )
    syncs = facts.host_syncs
    for code in ("stacked", "state", "result", "stacked.sum()"):
        assert syncs.is_host_value(expression_at(facts, code)), code
    assert not syncs.is_host_value(expression_at(facts, "moved"))
    assert not syncs.is_host_value(expression_at(facts, "work.wait()"))


def test_a_name_also_bound_by_a_loop_or_a_parameter_has_no_known_host_value() -> None:
    # `v = v.item()` reads `v` while it is still the tensor the loop (or the caller) bound.
    facts = facts_of(
        "import torch\n"
        "def update(meters, scale, **kwargs):\n"
        "    for k, v in kwargs.items():\n"
        "        v = v.item()\n"
        "        meters[k] = v\n"
        "    scale = scale.item()\n"
        "    total = kwargs['n'].item()\n"
        "    print(total)\n"
    )
    syncs = facts.host_syncs
    assert not syncs.is_host_value(expression_at(facts, "v.item()").func.value)
    assert not syncs.is_host_value(expression_at(facts, "scale.item()").func.value)
    assert syncs.is_host_value(expression_at(facts, "total"))


def test_a_helper_that_converts_only_what_is_a_tensor_reads_what_its_callers_pass() -> None:
    facts = facts_of(
        "import torch\n"
        "def update(meters, **kwargs):\n"
        "    for k, v in kwargs.items():\n"
        "        if isinstance(v, torch.Tensor):\n"
        "            v = v.item()\n"
        "        meters[k] = v\n"
        "def log(meters, loss):\n"
        "    if isinstance(loss, torch.Tensor):\n"
        "        meters['loss'] = loss.item()\n"
        "    if isinstance(meters, torch.Tensor):\n"
        "        meters['loss'] = loss.item()\n"
    )
    receivers = [
        node.func.value
        for node in facts.index.calls
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "item"
    ]
    assert [facts.host_syncs.may_be_device_tensor(r) for r in receivers] == [False, False, True]


def test_a_loader_batch_is_on_the_host_until_it_is_reassigned() -> None:
    facts = facts_of(TRAINING)
    syncs = facts.host_syncs
    assert syncs.is_loader_batch(expression_at(facts, "y"))
    assert not syncs.may_be_device_tensor(expression_at(facts, "y"))
    assert not syncs.is_loader_batch(expression_at(facts, "x"))  # `x = x.cuda()`
    assert syncs.may_be_device_tensor(expression_at(facts, "loss"))
    # A conversion in place keeps it where it is; a move does not.
    facts = facts_of(
        "def predict(model, loader, device):\n"
        "    for x, y, z in loader:\n"
        "        y = y.float().view(-1)\n"
        "        z = z.float().to(device)\n"
        "        model(x, y, z)\n"
    )
    syncs = facts.host_syncs
    assert syncs.is_loader_batch(expression_at(facts, "y"))
    assert not syncs.is_loader_batch(expression_at(facts, "z"))


@pytest.mark.parametrize(
    ("call", "waits"),
    [
        ("torch.cuda.synchronize()", True),
        ("start.elapsed_time(end)", True),
        ("dist.barrier()", True),
        ("accelerator.wait_for_everyone()", True),
        ("sync_all()", True),
        ("x.item()", True),
        ("model(x)", False),
        ("x.to(device)", False),
    ],
)
def test_calls_that_always_wait(call: str, waits: bool) -> None:
    expression = cst.parse_expression(call)
    assert isinstance(expression, cst.Call)
    assert HostSyncs.always_waits(expression) is waits


def test_a_name_rebound_to_a_python_number_is_not_definitely_a_tensor() -> None:
    facts = facts_of(
        "import torch\n"
        "def f(x):\n"
        "    loss = torch.ones(3).sum()\n"
        "    if x:\n"
        "        loss = loss.item()\n"
        "    total = torch.ones(3).sum()\n"
        "    float(loss)\n"
        "    float(total)\n"
        "    number = loss.item()\n"
        "    number = torch.ones(3).sum()\n"
        "    number = number.item()\n"
        "    float(number)\n"
    )
    loss = expression_at(facts, "loss")
    assert facts.tensors.is_tensor(loss)
    assert not facts.tensors.is_definitely_tensor(loss)
    assert facts.tensors.is_definitely_tensor(expression_at(facts, "total"))
    # The binding that reaches the use decides, where the code shows it.
    assert not facts.tensors.is_tensor(expression_at(facts, "number"))


@pytest.mark.parametrize(
    ("target", "names"),
    [
        ("x", {"x"}),
        ("(i, (x, y))", {"i", "x", "y"}),
        ("[a, *rest]", {"a", "rest"}),
        ("self.x", set()),
        ("batch[0]", set()),
    ],
)
def test_target_names(target: str, names: set[str]) -> None:
    assert target_names(cst.parse_expression(target)) == names


@pytest.mark.parametrize(
    ("expression", "root"),
    [("batch", "batch"), ("batch[0]", "batch"), ("batch.x[0]", "batch"), ("f(x).y", None)],
)
def test_root_name(expression: str, root: str | None) -> None:
    assert root_name(cst.parse_expression(expression)) == root


def test_loop_target_names() -> None:
    facts = facts_of(
        "for i, (x, y) in enumerate(loader):\n"
        "    pass\n"
        "while True:\n"
        "    pass\n"
    )
    for_loop, while_loop = facts.loops.all
    assert for_loop.target_names == {"i", "x", "y"}
    assert while_loop.target_names == set()


def test_functions_that_call_eval() -> None:
    facts = facts_of(
        "def evaluate(model):\n"
        "    model.eval()\n"
        "def train(model):\n"
        "    model.train()\n"
        "    def inner():\n"
        "        model.eval()\n"
        "def other(model):\n"
        "    model.eval(True)\n"
    )
    evaluate, train, inner, other = facts.index.functions
    assert facts.loops.calls_eval(evaluate)
    assert facts.loops.calls_eval(inner)
    assert not facts.loops.calls_eval(train)  # only its nested def does
    assert not facts.loops.calls_eval(other)  # `eval(True)` is not `nn.Module.eval()`
    assert not facts.loops.calls_eval(None)


def test_one_statement_with_several_reads_is_one_site_that_counts_them() -> None:
    facts = facts_of(
        "import torch\n"
        "def step(loss, out, acc):\n"
        "    loss = torch.zeros(()) + loss\n"
        "    out = torch.zeros(3) + out\n"
        "    stats = {'loss': loss.item(), 'max': out.max().item(), 'acc': float(out.sum())}\n"
    )
    [site] = facts.host_syncs.device_reads
    assert site.description == (
        "One statement with 3 host syncs (2 × `.item()`, `float()` of a tensor)"
    )


NEXT_STEP_COPIES = """
import torch
from torch.utils.data import DataLoader

def train(model, dataset, optimizer, pinned):
    for x, y in DataLoader(dataset, num_workers=4):
        x = x.cuda()
        y = y.to("cuda", non_blocking=True)
        model(x, y).backward()
        optimizer.step()
    for x, y in DataLoader(dataset, num_workers=4):
        loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
        loss.backward()
        optimizer.step()
    for x, y in DataLoader(dataset, num_workers=4):
        loss = model(x.cuda(non_blocking=True), y)
        loss.backward()
        optimizer.step()
        y = y.cuda()
"""


def first_wait(facts, loop, node):
    """The first wait `StepWaits.next_after` finds, or None."""
    waits = facts.waits.next_after(loop, node)
    return waits[0] if waits else None


def test_the_next_wait_is_the_first_upload_the_host_reaches_before_an_update() -> None:
    facts = facts_of(NEXT_STEP_COPIES)
    blocking, asynchronous, copied_late = facts.loops.training_loops

    def last_step(loop):
        return loop.step_calls[-1]

    # After the step, the next iteration starts with a blocking copy of the batch.
    copy = first_wait(facts, blocking, last_step(blocking))
    assert (facts.code(copy.node), copy.kind) == ("x.cuda()", "copy")
    assert first_wait(facts, asynchronous, last_step(asynchronous)) is None
    # A copy later in the same iteration comes first; before it, the backward does.
    assert facts.code(first_wait(facts, copied_late, last_step(copied_late)).node) == "y.cuda()"
    forward = next(call for call in copied_late.own_calls if facts.code(call.func) == "model")
    assert first_wait(facts, copied_late, forward) is None


def test_an_optimizer_step_does_not_separate_a_read_from_the_next_blocking_copy() -> None:
    facts = facts_of(
        "import torch\n"
        "def train(model, loader, optimizer):\n"
        "    for inputs in loader:\n"
        "        inputs = inputs.cuda()\n"
        "        loss = model(inputs)\n"
        "        loss.backward()\n"
        "        total = loss.item()\n"
        "        optimizer.step()\n"
    )
    (loop,) = facts.loops.training_loops
    read = next(call for call in facts.index.calls if facts.code(call) == "loss.item()")
    # OpenPrompt's tutorials: the copy waits for the backward the read waited for, and for
    # the optimizer step queued between them; a further backward would separate them.
    assert facts.code(first_wait(facts, loop, read).node) == "inputs.cuda()"
    assert first_wait(facts, loop, loop.node.body.body[1]) is None


def test_no_copy_waits_with_a_read_when_the_host_prepares_data_before_it() -> None:
    facts = facts_of(
        "import torch\n"
        "def train(model, loader, optimizer, tokenizer, regions):\n"
        "    for image, text in loader:\n"
        "        ids = tokenizer(text, return_tensors='pt').to('cuda')\n"
        "        model(image.cuda(non_blocking=True), ids).backward()\n"
        "        optimizer.step()\n"
        "    for image, text in loader:\n"
        "        region = next(regions)\n"
        "        region = [t.to('cuda') for t in region]\n"
        "        model(region).backward()\n"
        "        optimizer.step()\n"
    )
    tokenized, regional = facts.loops.training_loops
    # Without the read, the tokenizer would run while the device finishes the step.
    assert first_wait(facts, tokenized, tokenized.step_calls[0]) is None
    assert facts.code(first_wait(facts, regional, regional.step_calls[0]).node) == "t.to('cuda')"


def test_a_lambda_mapped_over_the_batch_is_the_next_steps_blocking_copy() -> None:
    facts = facts_of(
        "import torch\n"
        "def train(model, loader, optimizer, opt):\n"
        "    for batch in loader:\n"
        "        x, y = map(lambda t: t.float().to(opt.device), batch)\n"
        "        model(x, y).backward()\n"
        "        optimizer.step()\n"
        "    for batch in loader:\n"
        "        x, y = map(lambda t: t.float().to(opt.device, non_blocking=True), batch)\n"
        "        model(x, y).backward()\n"
        "        optimizer.step()\n"
    )
    blocking, asynchronous = facts.loops.training_loops
    copy = first_wait(facts, blocking, blocking.step_calls[0])
    assert (facts.code(copy.node), copy.kind) == ("t.float().to(opt.device)", "copy")
    assert first_wait(facts, asynchronous, asynchronous.step_calls[0]) is None


def test_a_copy_a_setting_may_skip_or_a_copy_of_a_constant_waits_with_no_read() -> None:
    facts = facts_of(
        "import torch\n"
        "from timm.data.constants import IMAGENET_DEFAULT_MEAN\n"
        "STD = (0.229, 0.224, 0.225)\n"
        "def train(model, loader, optimizer, args):\n"
        "    for x, y in loader:\n"
        "        if not args.prefetcher:\n"
        "            x = x.cuda()\n"
        "        model(x, y).backward()\n"
        "        optimizer.step()\n"
        "    for x, y in loader:\n"
        "        mean = torch.as_tensor(IMAGENET_DEFAULT_MEAN).to('cuda')\n"
        "        std = torch.as_tensor(STD).to('cuda')\n"
        "        model((x.cuda(non_blocking=True) - mean) / std).backward()\n"
        "        optimizer.step()\n"
        "    for x, y in loader:\n"
        "        if torch.cuda.is_available():\n"
        "            x = x.cuda()\n"
        "        model(x, y).backward()\n"
        "        optimizer.step()\n"
    )
    switched, normalized, on_gpu = facts.loops.training_loops
    # `--no-prefetcher` is off by default: timm's prefetcher copies without blocking.
    assert first_wait(facts, switched, switched.step_calls[0]) is None
    # A few constant bytes, not the batch.
    assert first_wait(facts, normalized, normalized.step_calls[0]) is None
    # A run on the GPU passes a test for it.
    assert facts.code(first_wait(facts, on_gpu, on_gpu.step_calls[0]).node) == "x.cuda()"


def test_a_barrier_the_step_reaches_after_the_read_waits_with_it() -> None:
    facts = facts_of(
        "import torch\n"
        "import torch.distributed as dist\n"
        "from utils.dist import synchronize\n"
        "def train(model, loader, optimizer, accelerator, args):\n"
        "    for x, y in loader:\n"
        "        model(x.cuda(non_blocking=True), y).backward()\n"
        "        optimizer.step()\n"
        "        dist.barrier()\n"
        "    for x, y in loader:\n"
        "        model(x.cuda(non_blocking=True), y).backward()\n"
        "        optimizer.step()\n"
        "        synchronize()\n"
        "    for x, y in loader:\n"
        "        model(x.cuda(non_blocking=True), y).backward()\n"
        "        optimizer.step()\n"
        "        torch.cuda.synchronize()\n"
        "        if args.sync_ranks:\n"
        "            accelerator.wait_for_everyone()\n"
        "    for step, (x, y) in enumerate(loader):\n"
        "        model(x.cuda(non_blocking=True), y).backward()\n"
        "        optimizer.step()\n"
        "        if step % 100 == 0:\n"
        "            evaluate(model)\n"
        "            dist.barrier()\n"
    )
    barrier, helper, explicit, periodic = facts.loops.training_loops
    wait = first_wait(facts, barrier, barrier.step_calls[0])
    assert (facts.code(wait.node), wait.kind) == ("dist.barrier()", "barrier")
    assert facts.code(first_wait(facts, helper, helper.step_calls[0]).node) == "synchronize()"
    # An explicit synchronize is a finding of its own; a barrier a setting may skip waits
    # on no usual step, and one after a periodic evaluation on few steps.
    assert first_wait(facts, explicit, explicit.step_calls[0]) is None
    assert first_wait(facts, periodic, periodic.step_calls[0]) is None


def test_accelerate_copies_blocking_unless_its_dataloader_configuration_is_set() -> None:
    prepared = (
        "import accelerate\n"
        "def train():\n"
        "    for batch in loader:\n"
        "        model(batch).backward()\n"
        "        optimizer.step()\n"
        "accelerator = accelerate.Accelerator({config})\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
    )
    facts = facts_of(prepared.format(config=""))
    [loop] = facts.loops.training_loops
    copy = first_wait(facts, loop, loop.step_calls[0])
    assert (facts.code(copy.node), copy.kind) == ("loader", "accelerate")
    configured = facts_of(prepared.format(config="dataloader_config=config"))
    [loop] = configured.loops.training_loops
    assert first_wait(configured, loop, loop.step_calls[0]) is None


def test_a_read_at_the_end_of_the_step_names_the_next_steps_blocking_copy() -> None:
    source = (
        "import torch\n"
        "def train(model, loader, optimizer):\n"
        "    for x, y in loader:\n"
        "        x, y = x.cuda(), y.cuda()\n"
        "        loss = model(x, y)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        print(loss.item())\n"
    )
    [read] = lint_text(source, "train.py", LintSettings(rules=(BY_CODE["TPL201"],)))
    assert read.message == (
        "`.item()` on every training step makes the host wait for the GPU; accumulate on the"
        " device with `.detach()` and read it every N steps, and copy the batch asynchronously"
        " (`pin_memory=True` on the loader, `non_blocking=True` on the copy): removing one of"
        " the two waits alone gains little"
    )
    assert read.related == (
        Related(
            "train.py", Location(4, 16), "the next step's blocking batch copy waits for the GPU here too"
        ),
    )


def test_a_read_before_the_next_upload_of_a_host_factory_names_that_copy() -> None:
    source = (
        "import torch\n"
        "def train(model, loader, optimizer):\n"
        "    for x, y in loader:\n"
        "        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)\n"
        "        loss = model(x, y)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        print(loss.item())\n"
        "        restored = torch.zeros(*x.shape).to(x.device)\n"
    )
    read = next(
        finding
        for finding in lint_text(source, "train.py", LintSettings(rules=(BY_CODE["TPL201"],)))
        if finding.location == Location(8, 15)
    )
    assert read.message.endswith(
        ", and build the tensor copied next on the device (`device=`): removing one of the"
        " two waits alone gains little"
    )
    assert read.related == (
        Related(
            "train.py", Location(9, 20), "the next blocking copy of a tensor made on the host waits for the GPU here too"
        ),
    )


def test_a_read_before_the_steps_barrier_names_the_barrier() -> None:
    source = (
        "import torch\n"
        "import torch.distributed as dist\n"
        "def train(model, loader, optimizer, writer):\n"
        "    for step, (x, y) in enumerate(loader):\n"
        "        loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        writer.add_scalar('loss', loss.item(), step)\n"
        "        dist.barrier()\n"
    )
    [read] = lint_text(source, "train.py", LintSettings(rules=(BY_CODE["TPL201"],)))
    assert read.message == (
        "`.item()` on every training step makes the host wait for the GPU; accumulate on the"
        " device with `.detach()` and read it every N steps, and drop the barrier the step"
        " reaches next (the gradients' all-reduce already keeps the ranks in step): removing"
        " one of the two waits alone gains little"
    )
    assert read.related == (Related("train.py", Location(9, 9), "this barrier waits for the GPU here too"),)


def test_a_read_before_the_steps_barrier_and_the_next_blocking_copy_names_both() -> None:
    source = (
        "import torch\n"
        "from utils.dist import synchronize\n"
        "def train(model, loader, optimizer):\n"
        "    for x, y in loader:\n"
        "        loss = model(x.cuda(), y.cuda())\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        print(loss.item())\n"
        "        synchronize()\n"
    )
    [read] = lint_text(source, "train.py", LintSettings(rules=(BY_CODE["TPL201"],)))
    assert read.message.endswith(
        ", and drop the barrier the step reaches next (the gradients' all-reduce already keeps"
        " the ranks in step), and copy the batch asynchronously (`pin_memory=True` on the"
        " loader, `non_blocking=True` on the copy): removing one of the three waits alone"
        " gains little"
    )
    assert [(item.location, item.message) for item in read.related] == [
        (Location(9, 9), "this barrier waits for the GPU here too"),
        (Location(5, 22), "the next step's blocking batch copy waits for the GPU here too"),
    ]


def test_an_optimizer_step_that_evaluates_its_closure_decides_on_the_host() -> None:
    facts = facts_of(
        "import torch\n"
        "class CopiedLBFGS(torch.optim.Optimizer):\n"
        "    def step(self, closure):\n"
        "        loss = float(closure())\n"
        "        while True:\n"
        "            if self.direction().abs().max() <= 1e-9:\n"
        "                break\n"
        "        return loss\n"
        "class Lamb(torch.optim.Optimizer):\n"
        "    def step(self, closure=None):\n"
        "        ratio = self.trust().item()\n"
        "        return ratio\n"
    )
    line_search, trust = (
        next(node for node in facts.index.calls if facts.code(node) == code)
        for code in ("self.direction().abs().max()", "self.trust().item()")
    )
    # pykan's copy of torch.optim.LBFGS: the tolerance test decides how many evaluations
    # the step makes. A step that never calls its closure reads for nothing of the kind.
    assert facts.waits.anyway(line_search)
    assert not facts.waits.anyway(trust)
