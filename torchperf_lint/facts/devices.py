"""Whether a module uses CUDA (RULES.md, "The module uses CUDA")."""

from __future__ import annotations

import libcst as cst

from torchperf_lint.facts.arguments import literal_value
from torchperf_lint.facts.index import SyntaxIndex
from torchperf_lint.facts.names import NameResolver, dotted_name, last_identifier
from torchperf_lint.facts.scopes import Scopes

_DEVICE_KEYWORDS = frozenset({"device", "device_type"})
_DEVICE_CALLS = frozenset({
    "torch.device", "torch.amp.autocast", "torch.amp.GradScaler", "torch.cuda.device",
})


def is_cuda_literal(node: cst.BaseExpression) -> bool:
    """A string literal naming a CUDA device: `"cuda"`, `'cuda:0'`."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))
    return False


def mentions_cuda_device(node: cst.BaseExpression, scopes: Scopes, depth: int = 0) -> bool:
    """A CUDA device name (`_names_cuda_device`), a conditional with one in a branch, a call
    given one first (`torch.device("cuda:" + str(args.gpu))`), or a name bound to any of
    these."""
    if _names_cuda_device(node):
        return True
    if isinstance(node, cst.IfExp):
        return any(
            _names_cuda_device(branch)
            or depth < 3 and mentions_cuda_device(branch, scopes, depth + 1)
            for branch in (node.body, node.orelse)
        )
    if depth >= 3:
        return False
    if isinstance(node, cst.Call) and node.args:
        return mentions_cuda_device(node.args[0].value, scopes, depth + 1)
    if isinstance(node, (cst.Name, cst.Attribute)):
        return any(mentions_cuda_device(v, scopes, depth + 1) for v in scopes.bound_values(node))
    return False


def _names_cuda_device(node: cst.BaseExpression) -> bool:
    """A string that names a CUDA device, literal or built at run time from a literal that
    starts with one: `"cuda:0"`, `f"cuda:{rank}"`, `"cuda:" + str(args.gpu)`, `"cuda:%d" %
    rank`, `"cuda:{}".format(rank)`."""
    if is_cuda_literal(node):
        return True
    if isinstance(node, cst.FormattedString) and node.parts:
        first = node.parts[0]
        return isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda")
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Modulo)):
        return _names_cuda_device(node.left)
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
    ):
        return _names_cuda_device(node.func.value)
    return False


# APIs that only do anything on a CUDA device: a module that calls them runs there.
_CUDA_ONLY_CALLS = frozenset({
    "torch.cuda.synchronize", "torch.cuda.amp.autocast", "torch.cuda.amp.GradScaler",
    "torch.cuda.Event", "torch.cuda.Stream", "torch.cuda.set_device", "torch.cuda.empty_cache",
})


# Frameworks that place the model and the batches on the GPU themselves: a program built on
# one of them trains on CUDA whenever a GPU is there, with no "cuda" in its own text.
_GPU_FRAMEWORK_CALLS = frozenset({"accelerate.Accelerator"})
# Trainers whose `accelerator=` (or legacy `gpus=`) argument asks for a GPU.
_ACCELERATOR_ARGUMENT_CALLS = ("lightning", "pytorch_lightning")
_GPU_ACCELERATORS = frozenset({"gpu", "cuda", "auto"})
_DISTRIBUTED_DATA_PARALLEL = "torch.nn.parallel.DistributedDataParallel"


def _framework_uses_cuda(call: cst.Call, qualified: str | None) -> bool:
    """`Accelerator()`, Lightning's `Trainer(...)` and `Fabric(...)` unless told to use another
    accelerator (`accelerator="cpu"`), `DistributedDataParallel(model, device_ids=[rank])` and
    `init_process_group(backend="nccl")` (NCCL only runs on CUDA devices)."""
    if qualified is None:
        return False
    if qualified in _GPU_FRAMEWORK_CALLS:
        return True
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if qualified.startswith(_ACCELERATOR_ARGUMENT_CALLS) and qualified.rsplit(".", 1)[-1] in (
        "Trainer", "Fabric"
    ):
        # Without an accelerator (or with "auto", or one chosen at run time) Lightning trains
        # on the GPU whenever there is one: only a named non-GPU accelerator says otherwise.
        accelerator = keywords.get("accelerator")
        if isinstance(accelerator, cst.SimpleString):
            return accelerator.evaluated_value in _GPU_ACCELERATORS
        return True
    if qualified == _DISTRIBUTED_DATA_PARALLEL:
        return "device_ids" in keywords
    if qualified == "torch.distributed.init_process_group":
        backend = keywords.get("backend")
        if backend is None and call.args and call.args[0].keyword is None:
            backend = call.args[0].value
        return isinstance(backend, cst.SimpleString) and backend.evaluated_value == "nccl"
    return False


def _cuda_default_option(call: cst.Call, qualified: str | None) -> bool:
    """`parser.add_argument("--device", default="cuda")`: the script runs on CUDA unless told
    otherwise."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"):
        return False
    flags = [
        arg.value.evaluated_value
        for arg in call.args
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString)
    ]
    if not any(isinstance(flag, str) and "device" in flag for flag in flags):
        return False
    return any(
        arg.keyword is not None and arg.keyword.value == "default" and is_cuda_literal(arg.value)
        for arg in call.args
    )


