"""One file's summary: what the rest of the program needs to know of it, from its own syntax.

A summary depends only on the file's text (never on other files or on the program), so it is
computed once per content and cached with the file's findings. It names functions and classes
by qualified name (`Trainer.step`, `main.closure`) and calls by their ordinal among the
module's calls (rows are found later, only for the calls a finding's path goes through).

A reference (`Ref`) is how the file names what a call runs, before the linker resolves it:
    `def:train_step`           a function or class defined in this file (a dotted chain may
                               follow: `def:Trainer.step`; `cls(...)` in a class method names
                               its class), or one of its `*` imports gives
    `import:utils.log`         an imported name and attributes (`import:.engine.train`: relative)
    `method:Trainer:step`      `self.step(...)` inside class `Trainer`
    `super:Trainer:step`       `super().step(...)` inside class `Trainer`
    `forward:<ref>`            calling an instance of a class: `model(x)` after `model = Net()` (its
                               `forward`, or else its `__call__`)
    `returned:<ref>`           calling what a project function returned: `train(x, y)` after
                               `train = make_train_fn(G, D)`, whose `return train` hands
                               back a nested function (also `forward:<ref>` when the
                               factory's name is capitalised, `GAN_training_function`)
    `instance:update:<ref>`    a method of an instance: `logger.update(...)` after
                               `logger = MetricLogger()`, `self.trainer.optimize()` after
                               `self.trainer = MixedPrecisionTrainer(...)`, or under
                               `if isinstance(posterior, Gaussian):`
    `argument:update:train:writer` a method of what the callers of function `train` pass as
                               its parameter `writer`: `writer.update(...)` in `train`, also
                               through an attribute of `self` that holds it
                               (`self.writer.update(...)` after `self.writer = writer` in
                               `__init__`: `argument:update:Trainer.__init__:writer`)
    `argument:__call__:gpu_timer:closure` calling what the callers pass: `closure()` in
                               `def gpu_timer(closure)` (a function passed, or an object whose
                               `forward` or `__call__` runs), `self.train_loss(...)` after
                               `self.train_loss = train_loss` in `Trainer.__init__`

The data classes live here, free of LibCST (a cached run reads summaries without parsing);
`program.summarize` computes them from a parsed file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

Ref = str
# A value passed or returned, as far as the program needs it: a DataLoader built here
# (["loader", pins_memory, has_custom_collate]), the result of calling a reference
# (["call", ref]) or, for a name bound on different paths, of one of several
# (["calls", [ref, ...]]), a parameter passed through (["param", name]), a tensor that may
# live on the device (["tensor"]), a counter of a loop around the call (["counter"]:
# `log(loss, iteration)` in `while iteration < n: ...; iteration += 1`) or a flag true on its
# first iteration only (["first"]: `Counters.first_flags`), a project function passed
# uncalled (["function", ref]: `gpu_timer(train_step)`, or `return train` of a closure
# factory), a switch turned off (["off"]:
# `False` or `None`, or a name bound to nothing else), a Hugging Face dataset
# preprocessed ahead of training (["rows"]: `load_dataset(...).map(tokenize)`), an object
# read back whole from a file (["loaded"]: `torch.load(path)`, a dataset saved after
# preprocessing), or a tuple of values (["tuple", [value or None, ...]]: `return loader,
# dataset`). A switch passed on is a parameter of the caller's (["param", name]), what its
# `**kwargs` carry (["kwargs"], as the key "**": `super().__init__(depth=50, **kwargs)`), or
# the caller's object's switch that its `__init__` stores from its parameter `name`
# (["switch", name]: `with_cp=self.with_cp`).
Value = list


@dataclass
class CallSite:
    """One call of something the file does not define as PyTorch's: a candidate project call."""

    callee: Ref
    ordinal: int  # Position among the module's calls (`SyntaxIndex.calls`), in source order.
    loop: int  # Ordinal of the nearest loop in the same function (`SyntaxIndex.loops`), or -1.
    # Not on every iteration of `loop` (or of the function, outside loops): under a periodic
    # or counter guard, in a lazy initialisation, or on a path a usual step does not take (an
    # error path, a debugging mode, a branch only objects built with a switch away from its
    # default run: `Steps.off_the_usual_path`).
    sparse: bool = False
    no_grad: bool = False  # Under `torch.no_grad()` / `inference_mode()` in its own function.
    # In a branch that runs only when not training (`if stage != Stage.TRAIN:`).
    evaluation_only: bool = False
    # Arguments the program may follow (loaders, factory results, pass-through parameters):
    # by position ("0", "1", ...) or keyword.
    arguments: dict[str, Value] = field(default_factory=dict)
    # What the call passes: how many arguments by position (-1: it unpacks `*args`), and
    # the keywords it names ("**" when it unpacks `**kwargs`).
    positional: int = 0
    keywords: list[str] = field(default_factory=list)
    # Parameters of its own function, None or False by default or with no default, that its
    # caller must pass, and not as None or False, for it to run (`if normals is not None:
    # gather(normals)`).
    needs: list[str] = field(default_factory=list)
    # Parameters of its own function, `True` by default, that its caller must not pass as
    # None or False for it to run (the `else` of `if not infer: return ...`, with `infer=True`).
    needs_left_on: list[str] = field(default_factory=list)
    # The calls whose result decides whether it runs (`Guards.predicate_guards`): when one is
    # a project function returning a periodic test (`if step_check(step, n):`), it is sparse.
    predicates: list[str] = field(default_factory=list)
    # Parameters of its own function that a guard of it tests as a counter or first-iteration
    # flag, with what they must receive (`[["iteration", "counter"]]` for `if iteration ==
    # last + k:`, `Guards.counter_parameter_tests`): when the callers pass one, it is sparse.
    counter_guards: list[list[str]] = field(default_factory=list)
    # The tests of the run's settings it must pass to run, in its own function
    # (`Guards.setting_tests`): when no shipped run passes one, it is sparse.
    settings: list[list] = field(default_factory=list)


