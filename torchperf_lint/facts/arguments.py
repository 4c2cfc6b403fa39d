"""Match a call's arguments against a PyTorch signature, by keyword or by position.

`DataLoader(ds, 10, False, None, None, 0)` passes `num_workers=0`. A call that unpacks
`**kwargs` may carry any keyword and one that unpacks `*args` any position: for those the
answer is `UNKNOWN`, and rules that fire on a missing argument stay silent.
"""

from __future__ import annotations

import enum
from typing import Union

import libcst as cst


class Unknown(enum.Enum):
    """The argument may or may not be passed: the call unpacks `*args` or `**kwargs`."""

    UNKNOWN = "unknown"


UNKNOWN = Unknown.UNKNOWN
BoundArgument = Union[cst.Arg, None, Unknown]

# Positional parameter names, in order, of the PyTorch callables the rules inspect.
SIGNATURES: dict[str, tuple[str, ...]] = {
    "torch.utils.data.DataLoader": (
        "dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers",
        "collate_fn", "pin_memory", "drop_last", "timeout", "worker_init_fn",
        "multiprocessing_context", "generator",
    ),
    "torch.optim.Adam": ("params", "lr", "betas", "eps", "weight_decay", "amsgrad"),
    "torch.optim.AdamW": ("params", "lr", "betas", "eps", "weight_decay", "amsgrad"),
    "torch.optim.SGD": ("params", "lr", "momentum", "dampening", "weight_decay", "nesterov"),
    "Tensor.to": ("device", "dtype", "non_blocking", "copy"),
    "Tensor.cuda": ("device", "non_blocking"),
    "zero_grad": ("set_to_none",),
    "backward": ("gradient", "retain_graph", "create_graph", "inputs"),
    "torch.nn.Linear": ("in_features", "out_features", "bias"),
    "torch.nn.Conv1d": (
        "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
        "groups", "bias",
    ),
    "torch.nn.Conv2d": (
        "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
        "groups", "bias",
    ),
    "torch.nn.Conv3d": (
        "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
        "groups", "bias",
    ),
    **{
        f"torch.nn.ConvTranspose{dims}d": (
            "in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding",
            "groups", "bias", "dilation",
        )
        for dims in (1, 2, 3)
    },
    **{
        f"torch.nn.LazyConv{dims}d": (
            "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias",
        )
        for dims in (1, 2, 3)
    },
    **{
        f"torch.nn.LazyConvTranspose{dims}d": (
            "out_channels", "kernel_size", "stride", "padding", "output_padding", "groups", "bias",
            "dilation",
        )
        for dims in (1, 2, 3)
    },
    "torch.nn.LazyLinear": ("out_features", "bias"),
    "torch.amp.autocast": ("device_type", "dtype", "enabled", "cache_enabled"),
    "torch.cuda.amp.autocast": ("enabled", "dtype", "cache_enabled"),
    "torch.cpu.amp.autocast": ("enabled", "dtype", "cache_enabled"),
    "torch.amp.GradScaler": (
        "device", "init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled",
    ),
    "torch.cuda.amp.GradScaler": (
        "init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled",
    ),
    "torch.cpu.amp.GradScaler": (
        "init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled",
    ),
    "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler": (
        "device", "init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled",
        "process_group",
    ),
}


def positional_parameters(function: cst.FunctionDef) -> tuple[str, ...]:
    """The names a call may pass positionally, without a method's `self` or `cls`."""
    params = function.params
    names = tuple(param.name.value for param in (*params.posonly_params, *params.params))
    in_class = names and names[0] in ("self", "cls")
    return names[1:] if in_class else names


def parameter_named(function: cst.FunctionDef, name: str) -> cst.Param | None:
    """The parameter `name` of `function` (not `*args` or `**kwargs`), or None."""
    params = function.params
    return next(
        (param for param in (*params.posonly_params, *params.params, *params.kwonly_params) if param.name.value == name),
        None,
    )


def unpacks(call: cst.Call, star: str) -> bool:
    """Whether `call` has a `*args` (`star="*"`) or `**kwargs` (`star="**"`) argument."""
    return any(arg.star == star for arg in call.args)


def bound_argument(call: cst.Call, name: str, signature: tuple[str, ...] = ()) -> BoundArgument:
    """The argument passed for parameter `name`, None when it is certainly absent."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    if name in signature:
        position = signature.index(name)
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        if unpacks(call, "*"):
            return UNKNOWN
        if position < len(positional):
            return positional[position]
    if unpacks(call, "**"):
        return UNKNOWN
    return None


def literal_value(node: cst.BaseExpression) -> object:
    """The Python value of a literal (`0`, `True`, `None`, `"cuda"`, `-1.5`), else UNKNOWN."""
    kind = type(node)  # asked of most values the analyses meet: by type, as in `index`
    if kind is cst.Integer:
        return int(node.value.replace("_", ""), 0)
    if kind is cst.Float:
        return float(node.value.replace("_", ""))
    if kind is cst.Name and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if kind is cst.SimpleString:
        return node.evaluated_value
    if kind is cst.UnaryOperation and isinstance(node.operator, cst.Minus):
        inner = literal_value(node.expression)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    return UNKNOWN


def argument_value(call: cst.Call, name: str, signature: tuple[str, ...] = ()) -> object:
    """The literal value passed for `name`; None-the-absence is returned as `MISSING`."""
    arg = bound_argument(call, name, signature)
    if arg is None:
        return MISSING
    if arg is UNKNOWN:
        return UNKNOWN
    return literal_value(arg.value)


class Missing(enum.Enum):
    """The argument is certainly not passed."""

    MISSING = "missing"


MISSING = Missing.MISSING