def module_uses_cuda(index: SyntaxIndex, scopes: Scopes, names: NameResolver) -> bool:
    """Any `.cuda()`, a CUDA device passed as a device, a `.to()` target or a device type, a
    call of a CUDA-only API (`torch.cuda.synchronize()`, `torch.cuda.amp.autocast()`), a
    framework that puts the model on the GPU (`Accelerator()`, `Trainer(accelerator="gpu")`,
    DDP with `device_ids=`, the NCCL backend), or a `--device` option defaulting to CUDA."""
    for call in index.calls:
        func = call.func
        qualified = names.call_name(call)
        if qualified in _CUDA_ONLY_CALLS:
            return True
        if _framework_uses_cuda(call, qualified) or _cuda_default_option(call, qualified):
            return True
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and not _is_namespace(
            func.value, names
        ):
            return True
        for position, arg in enumerate(call.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            device_position = position == 0 and keyword is None and (
                (isinstance(func, cst.Attribute) and func.attr.value == "to")
                or names.call_name(call) in _DEVICE_CALLS
            )
            if (keyword in _DEVICE_KEYWORDS or device_position) and mentions_cuda_device(
                arg.value, scopes
            ):
                return True
    return False


def _is_namespace(node: cst.BaseExpression, names: NameResolver) -> bool:
    """`torch.cuda` is a module, not a tensor: `torch.cuda()` does not exist anyway."""
    return names.qualified_name(node) == "torch"


def creates_cuda_tensor(node: cst.BaseExpression, scopes: Scopes, depth: int = 0) -> bool:
    """`x.cuda()`, `x.to("cuda")`, `torch.ones(3, device=device)` with a CUDA device, or a
    name bound to one of these (conditional devices count: they may be CUDA)."""
    if depth > 3:
        return False
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            return True
        for position, arg in enumerate(node.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            is_to_target = (
                position == 0 and keyword is None
                and isinstance(func, cst.Attribute) and func.attr.value == "to"
            )
            if (keyword == "device" or is_to_target) and mentions_cuda_device(arg.value, scopes):
                return True
        return any(creates_cuda_tensor(arg.value, scopes, depth + 1) for arg in node.args)
    if isinstance(node, (cst.Name, cst.Attribute)):
        return any(creates_cuda_tensor(v, scopes, depth + 1) for v in scopes.bound_values(node))
    return False


def is_dtype(value: cst.BaseExpression, names: NameResolver) -> bool:
    """`torch.float16` and the other `torch.*` constants, or a name that says it is a dtype
    (`dtype`, `x.dtype`, `self.compute_dtype`): a `.to()` argument that converts, not moves."""
    qualified = names.qualified_name(value) or ""
    if qualified.startswith("torch.") and qualified != "torch.device":
        return True
    identifier = (last_identifier(value) or "").lower()
    return identifier == "dtype" or identifier.endswith("_dtype")


def is_cpu_device(value: cst.BaseExpression, names: NameResolver, scopes: Scopes, depth: int = 0) -> bool:
    """`"cpu"`, `torch.device("cpu")`, or a name bound only to those."""
    if literal_value(value) == "cpu":
        return True
    if isinstance(value, cst.Call):
        return (
            names.call_name(value) == "torch.device"
            and bool(value.args)
            and literal_value(value.args[0].value) == "cpu"
        )
    if isinstance(value, (cst.Name, cst.Attribute)) and depth < 3:
        bound = scopes.bound_values(value)
        return bool(bound) and all(is_cpu_device(v, names, scopes, depth + 1) for v in bound)
    return False


def is_accelerator_target(value: cst.BaseExpression, names: NameResolver, scopes: Scopes) -> bool:
    """A `.to()` argument that moves to an accelerator: a CUDA literal, a device index,
    `torch.device(...)` of anything but the CPU, or a name that is neither a dtype nor the
    CPU (`device`, `args.device`, `rank`)."""
    if _names_cuda_device(value):
        return True
    literal = literal_value(value)
    if isinstance(literal, str):
        return False  # `"cpu"`, `"mps"`
    if isinstance(literal, int) and not isinstance(literal, bool):
        return True
    if is_dtype(value, names) or is_cpu_device(value, names, scopes):
        return False
    if isinstance(value, cst.Call):
        return names.call_name(value) == "torch.device" and bool(value.args)
    if isinstance(value, (cst.Name, cst.Attribute)):
        return "cpu" not in (dotted_name(value) or "").lower()
    return False