@dataclass
class LoopSummary:
    ordinal: int
    trains: bool  # Calls backward or an optimizer step in its own body.
    evaluates: bool  # An evaluation loop (no backward or step; runs a model).


@dataclass
class FunctionSummary:
    qualname: str  # "" for module-level code.
    owner: str | None = None  # The class whose method this is.
    parameters: list[str] = field(default_factory=list)
    # Parameters whose default is `None` or `False`: a caller that leaves one out turns it off.
    off_by_default: list[str] = field(default_factory=list)
    decorators: list[Ref] = field(default_factory=list)
    grad_off: bool = False  # Decorated with `@torch.no_grad()` / `@torch.inference_mode()`.
    # Decorated with `@functools.lru_cache(...)` or `@cache`: its body runs once per distinct
    # arguments, so what it calls does not run on every step of its callers.
    caches_its_result: bool = False
    # Steps an optimizer outside any loop of its own, or backpropagates outside its loops and
    # steps an optimizer anywhere in its body: a training step.
    steps: bool = False
    evaluates: bool = False  # Switches a model to eval mode (`model.eval()`).
    wraps_no_grad: bool = False  # Builds `torch.no_grad`/`inference_mode` and never backprops.
    returns_cuda_device: bool = False
    returns: list[Value] = field(default_factory=list)
    iterated: list[str] = field(default_factory=list)  # Parameters a loop of its iterates.
    # Returns a batch a DataLoader cannot pin: it builds an instance of a plain class of its
    # module without `pin_memory` (DETR's `collate_fn` and its `NestedTensor`).
    unpinnable_batch: bool = False
    # The parameter whose data the function first copies to the device with a blocking
    # copy, before any other work (`def prepare_inputs(batch, device): image, text = batch;
    # text = text.to(device)`): a helper that starts a step by copying the batch
    # (`StepWaits.next_after`).
    uploads_first: str | None = None
    loops: list[LoopSummary] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    # Attributes it may set to a true value (`obj.use_checkpoint = flag`, `setattr(obj,
    # "use_checkpoint", True)`, a class attribute `use_checkpoint = True` for module code),
    # but the switches of its own object that an `__init__` stores from a parameter of its,
    # off by default, which are on only when a caller turns that parameter on:
    # [attribute, parameter] (`self.with_cp = with_cp`, `Guards.stored_switch`).
    switches: list[str] = field(default_factory=list)
    stored_switches: list[list[str]] = field(default_factory=list)


@dataclass
class ClassSummary:
    qualname: str
    bases: list[Ref] = field(default_factory=list)
    # For a dataset class, what its samples are when no file is read to make them:
    # "made_up" (PyTorch's random factories), "in_memory" (indexing what it holds), or None.
    samples: str | None = None
    # Its parameter names are a checkpoint format users load: a registry builds it, or it
    # loads its own checkpoints (`FileFacts.models.checkpoint_architectures`).
    checkpoint_architecture: bool = False
    # Has a decorator, which may register it by name (`@MODELS.register_module()`).
    decorated: bool = False
    # A plain class (no base but `object`) without a `pin_memory` method: a DataLoader
    # cannot pin its instances (DETR's `NestedTensor`, pytorch-lifestream's `PaddedBatch`).
    unpinnable: bool = False


@dataclass
class ModuleSummary:
    """Everything the linker reads of one file."""

    imports: dict[str, str] = field(default_factory=dict)  # Bound name -> import target.
    stars: list[str] = field(default_factory=list)  # `from X import *` targets.
    imported_modules: list[str] = field(default_factory=list)
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    uses_cuda: bool = False
    # Downloads published weights into its models (`FileFacts.models.loads_released_weights`).
    loads_released_weights: bool = False
    # For such a module, the dotted paths its strings spell (`'obj':
    # 'speakerlab.models.eres2net.ERes2Net.ERes2Net'`): the classes a table of released
    # models builds by name.
    released_paths: list[str] = field(default_factory=list)
    runs_as_script: bool = False  # Has an `if __name__ == "__main__":` block.
    # Does work at its top level: a call statement (`main()`), a loop or a `with`.
    works_at_top_level: bool = False
    # The packages it imports modules from by a name it computes: "baselines" for
    # `importlib.import_module(f"baselines.{name}")`, "" for a name it computes whole
    # (`importlib.import_module(args.model)`), which may be any module.
    imports_by_name: list[str] = field(default_factory=list)
    # The first PyTorch release it cannot be imported on, padded to three parts: it imports,
    # unguarded at its top level, a module PyTorch removed (`from torch._six import inf`
    # gives [2, 0, 0]); None when it imports none.
    imports_only_below: list[int] | None = None
    # The modules it imports, absolutely, at its top level outside any `try` or `if`: a
    # project module among them that does not exist makes importing the file fail.
    unguarded_imports: list[str] = field(default_factory=list)
    cuda_names: list[str] = field(default_factory=list)  # Module-level names bound to CUDA.
    device_refs: list[Ref] = field(default_factory=list)  # Project values used as devices.
    # Every identifier the file mentions, other than the names its `def`s and classes define:
    # names, attributes, keywords and the names in strings (`named_in_string`); every word
    # of a launcher or a config that is not Python.
    mentions: list[str] = field(default_factory=list)
    # Keywords some call of the file passes a value that may be true, other than a switch
    # of the caller's passed on (`decode(latents, force_not_quantize=True)`), and the keys
    # that a dict literal or a subscript assignment gives one (`dict(type="ResNet",
    # with_cp=True)`, `{"with_cp": True}`, `cfg["with_cp"] = True`): a switch off by default
    # that a caller the linker cannot resolve, or a registry building a class from a config,
    # may turn on.
    keywords_on: list[str] = field(default_factory=list)
    # The methods that turn a library's checkpointing switch on (`LIBRARY_SWITCHES`) that
    # the file's code names, but for a name under a test of the switch it turns on (Hugging
    # Face's copied `PreTrainedModel.__init__` calls `gradient_checkpointing_enable()` only
    # when the config's `gradient_checkpointing` is on, which `keywords_on` tells).
    switch_enablers: list[str] = field(default_factory=list)
    # Functions whose every result is a periodic test of their arguments or `False`
    # (`def should_log(self, step): return step == 1 or step % self.log_freq == 0`).
    periodic_predicates: list[str] = field(default_factory=list)
    # The run's settings (`program.options`): the defaults the file declares (`--verbose`
    # off, `TRAIN.CLIP_GRAD` at 5.0) and the values it gives them, as a launcher does; each
    # `[name]` (a value the file does not say) or `[name, value]`.
    setting_defaults: list[list] = field(default_factory=list)
    settings_given: list[list] = field(default_factory=list)
    # `[alias, name]` for the other names of its options (`-r` of `--regularization`).
    setting_aliases: list[list[str]] = field(default_factory=list)
    # `[name, value]` for its flag options, with the value giving one stores (`--fp16` of
    # `action="store_true"` stores `True`).
    setting_flags: list[list] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> ModuleSummary:
        functions = {}
        for qualname, function in record["functions"].items():
            function = dict(function)
            function["loops"] = [LoopSummary(**loop) for loop in function["loops"]]
            function["calls"] = [CallSite(**site) for site in function["calls"]]
            functions[qualname] = FunctionSummary(**function)
        classes = {name: ClassSummary(**value) for name, value in record["classes"].items()}
        fields = {key: value for key, value in record.items() if key not in ("functions", "classes")}
        return cls(functions=functions, classes=classes, **fields)

    def fingerprint(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


def named_in_string(text: str) -> list[str]:
    """The names a string may refer to code by (`ModuleSummary.mentions`): the string when it
    is an identifier (`type="ResNet"`), and each part of a dotted path (`target:
    ldm.models.autoencoder.VQModel` in a config)."""
    parts = text.split(".")
    return parts if all(part.isidentifier() for part in parts) else []
