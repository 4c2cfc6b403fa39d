"""`DataLoader(...)` constructions, what they are bound to, and the loops that iterate them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from torchperf_lint.conventions import is_lightning_name
from torchperf_lint.facts.arguments import (
    MISSING,
    SIGNATURES,
    UNKNOWN,
    argument_value,
    bound_argument,
    literal_value,
)
from torchperf_lint.facts.devices import is_accelerator_target, is_cpu_device, mentions_cuda_device
from torchperf_lint.facts.guards import under_main_guard
from torchperf_lint.facts.index import (
    SyntaxIndex,
    descendants,
    descendants_in_scope,
    methods_of,
)
from torchperf_lint.facts.loops import LoopNode, Loops, iterated_expression, unwrapped_iterable
from torchperf_lint.facts.names import (
    NameResolver,
    dotted_name,
    last_identifier,
    root_name,
    target_names,
)
from torchperf_lint.facts.scopes import Scopes

DATALOADER = "torch.utils.data.DataLoader"
DATALOADER_SIGNATURE = SIGNATURES[DATALOADER]
# The names a module asks a loader to pin memory by (`"pin_memory": True`, `args.pin_mem`).
_PINNING_NAMES = frozenset({"pin_memory", "pin_mem"})
_DATALOADER_NAMES = frozenset({DATALOADER, "torch.utils.data.dataloader.DataLoader"})
_ITERABLE_DATASETS = frozenset({
    "torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset",
})
# Datasets whose samples already sit in memory, and the wrappers that keep them there.
# (`torch.utils.data` re-exports the classes of `torch.utils.data.dataset`: both spellings.)
_TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
_IN_MEMORY_DATASETS = _TENSOR_DATASETS | {"builtins.range"}
_DATASET_WRAPPERS = frozenset({
    "torch.utils.data.Subset", "torch.utils.data.ConcatDataset",
    "torch.utils.data.dataset.Subset", "torch.utils.data.dataset.ConcatDataset",
})
# Datasets of 28×28 one-channel images, by name (torchvision's, and copies of them such as
# Lightning's demo `MNIST`): a batch of 64 is 200 KB.
_TINY_IMAGE_DATASETS = frozenset({"MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST"})
# Hugging Face `datasets` methods that return a dataset with the same rows, eagerly computed
# (`map` runs the preprocessing once, ahead of training), and those that defer work to every
# access (`with_transform`: decoding and augmentation per item).
_ARROW_METHODS = frozenset({
    "map", "rename_column", "rename_columns", "remove_columns", "select_columns", "filter",
    "select", "shuffle", "train_test_split", "with_format", "sort", "flatten", "cast_column",
    "add_column", "shard", "take", "skip", "values",
})
_DEFERRED_TRANSFORMS = frozenset({"with_transform", "set_transform"})
# How many names, methods and subscripts `_preprocessed_rows` follows back to the source.
_PREPROCESSING_STEPS = 16
# Hugging Face datasets built from what the program holds in memory (a list of prompts, a
# DataFrame): Arrow rows from the start, with or without a `.map`.
_IN_MEMORY_ARROW = frozenset({
    f"datasets.{module}Dataset.{method}"
    for module in ("", "arrow_dataset.")
    for method in ("from_list", "from_dict", "from_pandas")
})
# Lightning hooks that return the loaders its Trainer iterates (moving each batch itself).
_LIGHTNING_LOADER_HOOKS = frozenset({
    "train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader",
})
# The hooks whose loaders a Trainer reads in one pass, after or apart from training, and
# the Trainer's methods that read the loaders they are given so.
_ONE_PASS_LOADER_HOOKS = frozenset({"test_dataloader", "predict_dataloader"})
_ONE_PASS_TRAINER_METHODS = frozenset({"test", "predict", "validate"})

# What a dataset's `__getitem__` may call and still only index or make up its samples.
_FACTORIES = frozenset({
    "tensor", "as_tensor", "zeros", "ones", "full", "empty", "arange", "eye", "linspace",
    "rand", "randn", "randint", "randperm", "normal", "zeros_like", "ones_like", "rand_like",
    "randn_like", "randint_like", "Generator", "manual_seed", "stack", "cat", "from_numpy",
    "is_tensor",  # `if torch.is_tensor(idx): idx = idx.tolist()`, a sampler's index
})
_RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm", "normal"})
_PLAIN_BUILTINS = frozenset({
    "range", "len", "int", "float", "bool", "str", "min", "max", "enumerate", "zip", "dict",
    "list", "tuple", "isinstance", "super",
})
# How many iterators over iterators (`iter(iter(loader))`, by names) a loader is found through.
_NAME_DEPTH = 3
# Tensor methods that read nothing but the tensor they are called on: its size, a view or
# a slice of it in another dtype (`self.data[start:end].long()`, `.type(torch.int64)`).
_TENSOR_METHODS = frozenset({
    "size", "numel", "dim", "item", "long", "int", "float", "double", "half", "bool", "clone",
    "view", "reshape", "contiguous", "flatten", "squeeze", "unsqueeze", "permute", "transpose",
    "type", "tolist",
})
# NumPy's and SciPy's conversions of an array (a sparse matrix's row made dense), and the
# views of a dict of arrays (`{k: v[idx] for k, v in self.data.items()}`).
_ARRAY_METHODS = frozenset({"toarray", "todense", "astype", "copy", "items", "keys", "values"})
# Words in an attribute's name that say it holds what the training collects as it runs.
_LIVE_STATE = ("buffer", "replay", "rollout")
# Hugging Face's collators of text: their batches are token ids, masks and labels.
_TEXT_COLLATORS = frozenset({
    "DataCollatorWithPadding", "DataCollatorForLanguageModeling", "DataCollatorForSeq2Seq",
    "DataCollatorForTokenClassification", "DataCollatorForWholeWordMask",
    "DataCollatorForPermutationLanguageModeling", "DataCollatorForCompletionOnlyLM",
    # torchtune's collate functions of token sequences.
    "padded_collate", "padded_collate_sft", "padded_collate_dpo", "padded_collate_packed",
})
# A tokenizer's padding id, handed to a collate function that pads token sequences.
_PADDING_IDS = frozenset({"pad_token_id", "pad_id", "padding_idx", "pad_idx"})
# The name of a set of sample indices: `train_idx`, `val_indices`, `test_index`.
_INDEX_SET = re.compile(r"(?:^|_)(?:idx|indices|index)$")
# Words that say a collate function also handles images or audio.
_PIXEL_WORDS = ("image", "pixel", "processor", "audio", "feature", "video")
# Words in a class name that say the dataset stands in for real data.
_STAND_INS = ("Mock", "Dummy", "Fake")
_LITERALS = (
    cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp,
)
# Builtins whose result is a container of values already computed (`list(InputExample(...)
# for ...)`): whatever the argument, the samples are in memory once the call returns.
_CONTAINER_BUILTINS = frozenset({"builtins.list", "builtins.tuple", "builtins.sorted"})
# Calls that read a whole saved object back into memory: a dataset saved after preprocessing
# (`torch.save(train_dataset, path)`, then `torch.load(path)`) holds its samples.
DESERIALIZERS = frozenset({"torch.load", "pickle.load", "pickle.loads"})
# Calls that return a NumPy array: a loader over one indexes its rows in memory
# (`DataLoader(check_array(X), batch_size=256)`).
_ARRAY_BUILDERS = frozenset({
    "numpy.array", "numpy.asarray", "numpy.load", "numpy.concatenate", "numpy.stack",
    "numpy.vstack", "sklearn.utils.check_array", "sklearn.utils.validation.check_array",
})
# A sampler's number of samples (torchgeo's `RandomGeoSampler(..., length=3)`, PyTorch's
# `RandomSampler(..., num_samples=3)`) up to which the loader is a look at a few samples
# (to plot them), not a pass over the data.
_SAMPLE_COUNT_KEYWORDS = ("length", "num_samples")
_HANDFUL = 16
# How a trainer takes a loader (by keyword, or at a position of `fit`), and the keywords that
# cap how many of its batches a run reads: Composer's `Trainer(train_dataloader=...,
# train_subset_num_batches=5)`, Lightning's `Trainer(limit_train_batches=5).fit(model, loader)`.
_CAPS_BY_ROLE = {
    "train_dataloader": ("train_subset_num_batches",),
    "eval_dataloader": ("eval_subset_num_batches",),
    "train_dataloaders": ("limit_train_batches", "fast_dev_run"),
    "val_dataloaders": ("limit_val_batches", "fast_dev_run"),
}
_FIT_POSITIONS = {1: "train_dataloaders", 2: "val_dataloaders"}


@dataclass(frozen=True)
class DataLoaderConstruction:
    """One `DataLoader(...)` call; `unpacked_may_pin`: whether the settings it unpacks
    (`**kwargs`) may hold `pin_memory` (`DataLoaders._unpacked_may_pin`)."""

    call: cst.Call
    unpacked_may_pin: bool

    def value(self, parameter: str) -> object:
        """The literal passed for `parameter`, `MISSING`, or `UNKNOWN` (non-literal/`**kw`)."""
        return argument_value(self.call, parameter, DATALOADER_SIGNATURE)

    def argument(self, parameter: str) -> cst.Arg | None:
        arg = bound_argument(self.call, parameter, DATALOADER_SIGNATURE)
        return arg if isinstance(arg, cst.Arg) else None

    @property
    def pins_memory(self) -> bool:
        """`pin_memory=True`, or a setting (`pin_memory=args.pin_mem`, a constant read from the
        environment) that is not a literal false value: the loader pins when the user asks.
        Settings unpacked from a dict the module builds ask only when they may hold it
        (`unpacked_may_pin`)."""
        value = self.value("pin_memory")
        if value is UNKNOWN and self.argument("pin_memory") is None:
            return self.unpacked_may_pin
        return value is UNKNOWN or (value is not MISSING and bool(value))

    @property
    def has_custom_collate(self) -> bool:
        collate = self.value("collate_fn")
        return collate is not MISSING and collate is not None


# What the program says a dataset holds (`FileFacts.samples_elsewhere`): one built or returned
# by a call of another module, or a parameter by what its callers pass: "made_up",
# "in_memory", "rows", or None.
SamplesElsewhere = Callable[[cst.BaseExpression], "str | None"]


def _builds_a_dict(value: cst.BaseExpression, names: NameResolver) -> bool:
    """A dict display (`{"batch_size": 64}`) or a `dict(...)` call."""
    return type(value) is cst.Dict or (
        type(value) is cst.Call and names.qualified_name(value.func) == "builtins.dict"
    )


def _names_pinning(index: SyntaxIndex) -> bool:
    """Whether the module names `pin_memory` (or `pin_mem`): a string key, a keyword, an
    attribute."""
    return (
        any(string.value[1:-1] in _PINNING_NAMES for string in index.strings)
        or any(attribute.attr.value in _PINNING_NAMES for attribute in index.attributes)
        or any(
            arg.keyword is not None and arg.keyword.value in _PINNING_NAMES
            for call in index.calls
            for arg in call.args
        )
    )


def _names_live_state(expression: cst.BaseExpression) -> bool:
    """`replay_buffer`, `self.buffer`, `OffpolicyReplayBuffer`: a name (or a `self.` attribute)
    whose last part says it holds what the training collects as it runs."""
    name = dotted_name(expression) or ""
    if name.count(".") > (1 if name.startswith("self.") else 0):
        return False
    return any(word in name.rsplit(".", 1)[-1].lower() for word in _LIVE_STATE)


def _iterated_by(value: cst.Call) -> cst.BaseExpression:
    """What an iterator or a wrapper iterates: `loader` for `iter(loader)` or `tqdm(loader)`."""
    return value.args[0].value if _is_iter_call(value) else unwrapped_iterable(value)


def _is_iter_call(value: cst.BaseExpression) -> bool:
    """`iter(loader)`."""
    return isinstance(value, cst.Call) and dotted_name(value.func) == "iter" and bool(value.args)


def _unknown_elsewhere(source: cst.BaseExpression) -> str | None:
    return None


def _said_elsewhere(
    source: cst.BaseExpression, elsewhere: SamplesElsewhere, kinds: tuple[str, ...]
) -> bool:
    """The program says the dataset `source` is (one a class or function of another module
    builds, or a parameter by what its callers pass) holds samples of one of `kinds`."""
    return isinstance(source, (cst.Call, cst.Name)) and elsewhere(source) in kinds


class DataLoaders:
    """Every DataLoader construction of the module, and which loop iterates which.

    Questions about a loader's dataset take `elsewhere`, what the program says of datasets
    that classes and functions of other modules build (these facts read one file only)."""

    def __init__(self, index: SyntaxIndex, scopes: Scopes, names: NameResolver) -> None:
        self.index = index
        self.scopes = scopes
        self.names = names
        self._module_classes = {
            cls.name.value: cls
            for cls in index.classes
            if isinstance(scopes.parents.get(cls), cst.Module)
        }
        calls = [call for call in index.calls if self._builds_a_loader(call.func)]
        self._names_pinning = bool(calls) and _names_pinning(index)
        self.constructions = [
            DataLoaderConstruction(call, self._unpacked_may_pin(call)) for call in calls
        ]
        self._by_call = {c.call: c for c in self.constructions}
        # Rules ask about every loop for every loader: the answers per loop are kept.
        self._loader_of: dict[LoopNode, DataLoaderConstruction | None] = {}
        self._moves_batches: dict[LoopNode, bool] = {}
        self._moves_samples: dict[cst.ClassDef, bool] = {}

    def _unpacked_may_pin(self, call: cst.Call) -> bool:
        """Whether the settings `call` unpacks may ask to pin memory: settings from a
        configuration or a caller (`**cfg.loader`, `**config["kwargs"]`, a parameter) may;
        a dict the module builds (`train_kwargs = {"batch_size": 64}`, `dict(defaults,
        **extra)`) does only in a module that names `pin_memory` (PyTorch's MNIST example
        updates it with `cuda_kwargs = {"pin_memory": True}`; sbi's `get_dataloaders` never
        does)."""
        for arg in call.args:
            if arg.star != "**":
                continue
            values = self.scopes.bound_values(arg.value) if type(arg.value) is cst.Name else []
            if not values or not all(_builds_a_dict(value, self.names) for value in values):
                return True
        return self._names_pinning

    def _builds_a_loader(self, func: cst.BaseExpression, depth: int = 0) -> bool:
        """`DataLoader`; a class of the module derived from it that takes the same arguments
        (no `__init__` of its own, or one that takes `*args, **kwargs` only:
        `InfiniteDataLoader`); or a name bound only to these (`loader = DataLoader if weighted
        else InfiniteDataLoader`, then `loader(dataset, ...)`)."""
        if self.names.qualified_name(func) in _DATALOADER_NAMES:
            return True
        if depth > 2:
            return False
        if isinstance(func, cst.IfExp):
            return self._builds_a_loader(func.body, depth + 1) and self._builds_a_loader(
                func.orelse, depth + 1
            )
        if not isinstance(func, cst.Name):
            return False
        cls = self._module_classes.get(func.value)
        if cls is not None:
            return _takes_loader_arguments(cls) and any(
                self._builds_a_loader(base.value, depth + 1) for base in cls.bases
            )
        values = self.scopes.bound_values(func)
        return bool(values) and all(self._builds_a_loader(value, depth + 1) for value in values)

    def construction(
        self, expression: cst.BaseExpression, depth: int = 0
    ) -> DataLoaderConstruction | None:
        """The DataLoader construction `expression` evaluates to, when it can be known; for an
        iterator over one (`data_iter = iter(loader)`), or a wrapper of one (`pbar =
        tqdm(train_loader)`), that loader's."""
        if isinstance(expression, cst.Call):
            return self._by_call.get(expression)
        values = self.scopes.bound_values(expression)
        for value in values:
            if isinstance(value, cst.Call) and value in self._by_call:
                return self._by_call[value]
        iterators = [value for value in values if unwrapped_iterable(value) is not value]
        iterated = {dotted_name(_iterated_by(value)) for value in iterators}
        if (
            iterators
            and len(iterators) == len(values)
            and len(iterated) == 1
            and iterated != {dotted_name(expression)}  # Not `it = iter(it)`.
            and depth < _NAME_DEPTH
        ):
            return self.construction(_iterated_by(iterators[0]), depth + 1)
        return None

    def loader_of(self, loop: LoopNode) -> DataLoaderConstruction | None:
        """The construction a loop iterates (`for x in loader`, `enumerate(loader)`)."""
        if loop not in self._loader_of:
            iterated = iterated_expression(loop)
            self._loader_of[loop] = None if iterated is None else self.construction(iterated)
        return self._loader_of[loop]

    def iterates_a_loader(self, loop: LoopNode) -> bool:
        """Iterates a known construction, or a name that says it is one (`train_loader`)."""
        iterated = iterated_expression(loop)
        if iterated is None:
            return False
        if self.construction(iterated) is not None:
            return True
        # A loader passed in as a parameter or attribute: `for x in train_loader`.
        identifier = last_identifier(iterated) or ""
        return "loader" in identifier.lower() and dotted_name(iterated) is not None

    def dataset_in_memory(
        self, loader: DataLoaderConstruction, elsewhere: SamplesElsewhere = _unknown_elsewhere
    ) -> bool:
        """The loader's dataset holds its samples in memory, so loading a batch is indexing:
        a `TensorDataset`, a `range`, a set of sample indices named so when no collate
        function loads from them (`self.dataset.train_idx`), a list or other literal, a list built by a call of
        `list`/`tuple`/`sorted` or by `+` of such lists, a mock or other stand-in
        (`MagicMock()`, `DummyDataset()`), a dataset class of this module whose
        `__getitem__` (or `__iter__`) calls nothing but PyTorch's factories, builtins and
        tensor methods that read only their tensor (`_samples_in_memory`), a Hugging Face
        dataset preprocessed with `.map` and not transformed on access, a dataset read back
        whole from a file (`torch.load(path)`, `pickle.load(f)`: one saved after
        preprocessing), a class or function of another module that the program says builds
        one of those (also as an item of the tuple it returns: `train, val =
        create_dataset(...)`), or a `Subset`/`ConcatDataset` of those."""
        dataset = loader.argument("dataset")
        # `DataLoader(self.dataset.train_idx, ...)`: a set of node indices (SGL's), unless a
        # collate function does the loading (`collate_fn=sampler.sample_subgraph`).
        indices = loader.value("collate_fn") in (MISSING, None)
        return dataset is not None and self.every_source(
            dataset.value,
            lambda source: self._held_in_memory(source)
            or indices and _names_an_index_set(source)
            or _said_elsewhere(source, elsewhere, ("made_up", "in_memory", "rows")),
        )

    def _samples_in_memory(self, construction: cst.Call) -> bool:
        """An instance of a dataset class of this module whose samples are in memory
        (`_class_samples_in_memory`)."""
        cls = self._dataset_class(construction)
        return cls is not None and self._class_samples_in_memory(cls)

    def _class_samples_in_memory(self, cls: cst.ClassDef) -> bool:
        """`__getitem__` (or `__iter__`) calls nothing but PyTorch's factories and builtins:
        it indexes what it holds, returns constants (`PromptDataset` returning `{"prompt":
        self.prompt, "index": index}`) or makes up samples (`yield torch.randn(self.size)`)."""
        methods = methods_of(cls, ("__getitem__", "__iter__"))
        return bool(methods) and all(
            self._in_memory_call(node)
            for method in methods
            for node in descendants(method.body)
            if isinstance(node, cst.Call)
        )

    def class_samples(self, cls: cst.ClassDef) -> str | None:
        """What the samples of dataset class `cls` are, when making them reads no file:
        "made_up" (`_makes_up`), "in_memory" (`_class_samples_in_memory`), else None. The
        program answers it for classes of other modules (`ProgramAnswers.dataset_samples`)."""
        if not self._class_samples_in_memory(cls):
            return None
        return "made_up" if self._makes_up(cls) else "in_memory"

    def reads_live_state(self, loader: DataLoaderConstruction) -> bool:
        """The dataset is built from the running object's own state: a bound method of the
        class around it (`ExperienceSourceDataset(self.generate_trajectory_samples)`, an RL
        agent collecting experience with the current policy), or a replay or rollout buffer
        the training fills: the dataset itself (`DataLoader(replay_buffer)`,
        `DataLoader(OffpolicyReplayBuffer(...))`, `DataLoader(self)` in a class whose name or
        base says so, `class PPORolloutStorage(BaseRolloutStore)`) or what it is built from
        (`RLDataset(self.buffer)`, `ReplayDataset(replay_buffer)`). Worker processes would read
        stale copies of it."""
        dataset = loader.argument("dataset")
        if dataset is None:
            return False
        values = [dataset.value, *self.scopes.bound_values(dataset.value)]
        cls = self.scopes.enclosing_class(loader.call)
        methods = {method.name.value for method in (methods_of(cls) if cls is not None else ())}
        if any(_names_live_state(value) for value in values):
            return True
        if cls is not None and dotted_name(dataset.value) == "self" and any(
            _names_live_state(name) for name in (cls.name, *(base.value for base in cls.bases))
        ):
            return True  # `DataLoader(self)` in a `PPORolloutStorage(BaseRolloutStore)`
        for value in values:
            if isinstance(value, cst.Call) and _names_live_state(value.func):
                return True
            for arg in value.args if isinstance(value, cst.Call) else ():
                name = dotted_name(arg.value) or ""
                if name.startswith("self.") and name.removeprefix("self.") in methods:
                    return True
                if _names_live_state(arg.value):
                    return True
        return False

    def makes_up_samples(
        self, loader: DataLoaderConstruction, elsewhere: SamplesElsewhere = _unknown_elsewhere
    ) -> bool:
        """The dataset (also through `Subset`, `ConcatDataset` and the names bound to it) is a
        class of this module, or of another module by the program's word, that makes up its
        samples with PyTorch's random factories and reads nothing (`RandomDataset`:
        `self.data = torch.randn(n, size)`): a demo's or a test's stand-in for data."""
        dataset = loader.argument("dataset")
        return dataset is not None and self.every_source(
            dataset.value,
            lambda source: self._made_up(source)
            or _said_elsewhere(source, elsewhere, ("made_up",)),
        )

    def _made_up(self, expression: cst.BaseExpression) -> bool:
        cls = self._dataset_class(expression) if isinstance(expression, cst.Call) else None
        return cls is not None and self._class_samples_in_memory(cls) and self._makes_up(cls)

    def _makes_up(self, cls: cst.ClassDef) -> bool:
        """Every call of the class is a PyTorch factory or a builtin, and some call is a
        random factory."""
        calls = [node for node in descendants(cls.body) if isinstance(node, cst.Call)]
        return all(self._in_memory_call(call) for call in calls) and any(
            (self.names.call_name(call) or "").removeprefix("torch.") in _RANDOM_FACTORIES
            for call in calls
        )

    def _in_memory_call(self, call: cst.Call) -> bool:
        """A call that reads and decodes nothing: a PyTorch factory or a builtin such as
        `range` or `len` (`super().__init__()` too), a seeded generator
        (`torch.Generator().manual_seed(42)`), or a tensor method that reads only its tensor
        (`self.data.size(0)`, `self.data[start:end].long()`), an array conversion
        (`torch.from_numpy(self.x[index].toarray()[0])` of a sparse matrix's row) or the
        items of a dict of arrays (`{k: v[idx] for k, v in self.data.items()}`: precomputed
        features)."""
        qualified = self.names.call_name(call) or ""
        if qualified.startswith("torch."):
            return qualified.removeprefix("torch.") in _FACTORIES
        if qualified.removeprefix("builtins.") in _PLAIN_BUILTINS:
            return True
        func = call.func
        if isinstance(func, cst.Attribute) and (
            func.attr.value in _TENSOR_METHODS or func.attr.value in _ARRAY_METHODS
        ):
            return True
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call)):
            return False
        made_by = self.names.call_name(func.value)
        return made_by == "builtins.super" or (
            made_by == "torch.Generator" and func.attr.value == "manual_seed"
        )

    def _dataset_class(self, construction: cst.Call) -> cst.ClassDef | None:
        if not isinstance(construction.func, cst.Name):
            return None
        return next(
            (cls for cls in self.index.classes if cls.name.value == construction.func.value), None
        )

    def moves_samples_to_device(self, loader: DataLoaderConstruction) -> bool:
        """The dataset is an instance of a class of this module whose `__getitem__` (or
        `__iter__`) moves its samples to the accelerator (`audio.to(self.device)`,
        `x.cuda()`): its batches are on the device already, worker processes could not
        initialise CUDA after a fork, and pinning them raises. Or the dataset is what a call
        given an accelerator as `device=` builds (`generate_counterfactual_dataset(n,
        device="cuda:0")`, a list of tensors made on the GPU)."""
        dataset = loader.argument("dataset")
        if dataset is None:
            return False
        for value in (dataset.value, *self.scopes.bound_values(dataset.value)):
            if type(value) is not cst.Call:
                continue
            if self._built_on_accelerator(value):
                return True
            cls = self._dataset_class(value)
            if cls is not None and self._samples_on_accelerator(cls):
                return True
        return False

    def _built_on_accelerator(self, call: cst.Call) -> bool:
        return any(
            arg.keyword is not None
            and arg.keyword.value == "device"
            and is_accelerator_target(arg.value, self.names, self.scopes)
            for arg in call.args
        )

    def _samples_on_accelerator(self, cls: cst.ClassDef) -> bool:
        """Whether the `__getitem__` or `__iter__` of dataset class `cls` moves its samples
        to the accelerator (both loader rules ask of every loader: kept per class)."""
        if cls not in self._moves_samples:
            self._moves_samples[cls] = any(
                self._moves_to_accelerator(node)
                for method in methods_of(cls, ("__getitem__", "__iter__"))
                for node in descendants(method.body)
            )
        return self._moves_samples[cls]

    def _moves_to_accelerator(self, node: cst.CSTNode) -> bool:
        # Asked of every node of a dataset's methods: by type, as in `index`.
        if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
            return False
        method = node.func.attr.value
        if method == "cuda":
            return True
        return (
            method == "to"
            and bool(node.args)
            and is_accelerator_target(node.args[0].value, self.names, self.scopes)
        )

    def holds_plain_values(self, loader: DataLoaderConstruction) -> bool:
        """The dataset is an instance of a class of this module whose `__init__` and
        `__getitem__` call nothing: its samples are the Python values it was given (a prompt,
        an index), with no tensor to pin."""
        dataset = loader.argument("dataset")
        if dataset is None:
            return False
        values = [dataset.value, *self.scopes.bound_values(dataset.value)]
        return any(
            isinstance(value, cst.Call)
            and self._calls_nothing_in(value, "__getitem__")
            and self._calls_nothing_in(value, "__init__")
            for value in values
        )

    def loads_indices(self, loader: DataLoaderConstruction) -> bool:
        """The dataset is a range of indices (`torch.arange(n)`, `range(n)`, also in a
        `TensorDataset(torch.arange(n))`, or a name bound to one): each batch is a few
        integers, whatever the loop picks with them."""
        dataset = loader.argument("dataset")
        return dataset is not None and self._is_index_range(dataset.value)

    def _is_index_range(self, value: cst.BaseExpression, depth: int = 0) -> bool:
        if isinstance(value, cst.Name) and depth < _NAME_DEPTH:
            values = self.scopes.bound_values(value)
            return bool(values) and all(self._is_index_range(bound, depth + 1) for bound in values)
        if not isinstance(value, cst.Call):
            return False
        name = self.names.call_name(value)
        if name in ("torch.arange", "builtins.range"):
            return True
        return name in _TENSOR_DATASETS and bool(value.args) and all(
            not arg.star and self._is_index_range(arg.value, depth) for arg in value.args
        )

    def _calls_nothing_in(self, construction: cst.Call, method: str) -> bool:
        """`construction` builds a class of this module whose `method` makes no call."""
        cls = self._dataset_class(construction)
        if cls is None:
            return False
        methods = methods_of(cls, (method,))
        return len(methods) == 1 and not any(
            isinstance(node, cst.Call) for node in descendants(methods[0].body)
        )

    def built_by_a_dataset(self, loader: DataLoaderConstruction) -> bool:
        """A method of a dataset class builds the loader (PyG's `process()` running a feature
        extractor over the raw data once, when the dataset is first made): preprocessing,
        not the training's loader."""
        cls = self.scopes.enclosing_class(loader.call)
        return cls is not None and any(
            "Dataset" in (last_identifier(base.value) or "") for base in cls.bases
        )

    def wraps_a_dataset_given_instead(self, loader: DataLoaderConstruction) -> bool:
        """The loader wraps a parameter of its function only when the caller did not pass a
        loader there: in the body of `if not isinstance(train_dataset, DataLoader):` or the
        `else` of `if isinstance(train_dataset, DataLoader):`, as a library's convenience.
        A caller who cares about loading passes a loader of its own."""
        dataset = loader.argument("dataset")
        if dataset is None or not isinstance(dataset.value, cst.Name):
            return False
        name = dataset.value.value
        function = self.scopes.enclosing_function(loader.call)
        if not self.scopes.is_parameter(name, function):
            return False
        for parent, child in self.scopes.ancestors_with_child(loader.call):
            if parent is function:
                return False
            if type(parent) is not cst.If or child is parent.test:
                continue
            # The branch that runs when `name` is not a loader: the `else` of the test, or
            # the body of its negation.
            test, wanted = parent.test, child is parent.orelse
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, wanted = test.expression, not wanted
            if wanted and self._tests_for_a_loader(test, name):
                return True
        return False

    def _tests_for_a_loader(self, test: cst.BaseExpression, name: str) -> bool:
        """`isinstance(name, DataLoader)`."""
        tested = self.names.isinstance_test(test)
        return tested is not None and tested[0] == name and self._builds_a_loader(tested[1])

    def collates_token_ids(self, loader: DataLoaderConstruction) -> bool:
        """The loader's `collate_fn` makes batches of token ids, or no tensors at all: one of
        Hugging Face's text collators (`DataCollatorWithPadding(tokenizer)`,
        `DataCollatorForLanguageModeling`, ...), a collate function built from a tokenizer's
        padding id or from the tokenizer itself, and nothing bigger (`partial(padded_collate_sft,
        padding_idx=tokenizer.pad_id)`, `DataCollatorForRollout(tokenizer.pad_token_id)`,
        `Collater(self.tokenizer, max_length)`), or `list`, which hands the loop its samples
        as they are (prompts)."""
        collate = loader.argument("collate_fn")
        dataset = loader.argument("dataset")
        return (
            collate is not None
            and self._collates_token_ids(collate.value, 0)
            and not (dataset is not None and self._mentions_pixels(dataset.value))
        )

    def _mentions_pixels(self, dataset: cst.BaseExpression) -> bool:
        """The dataset, or the value its name is bound to, names images or audio
        (`MMIT_Dataset(captions, image_dir=..., image_processor=...)`): its samples are more
        than token ids, whatever pads the text beside them."""
        values = [dataset, *self.scopes.bound_values(dataset)]
        return any(
            _names_pixels(last_identifier(node) or "")
            for value in values
            for node in (value, *descendants(value))
            if isinstance(node, (cst.Name, cst.Attribute))
        )

    def _collates_token_ids(self, expression: cst.BaseExpression, depth: int) -> bool:
        if self.names.qualified_name(expression) == "builtins.list":
            return True
        if last_identifier(expression) in _TEXT_COLLATORS:
            return True  # torchtune's `padded_collate_sft`, passed as it is
        if isinstance(expression, cst.IfExp):
            return all(
                self._collates_token_ids(branch, depth) for branch in (expression.body, expression.orelse)
            )
        if isinstance(expression, cst.Call):
            if last_identifier(expression.func) in _TEXT_COLLATORS:
                return True
            return any(
                _names_a_tokenizer(last_identifier(node) or "")
                for node in descendants(expression)
                if isinstance(node, (cst.Name, cst.Attribute))
            ) and not any(
                _names_pixels(last_identifier(node) or "")
                for node in descendants(expression)
                if isinstance(node, (cst.Name, cst.Attribute))
            )
        if isinstance(expression, (cst.Name, cst.Attribute)) and depth < 3:
            values = self.scopes.bound_values(expression)
            if not values and isinstance(expression, cst.Name):
                return self._local_collate_of_token_ids(expression, depth)
            return bool(values) and all(self._collates_token_ids(v, depth + 1) for v in values)
        return False

    def _local_collate_of_token_ids(self, name: cst.Name, depth: int) -> bool:
        """`name` is a function defined in the same function that pads with a text collator
        bound there, or with the tokenizer, and names no images (trlx's `def
        collate_fn(elems): batch = hf_collate_fn(...)` after `hf_collate_fn =
        DataCollatorWithPadding(self.tokenizer)`, or `self.tokenizer.pad(...)`)."""
        scope = self.scopes.enclosing_function(name)
        local = [
            function for function in self.index.functions
            if function.name.value == name.value and self.scopes.enclosing_function(function) is scope
        ]
        if len(local) != 1:
            return False
        nodes = list(descendants(local[0].body))
        return any(
            type(node) is cst.Call
            and (self._collates_token_ids(node, depth + 1) or self._collates_token_ids(node.func, depth + 1))
            for node in nodes
        ) and not any(
            _names_pixels(last_identifier(node) or "")
            for node in nodes
            if isinstance(node, (cst.Name, cst.Attribute))
        )

    def tiny_images(self, loader: DataLoaderConstruction) -> bool:
        """The dataset is one of the datasets of tiny images, by name (torchvision's MNIST and
        its kin: 28×28 pixels, one channel), also through `Subset` and `random_split`: a batch
        is a few hundred kilobytes, copied in microseconds pinned or not."""
        dataset = loader.argument("dataset")
        return dataset is not None and self.every_source(
            dataset.value,
            lambda expression: isinstance(expression, cst.Call)
            and last_identifier(expression.func) in _TINY_IMAGE_DATASETS,
        )

    def preprocessed_rows(
        self, loader: DataLoaderConstruction, elsewhere: SamplesElsewhere = _unknown_elsewhere
    ) -> bool:
        """The loader's dataset is a Hugging Face dataset preprocessed ahead of training
        (`load_dataset(...).map(tokenize)`, indexed by split) and not transformed on access:
        stored rows, usually token ids. Also one that a function of another module returns
        (`dataset = get_dataset(tokenizer)`), by the program's word."""
        dataset = loader.argument("dataset")
        return dataset is not None and self.every_source(
            dataset.value,
            lambda source: self.is_preprocessed(source)
            or _said_elsewhere(source, elsewhere, ("rows",)),
        )

    def is_preprocessed(self, expression: cst.BaseExpression) -> bool:
        """`expression` is a Hugging Face dataset preprocessed ahead of training and not
        transformed on access (`preprocessed_rows`)."""
        return (
            self._imports_datasets
            and self._preprocessed_rows(expression)
            and not self._transformed_on_access(expression)
        )

    @cached_property
    def _imports_datasets(self) -> bool:
        """The module imports Hugging Face `datasets` (`import datasets`, `from datasets
        import load_dataset`), where all its datasets come from."""
        return any(
            target == "datasets" or target.startswith("datasets.")
            for target in self.names.aliases.values()
        )

    def _held_in_memory(self, expression: cst.BaseExpression) -> bool:
        if isinstance(expression, _LITERALS) or self.is_preprocessed(expression):
            return True
        if not isinstance(expression, cst.Call):
            return False
        qualified = self.names.call_name(expression) or ""
        if qualified in _IN_MEMORY_DATASETS or qualified in _CONTAINER_BUILTINS:
            return True
        if qualified in DESERIALIZERS or qualified in _ARRAY_BUILDERS:
            return True
        if qualified.startswith("unittest.mock."):
            return True
        if any(word in (last_identifier(expression.func) or "") for word in _STAND_INS):
            return True
        return self._samples_in_memory(expression)

    def every_source(
        self,
        expression: cst.BaseExpression,
        is_source: Callable[[cst.BaseExpression], bool],
        depth: int = 0,
    ) -> bool:
        """Whether `is_source` holds for the dataset `expression` is, seen through the names
        bound to it (the value that reaches the use in straight-line code, else every value),
        both values of a conditional expression, `Subset`/`ConcatDataset` and `+` (every part: `gold +
        silver`, a concatenation of lists or, for datasets, a `ConcatDataset`), a parameter
        (what every caller in the module passes), a call of a function of the module (what
        it returns: `DataLoader(_generate_dataset(n, d))`) and an unpacked call (`dataset,
        model = load_train_objs()`: what the function returns in that place)."""
        if is_source(expression):
            return True
        if depth > 3:
            return False
        if type(expression) is cst.IfExp:  # `TorchDataset(X, mean) if scale else TorchDataset(X)`
            return all(
                self.every_source(part, is_source, depth + 1)
                for part in (expression.body, expression.orelse)
            )
        if isinstance(expression, cst.BinaryOperation) and isinstance(expression.operator, cst.Add):
            return all(
                self.every_source(part, is_source, depth + 1)
                for part in (expression.left, expression.right)
            )
        if isinstance(expression, cst.Call):
            qualified = self.names.call_name(expression) or ""
            if qualified in _DATASET_WRAPPERS and expression.args:
                parts = expression.args[0].value
                if isinstance(parts, (cst.List, cst.Tuple)):
                    return all(
                        self.every_source(e.value, is_source, depth + 1) for e in parts.elements
                    )
                return self.every_source(parts, is_source, depth + 1)
            if self._transforms_an_array(expression):
                # `scaler.transform(X)` of a scikit-learn estimator: an array like `X`.
                return self.every_source(expression.args[0].value, is_source, depth + 1)
            if isinstance(expression.func, cst.Name):
                # `DataLoader(_generate_dataset(n, d))`: what the module's function returns.
                returned = self._module_function_returns(expression.func.value)
                return bool(returned) and all(
                    self.every_source(value, is_source, depth + 1) for value in returned
                )
            return False
        if isinstance(expression, (cst.Name, cst.Attribute)):
            reaching = self.scopes.reaching_values(expression) if isinstance(expression, cst.Name) else None
            values = (
                # The bindings the paths to this use go through last (`train_set =
                # TensorDataset(...)` in the branch that builds the loader, `dataset =
                # dataset.map(f)` in a `with` block, whatever the name is bound to later).
                reaching
                or self.scopes.bound_values(expression)
                or self._split_from(expression)
                or self._unpacked_from(expression)
                or self._passed_for(expression)
            )
            return bool(values) and all(
                self.every_source(v, is_source, depth + 1) for v in values
            )
        return False

    def _transforms_an_array(self, call: cst.Call) -> bool:
        """`self.minmax_scaler.transform(X)`, `fit_transform(X)`: a scikit-learn estimator
        (a receiver bound to a `sklearn` class) returning the array it is given, transformed."""
        func = call.func
        return (
            type(func) is cst.Attribute
            and func.attr.value in ("transform", "fit_transform")
            and bool(call.args)
            and not call.args[0].star
            and any(
                type(value) is cst.Call
                and (self.names.call_name(value) or "").startswith("sklearn.")
                for value in self.scopes.bound_values(func.value)
            )
        )

    def _passed_for(self, expression: cst.BaseExpression) -> list[cst.BaseExpression]:
        """What the callers in this module pass for the parameter `expression` names, when
        every call of its function passes it: a module-level `def` called by name
        (`prepare_dataloader(dataset, batch_size)` gives the caller's `dataset`), or a method
        called on `self` by the methods of its class (`self._deep_representation(net, X)`
        gives the `X` of `fit`)."""
        function = self.scopes.enclosing_function(expression)
        if (
            not isinstance(expression, cst.Name)
            or function is None
            or not self.scopes.is_parameter(expression.value, function)
        ):
            return []
        cls = self.scopes.enclosing_class(function)
        params = function.params
        positional = [param.name.value for param in (*params.posonly_params, *params.params)]
        if cls is not None:
            if any(
                dotted_name(decorator.decorator) in ("staticmethod", "classmethod")
                for decorator in function.decorators
            ):
                return []
            positional = positional[1:]  # `self`, which the call's receiver gives
        name = function.name.value
        passed = []
        for call in self.index.calls:
            func = call.func
            if cls is None:
                if not (type(func) is cst.Name and func.value == name):
                    continue
            elif not (
                type(func) is cst.Attribute
                and func.attr.value == name
                and type(func.value) is cst.Name
                and func.value.value == "self"
                and self.scopes.enclosing_class(call) is cls
            ):
                continue
            argument = _argument_for(call, expression.value, positional)
            if argument is None:
                return []
            passed.append(argument)
        return passed

    def _unpacked_from(self, expression: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The values a function of this module returns in the place of the name
        `expression` in an unpacking of its call (`dataset, model, optimizer =
        load_train_objs()`, where it ends with `return train_set, model, optimizer`)."""
        if not isinstance(expression, cst.Name):
            return []
        function = self.scopes.enclosing_function(expression)
        for assignment in self.index.assigns:
            if not (
                isinstance(assignment, cst.Assign)
                and len(assignment.targets) == 1
                and isinstance(assignment.targets[0].target, cst.Tuple)
                and isinstance(assignment.value, cst.Call)
                and isinstance(assignment.value.func, cst.Name)
                and self.scopes.enclosing_function(assignment) is function
            ):
                continue
            elements = [element.value for element in assignment.targets[0].target.elements]
            position = next(
                (i for i, element in enumerate(elements)
                 if isinstance(element, cst.Name) and element.value == expression.value),
                None,
            )
            if position is None:
                continue
            returned = self._module_function_returns(assignment.value.func.value)
            if not returned or not all(
                isinstance(value, cst.Tuple) and len(value.elements) == len(elements)
                for value in returned
            ):
                return []
            return [value.elements[position].value for value in returned]
        return []

    def _module_function_returns(self, name: str) -> list[cst.BaseExpression]:
        """What the module-level function `name` of this module returns (every `return`
        with a value), or nothing when the module has no one such function."""
        callees = [
            function for function in self.index.functions
            if function.name.value == name
            and self.scopes.enclosing_function(function) is None
            and self.scopes.enclosing_class(function) is None
        ]
        if len(callees) != 1:
            return []
        return [
            node.value for node in self.index.returns
            if node.value is not None and self.scopes.enclosing_function(node) is callees[0]
        ]

    def _split_from(self, expression: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The dataset a `random_split` gave `expression` a part of:
        `self.train, self.val = random_split(dataset, [55000, 5000])` gives `dataset`."""
        name = dotted_name(expression)
        for assignment in self.index.assigns:
            if not isinstance(assignment, cst.Assign) or not isinstance(assignment.value, cst.Call):
                continue
            value = assignment.value
            if self.names.call_name(value) != "torch.utils.data.random_split" or not value.args:
                continue
            targets = [target.target for target in assignment.targets]
            if any(
                isinstance(target, (cst.Tuple, cst.List))
                and name in (dotted_name(element.value) for element in target.elements)
                for target in targets
            ):
                return [value.args[0].value]
        return []

    def _preprocessed_rows(
        self, expression: cst.BaseExpression, mapped: bool = False, depth: int = 0
    ) -> bool:
        """A Hugging Face dataset preprocessed ahead of training: `datasets.load_dataset(...)`
        (or another `datasets` source) through `.map(tokenize, ...)` and row-preserving
        methods, indexed by split (`tokenized["train"]`). Its rows are stored Arrow records:
        reading one is a lookup, and the collate function only pads. Names are followed to the
        bindings that reach them, each method and subscript one step deeper: a script that
        splits, maps and selects takes a dozen (a binding a loop reaches again ends there); a
        name unpacked from the splits (`train, val = ds.train_test_split(0.2).values()`) is
        one of them."""
        if depth > _PREPROCESSING_STEPS:
            return False
        if isinstance(expression, cst.Subscript):
            return self._preprocessed_rows(expression.value, mapped, depth + 1)
        if isinstance(expression, cst.Call):
            source = self.names.call_name(expression) or ""
            if source.startswith("datasets."):
                return mapped or source in _IN_MEMORY_ARROW
            func = expression.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in _ARROW_METHODS):
                return False
            return self._preprocessed_rows(func.value, mapped or func.attr.value == "map", depth + 1)
        if not isinstance(expression, (cst.Name, cst.Attribute)):
            return False
        reaching = self.scopes.reaching_values(expression) if isinstance(expression, cst.Name) else None
        if reaching is not None:
            return all(self._preprocessed_rows(value, mapped, depth + 1) for value in reaching)
        name = dotted_name(expression)
        values = self.scopes.bound_values(expression)
        unpacked = self.scopes.unpacked_from(expression) if type(expression) is cst.Name else None
        if not values and unpacked is not None:
            # `ds_train, ds_val = ds.train_test_split(test_size=0.2).values()`: each split.
            return self._preprocessed_rows(unpacked[0], mapped, depth + 1)
        # `tokenized = tokenized.rename_column(...)` updates the name in place: the rows are
        # those of its other bindings, mapped if any update maps them.
        updates = [value for value in values if _updates(value, name)]
        sources = [value for value in values if value not in updates]
        if not sources or not all(_arrow_chain(update) for update in updates):
            return False
        mapped = mapped or any(_maps(update) for update in updates)
        return all(self._preprocessed_rows(value, mapped, depth + 1) for value in sources)

    def _transformed_on_access(self, expression: cst.BaseExpression) -> bool:
        """`dataset.set_transform(f)` / `.with_transform(f)` anywhere on the same root name:
        the work (decoding, augmentation) happens on every access. A value is judged by the
        names it is assigned to (`dataset = Dataset.from_list(rows)`, then
        `dataset.set_transform(f)`)."""
        roots = {root_name(expression)}
        assignment = self.index.parents.get(expression)
        if type(assignment) is cst.Assign:
            roots.update(root_name(target.target) for target in assignment.targets)
        roots.discard(None)
        return any(
            isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _DEFERRED_TRANSFORMS
            and root_name(call.func.value) in roots
            for call in self.index.calls
        )

    def _bound_name(self, loader: DataLoaderConstruction) -> cst.Name | None:
        """The name the construction is assigned to alone (`loader = DataLoader(...)`)."""
        parent = self.index.parents.get(loader.call)
        if (
            isinstance(parent, cst.Assign)
            and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)
        ):
            return parent.targets[0].target
        return None

    def read_once(self, loader: DataLoaderConstruction) -> bool:
        """The loader is only ever read for one batch: `next(iter(DataLoader(...)))`, or a
        name bound to it that is used nowhere but in `next(iter(name))` (or
        `iter(name).next()`), in `it =
        iter(name)` whose iterator is only read by `next(it)` (or `it.next()`) outside loops,
        and in loops that do nothing with their batches (`for images, labels in loader:
        pass`, an input pipeline shown in a tutorial)."""
        if _first_batch_of(self.index.parents, loader.call):
            return True
        bound = self._bound_name(loader)
        if bound is None:
            return False
        reads = [read for read in self._other_reads(bound) if _is_read(self.index.parents, read)]
        return bool(reads) and all(
            _first_batch_of(self.index.parents, read)
            or self._iterator_read_once(read)
            or _iterated_for_nothing(self.index.parents, read)
            for read in reads
        )

    def never_read(
        self, loader: DataLoaderConstruction, notebook_names: frozenset[str] | None
    ) -> bool:
        """The loader is bound to a name that nothing reads: in its function (nested
        functions included), in its module when it is bound in the module's `if __name__ ==
        "__main__":` block (a demo: no module imports what only running the script binds),
        or, at the top of a notebook, which no module imports, in any cell, IPython lines
        included (`notebook_names`, the names they mention, such as `%time train(model,
        loader)`; None for a module). A loader built and left unused loads nothing."""
        bound = self._bound_name(loader)
        if bound is None:
            return False
        function = self.scopes.enclosing_function(bound)
        if (
            function is None
            and not under_main_guard(self.scopes, bound)
            and (notebook_names is None or bound.value in notebook_names)
        ):
            return False  # another module may import it, or an IPython line reads it
        names = self._names_by_identifier.get(bound.value, ())
        if function is not None:
            inside = set(map(id, self.index.inside(self.index.names, function)))
            names = [name for name in names if id(name) in inside]
        return not any(
            name is not bound and _is_read(self.index.parents, name) for name in names
        )

    def _other_reads(self, bound: cst.Name) -> list[cst.Name]:
        """The uses of the name `bound` binds, in its function, but `bound` itself."""
        function = self.scopes.enclosing_function(bound)
        return [
            name for name in self._names_by_identifier.get(bound.value, ())
            if name is not bound and self.scopes.enclosing_function(name) is function
        ]

    def _iterator_read_once(self, read: cst.Name) -> bool:
        """`it = iter(read)`, with `it` used only in `next(it)` calls outside loops."""
        call = _called_with(self.index.parents, read, "iter")
        assignment = self.index.parents.get(call) if call is not None else None
        if not (
            isinstance(assignment, cst.Assign)
            and len(assignment.targets) == 1
            and isinstance(assignment.targets[0].target, cst.Name)
        ):
            return False
        uses = self._other_reads(assignment.targets[0].target)
        return bool(uses) and all(
            (
                _called_with(self.index.parents, use, "next") is not None
                or _next_method_called(self.index.parents, use)
            )
            and not self.scopes.in_a_loop(use)
            for use in uses
        )

    def converted_by_sentence_transformers(self, loader: DataLoaderConstruction) -> bool:
        """The loader is handed to sentence-transformers' `fit` (`model.fit(train_objectives=[
        (loader, loss)])`, `CrossEncoder(...).fit(loader)`) and no loop of the module iterates
        it: `fit` reads it once with an identity collate to build a `datasets.Dataset` and
        trains from its own Trainer's loader, so this loader's settings never reach a step."""
        if any(self.loader_of(loop) == loader for loop in self.index.loops):
            return False
        for call in self._fit_calls:
            objectives = next(
                (arg.value for arg in call.args
                 if arg.keyword is not None and arg.keyword.value == "train_objectives"),
                None,
            )
            if objectives is not None:
                handed = [objectives, *descendants(objectives)]
            elif self._is_sentence_transformers(call.func.value):
                handed = [arg.value for arg in call.args]
            else:
                continue
            if any(
                isinstance(node, cst.BaseExpression) and self.construction(node) == loader
                for node in handed
            ):
                return True
        return False

    @cached_property
    def _fit_calls(self) -> list[cst.Call]:
        return [
            call for call in self.index.calls
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "fit"
        ]

    def _is_sentence_transformers(self, receiver: cst.BaseExpression) -> bool:
        """A `SentenceTransformer` or `CrossEncoder` of `sentence_transformers`, or a name
        bound to one."""
        return any(
            isinstance(value, cst.Call)
            and (self.names.call_name(value) or "").startswith("sentence_transformers.")
            for value in self.scopes.bound_values(receiver)
        )

    def draws_a_handful(self, loader: DataLoaderConstruction) -> bool:
        """The loader's sampler draws a handful of samples (`RandomGeoSampler(dataset,
        size=4096, length=3)`, `RandomSampler(data, num_samples=8)`): a look at a few
        samples, to plot them, not a pass over the data."""
        sampler = loader.argument("sampler")
        if sampler is None:
            return False
        values = self.scopes.bound_values(sampler.value) or [sampler.value]
        return all(
            isinstance(value, cst.Call)
            and any(
                arg.keyword is not None
                and arg.keyword.value in _SAMPLE_COUNT_KEYWORDS
                and isinstance(count := literal_value(arg.value), int)
                and not isinstance(count, bool)
                and count <= _HANDFUL
                for arg in value.args
            )
            for value in values
        )

    def read_by_a_capped_run(self, loader: DataLoaderConstruction) -> bool:
        """Every read of the loader's name hands it to a trainer that reads a handful of its
        batches, 16 at most (`Trainer(train_dataloader=loader, train_subset_num_batches=5)`,
        `Trainer(limit_train_batches=5).fit(model, loader)`, `fast_dev_run=True`): an API
        demo or a smoke run, not a pass over the data."""
        bound = self._bound_name(loader)
        if bound is not None:
            reads = self._reads_of(bound)
        else:
            reads = [loader.call]  # built in the call's arguments
        return bool(reads) and all(self._handed_to_a_capped_run(read) for read in reads)

    def _handed_to_a_capped_run(self, read: cst.BaseExpression) -> bool:
        argument = self.index.parents.get(read)
        call = self.index.parents.get(argument)
        if not isinstance(argument, cst.Arg) or not isinstance(call, cst.Call):
            return False
        if argument.keyword is not None:
            role = argument.keyword.value
        elif last_identifier(call.func) == "fit":
            role = _FIT_POSITIONS.get(call.args.index(argument), "")
        else:
            return False
        caps = _CAPS_BY_ROLE.get(role)
        if caps is None:
            return False
        trainers = [call]
        if isinstance(call.func, cst.Attribute):  # `trainer.fit(...)`, `Trainer(...).fit(...)`
            receiver = call.func.value
            trainers += [
                value for value in self.scopes.bound_values(receiver) or [receiver]
                if isinstance(value, cst.Call)
            ]
        return any(
            arg.keyword is not None and arg.keyword.value in caps and _a_handful(arg.value)
            for trainer in trainers
            for arg in trainer.args
        )

    def loops_reading(self, loader: DataLoaderConstruction, hops: int = 0) -> list[cst.For] | None:
        """The `for` loops that iterate the loader's name (`for batch in tqdm(loader):`),
        when they are all its reads but for its length and attributes (`len(loader)`,
        `loader.dataset`); None when the loader is read another way (passed on, returned)
        or not bound to a name. With `hops`, a read that hands it to a function of this
        module (`test(model, test_loader)`) stands for the loops that iterate that parameter,
        when they are all its reads there, through that many calls at most."""
        bound = self._bound_name(loader)
        if bound is None:
            return None
        loops = []
        for read in self._reads_of(bound):
            found = self._loops_over(read, hops)
            if found is None:
                return None
            loops.extend(found)
        return loops or None

    def _loops_over(self, read: cst.Name, hops: int) -> list[cst.For] | None:
        """The loop that iterates `read`, none for a read of its length or an attribute, or
        (with `hops` left) those that iterate the parameter of the module's function that
        `read` is passed to; None for another read."""
        loop = self._loop_iterating(read)
        if isinstance(loop, cst.For):
            return [loop]
        if self._reads_length_or_attribute(read):
            return []
        argument = self.index.parents.get(read)
        call = self.index.parents.get(argument) if isinstance(argument, cst.Arg) else None
        if not hops or not isinstance(call, cst.Call):
            return None
        reads = self._parameter_reads(call, argument)
        if reads is None:
            return None
        loops = []
        for name in reads:
            found = self._loops_over(name, hops - 1)
            if found is None:
                return None
            loops.extend(found)
        return loops or None

    def _parameter_reads(self, call: cst.Call, argument: cst.Arg) -> list[cst.Name] | None:
        """The reads, in the callee, of the parameter of a function of this module that
        `argument` of `call` binds; None when `call` runs no such function."""
        parameter = self._parameter_for(call, argument)
        if parameter is None:
            return None
        callee = self.scopes.enclosing_function(parameter)
        return [
            name for name in self._names_by_identifier.get(parameter.name.value, ())
            if name is not parameter.name
            and _is_read(self.index.parents, name)
            and self.scopes.enclosing_function(name) is callee
        ]

    def read_in_one_pass_after_training(
        self, loader: DataLoaderConstruction, loops: Loops
    ) -> bool:
        """The loader, bound to a name, is read only by passes that run once, after its
        function (or the module) has trained: a loop over it that no other loop encloses and
        that trains nothing (an embedding pass, a final test), or a call, outside any loop, of
        a function of this module that reads its parameter so (`evaluate(test_loader)` after
        the epoch loop). Reading its length or attributes is no pass. Loading cost there is
        paid once, not per step, next to a whole training."""
        bound = self._bound_name(loader)
        if bound is None:
            return False
        reads = self._reads_of(bound)
        return bool(reads) and all(
            self._one_pass_after_training(read, loader, loops) for read in reads
        )

    def _reads_of(self, bound: cst.Name) -> list[cst.Name]:
        """The reads of the name `bound` binds: in its function, or anywhere in the module
        for a module-level name (a function may read the global)."""
        function = self.scopes.enclosing_function(bound)
        return [
            name for name in self._names_by_identifier.get(bound.value, ())
            if name is not bound
            and _is_read(self.index.parents, name)
            and (function is None or self.scopes.enclosing_function(name) is function)
        ]

    def _one_pass_after_training(
        self, read: cst.Name, loader: DataLoaderConstruction | None, loops: Loops, depth: int = 0
    ) -> bool:
        """`read` takes the loader's length or an attribute, is iterated by a single pass
        (`_single_pass`), or hands it to a function of this module, outside any loop, that
        reads its parameter only so. With `loader` (the caller's read), the pass must come
        after a training in its scope."""
        if self._reads_length_or_attribute(read):
            return True
        parent = self.index.parents.get(read)
        loop = self._loop_iterating(read)
        if loop is not None:
            return self._single_pass(loop, loops) and (
                loader is None or self._after_training(loop, loops)
            )
        argument = parent if isinstance(parent, cst.Arg) else None
        call = self.index.parents.get(argument) if argument is not None else None
        if isinstance(call, cst.Call) and _one_pass_of_a_trainer(call) and not loops.enclosing_loops(call):
            return True  # `trainer.test(model, dataloaders=test_loader)`, after a fit or alone
        if not isinstance(call, cst.Call) or depth > 1 or loops.enclosing_loops(call):
            return False
        reads = self._parameter_reads(call, argument)
        if reads is None:
            return False
        return (
            bool(reads)
            and all(self._one_pass_after_training(name, None, loops, depth + 1) for name in reads)
            and (loader is None or self._after_training(call, loops))
        )

    def _reads_length_or_attribute(self, read: cst.Name) -> bool:
        """`len(loader)`, `loader.dataset`, `loader.batch_size`: no pass over the batches."""
        parent = self.index.parents.get(read)
        return (
            isinstance(parent, cst.Attribute) and parent.value is read
            or _called_with(self.index.parents, read, "len") is not None
        )

    def _loop_iterating(self, read: cst.Name) -> cst.For | cst.CompFor | None:
        """The `for` loop or comprehension that iterates `read` (`for x in read`,
        `enumerate(read)`, `[f(x) for x in read]`)."""
        for parent, child in self.scopes.ancestors_with_child(read):
            if isinstance(parent, cst.For):
                return parent if child is parent.iter and iterated_expression(parent) is read else None
            if isinstance(parent, cst.CompFor):
                return parent if child is parent.iter and parent.iter is read else None
            if isinstance(parent, (cst.BaseStatement, cst.BaseSmallStatement)):
                return None
        return None

    def _single_pass(self, loop: cst.For | cst.CompFor, loops: Loops) -> bool:
        """A loop (or comprehension) that no other loop of its function encloses and that
        trains nothing, in its body or a loop inside it."""
        if loops.enclosing_loops(loop):
            return False
        return isinstance(loop, cst.CompFor) or not loops.trains_within(loop)

    def _after_training(self, node: cst.CSTNode, loops: Loops) -> bool:
        """Before `node`, its function (the module, at module level) has trained: a training
        loop, or a call of a function of this module that holds one (`train(loader)` in the
        epoch loop), ends before it starts, or a Lightning `Trainer.fit` call does."""
        function = self.scopes.enclosing_function(node)
        start = self.index.preorder[node]
        if any(
            loop.function is function and self.index.subtree_end[loop.node] < start
            for loop in loops.training_loops
        ):
            return True
        trainers = {loop.function.name.value for loop in loops.training_loops if loop.function}
        return any(
            self.index.subtree_end[call] < start
            and self.scopes.enclosing_function(call) is function
            and self._trains(call, trainers)
            for call in self.index.calls
        )

    def _trains(self, call: cst.Call, trainers: set[str]) -> bool:
        """`call` runs a function of this module with a training loop, or is a Lightning
        Trainer's `fit`."""
        if isinstance(call.func, cst.Name):
            return call.func.value in trainers
        return (
            isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "fit"
            and any(
                isinstance(value, cst.Call) and is_lightning_name(self.names.call_name(value) or "")
                for value in self.scopes.bound_values(call.func.value)
            )
        )

    def _parameter_for(self, call: cst.Call, argument: cst.Arg) -> cst.Param | None:
        """The parameter of a function of this module (called by its name) that `argument`
        binds."""
        if not isinstance(call.func, cst.Name):
            return None
        functions = [f for f in self.index.functions if f.name.value == call.func.value]
        if len(functions) != 1 or self.scopes.enclosing_class(functions[0]) is not None:
            return None
        params = functions[0].params
        positional = [*params.posonly_params, *params.params]
        if argument.keyword is not None:
            return next(
                (p for p in (*positional, *params.kwonly_params)
                 if p.name.value == argument.keyword.value),
                None,
            )
        if argument.star:
            return None
        position = call.args.index(argument)
        return positional[position] if position < len(positional) else None

    def iterable_dataset_without_sharding(self, loader: DataLoaderConstruction) -> bool:
        """The dataset is an instance of a class of this module derived from `IterableDataset`
        that never calls `get_worker_info()`: every worker would yield every sample."""
        dataset = loader.argument("dataset")
        if dataset is None:
            return False
        constructions = [dataset.value, *self.scopes.bound_values(dataset.value)]
        classes = {cls.name.value: cls for cls in self.index.classes}
        for value in constructions:
            if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name):
                continue
            cls = classes.get(value.func.value)
            if cls is None or not any(
                self.names.qualified_name(base.value) in _ITERABLE_DATASETS for base in cls.bases
            ):
                continue
            return not any(
                isinstance(node, (cst.Name, cst.Attribute))
                and last_identifier(node) == "get_worker_info"
                for node in descendants(cls)
            )
        return False

    def moves_batches_to_device(self, loop: LoopNode) -> bool:
        """Whether a `for` loop sends values of the batches it iterates to an accelerator:
        `x.cuda()`, `x.to(device)`, `torch.as_tensor(x, device=device)`, or a call given a
        batch value and a device (`send_to_device(batch, device)`), where `x` is a loop target
        or a value the loop derives from one (`x, y = batch`, `{k: v.to(device) for k, v in
        batch.items()}`)."""
        if loop not in self._moves_batches:
            self._moves_batches[loop] = self._moves_batches_to_device(loop)
        return self._moves_batches[loop]

    def _moves_batches_to_device(self, loop: LoopNode) -> bool:
        if not isinstance(loop, cst.For):
            return False
        body = list(descendants_in_scope(loop.body))
        derived = target_names(loop.target)
        changed = True
        while changed:
            changed = False
            for node in body:
                bound = _derived_targets(node, derived)
                if not bound <= derived:
                    derived |= bound
                    changed = True
        return any(
            isinstance(node, cst.Call) and self._sends_to_device(node, derived) for node in body
        )

    def moved_by_a_framework(self, loader: DataLoaderConstruction) -> bool:
        """A framework puts the loader's batches on the device itself: Accelerate
        (`accelerator.prepare(model, loader)`), Fabric (`fabric.setup_dataloaders(loader)`),
        or Lightning (a loader built in a `train_dataloader`-style hook of a
        `LightningModule` or `LightningDataModule`, which the Trainer iterates)."""
        return self._handed_to_a_framework(
            lambda expression: self.construction(expression) == loader
        ) or self._in_lightning_loader_hook(loader.call)

    def prepared_by_a_framework(self, name: cst.Name | cst.Attribute) -> bool:
        """The loader bound to `name` (built elsewhere: `loader = build_loader(args)`) is
        handed to `accelerator.prepare(...)` or `fabric.setup_dataloaders(...)` in the
        function that reads `name`."""
        dotted = dotted_name(name)
        function = self.scopes.enclosing_function(name)
        return self._handed_to_a_framework(
            lambda expression: dotted_name(expression) == dotted
            and self.scopes.enclosing_function(expression) is function
        )

    def copied_blocking_by_accelerate(self, iterated: cst.BaseExpression) -> bool:
        """The loader `iterated` names is one `accelerator.prepare(...)` returned, in the
        function that reads it or at module level (`model, loader = accelerator.prepare(model,
        loader)`), in a module that leaves Accelerate's batch copies as they are by default:
        blocking (no `DataLoaderConfiguration`, whose `non_blocking=True` makes them
        asynchronous, and no `dataloader_config=` of an `Accelerator`)."""
        if not isinstance(iterated, cst.Name) or self._configures_accelerate_copies:
            return False
        functions = {self.scopes.enclosing_function(iterated), None}
        for call in self._framework_calls:
            assignment = self.index.parents.get(call)
            if (
                call.func.attr.value != "prepare"
                or type(assignment) is not cst.Assign
                or assignment.value is not call
                or self.scopes.enclosing_function(call) not in functions
                or not self._is_accelerator(call.func.value)
            ):
                continue
            if any(iterated.value in target_names(target.target) for target in assignment.targets):
                return True
        return False

    @cached_property
    def _configures_accelerate_copies(self) -> bool:
        return any(
            last_identifier(call.func) == "DataLoaderConfiguration"
            or any(arg.keyword is not None and arg.keyword.value == "dataloader_config" for arg in call.args)
            for call in self.index.calls
        )

    def _handed_to_a_framework(self, is_loader: Callable[[cst.BaseExpression], bool]) -> bool:
        for call in self._framework_calls:
            if not any(is_loader(arg.value) for arg in call.args):
                continue
            if call.func.attr.value == "setup_dataloaders":
                return True
            if self._is_accelerator(call.func.value):
                return True
        return False

    @cached_property
    def _names_by_identifier(self) -> dict[str, list[cst.Name]]:
        """The module's names by identifier: every loader bound to a name asks for its reads."""
        found: dict[str, list[cst.Name]] = {}
        for name in self.index.names:
            found.setdefault(name.value, []).append(name)
        return found

    @cached_property
    def _framework_calls(self) -> list[cst.Call]:
        """The `x.prepare(...)` and `x.setup_dataloaders(...)` calls: found once, since every
        loader asks about them."""
        return [
            call
            for call in self.index.calls
            if isinstance(call.func, cst.Attribute)
            and call.func.attr.value in ("prepare", "setup_dataloaders")
        ]

    def is_returned(self, loader: DataLoaderConstruction) -> bool:
        """The loader is what its function returns (`return DataLoader(...)`, or the name bound
        to it) or yields its batches (`yield from loader`): a loader factory, whose callers
        iterate the batches."""
        parent = self.index.parents.get(loader.call)
        if isinstance(parent, cst.Return):
            return True
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
            return False
        name = dotted_name(parent.targets[0].target)
        function = self.scopes.enclosing_function(parent)
        return name is not None and any(
            self.scopes.enclosing_function(node) is function
            for node in self._handing_out.get(name, ())
        )

    @cached_property
    def _handing_out(self) -> dict[str, list[cst.Return | cst.Yield]]:
        """The `return` and `yield` statements of the module by the dotted name they hand out
        (`return loader`, `yield from self.loader`): found once, since every loader asks."""
        found: dict[str, list[cst.Return | cst.Yield]] = {}
        for node in self.index.parents:
            if type(node) is cst.Return or type(node) is cst.Yield:  # by type, as in `index`
                value = _handed_out(node)
                name = dotted_name(value) if value is not None else None
                if name is not None:
                    found.setdefault(name, []).append(node)
        return found

    def built_for_a_final_pass(self, loader: DataLoaderConstruction) -> bool:
        """Built by a class's `test_dataloader` or `predict_dataloader` hook (or a private
        method assigned to one: `self.test_dataloader = self._test_dataloader`): Lightning
        reads those loaders only in `trainer.test()` and `trainer.predict()`, one pass each."""
        function = self.scopes.enclosing_function(loader.call)
        return (
            function is not None
            and function.name.value.lstrip("_") in _ONE_PASS_LOADER_HOOKS
            and self.scopes.enclosing_class(function) is not None
        )

    def loader_hook_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose `train_dataloader`-style method builds `node`, the hooks a
        Lightning Trainer calls for its loaders (if the class derives from Lightning's)."""
        function = self.scopes.enclosing_function(node)
        if function is None or function.name.value not in _LIGHTNING_LOADER_HOOKS:
            return None
        return self.scopes.enclosing_class(function)

    def _in_lightning_loader_hook(self, node: cst.CSTNode) -> bool:
        owner = self.loader_hook_class(node)
        return owner is not None and any(
            is_lightning_name(self.names.qualified_name(base.value) or "") for base in owner.bases
        )

    def _is_accelerator(self, expression: cst.BaseExpression) -> bool:
        """`accelerate.Accelerator(...)`, or a name bound to one (or named after one)."""
        if isinstance(expression, cst.Call):
            return (self.names.call_name(expression) or "").startswith("accelerate.")
        values = self.scopes.bound_values(expression)
        if values:
            return any(self._is_accelerator(value) for value in values if isinstance(value, cst.Call))
        return "accelerator" in (last_identifier(expression) or "").lower()

    def _sends_to_device(self, call: cst.Call, derived: set[str]) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and _part_of(func.value) in derived:
            if func.attr.value == "cuda":
                return True
            if func.attr.value == "to":
                target = bound_argument(call, "device", SIGNATURES["Tensor.to"])
                return isinstance(target, cst.Arg) and is_accelerator_target(
                    target.value, self.names, self.scopes
                )
        passes_batch = any(root_name(arg.value) in derived for arg in call.args)
        return passes_batch and any(
            (arg.keyword is not None and arg.keyword.value == "device"
             and not is_cpu_device(arg.value, self.names, self.scopes))
            or self._names_a_device(arg.value)
            for arg in call.args
            if root_name(arg.value) not in derived
        )

    def _names_a_device(self, expression: cst.BaseExpression) -> bool:
        """`"cuda"`, `device`, `accelerator.device`, `self.device`: a device passed along."""
        if mentions_cuda_device(expression, self.scopes):
            return True
        identifier = (last_identifier(expression) or "").lower()
        return "device" in identifier and not is_cpu_device(expression, self.names, self.scopes)


def _takes_loader_arguments(cls: cst.ClassDef) -> bool:
    """A class whose construction takes what `DataLoader(...)` takes: it defines no
    `__init__`, or one with `self, *args, **kwargs` only."""
    for init in methods_of(cls, ("__init__",)):
        params = init.params
        if len(params.params) != 1 or params.posonly_params or params.kwonly_params:
            return False
        if not isinstance(params.star_arg, cst.Param) or params.star_kwarg is None:
            return False
    return True


def _method_chain(expression: cst.BaseExpression) -> tuple[cst.BaseExpression, list[str]]:
    """(the receiver at the root, the methods called on it) of `x.map(f).rename_column(...)`;
    subscripts are seen through."""
    methods = []
    while True:
        if isinstance(expression, cst.Subscript):
            expression = expression.value
        elif isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute):
            methods.append(expression.func.attr.value)
            expression = expression.func.value
        else:
            return expression, methods


def _updates(value: cst.BaseExpression, name: str | None) -> bool:
    """`value` is a method chain on `name` itself (`x = x.rename_column("a", "b")`)."""
    root, methods = _method_chain(value)
    return bool(methods) and name is not None and dotted_name(root) == name


def _arrow_chain(value: cst.BaseExpression) -> bool:
    return all(method in _ARROW_METHODS for method in _method_chain(value)[1])


def _maps(value: cst.BaseExpression) -> bool:
    return "map" in _method_chain(value)[1]


def _one_pass_of_a_trainer(call: cst.Call) -> bool:
    """`trainer.test(...)`, `trainer.predict(...)`, `trainer.validate(...)`: a Lightning-style
    Trainer reads the loaders it is given in one pass."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value in _ONE_PASS_TRAINER_METHODS
        and "trainer" in (last_identifier(func.value) or "").lower()
    )


def _first_batch_of(parents: dict[cst.CSTNode, cst.CSTNode], loader: cst.CSTNode) -> bool:
    """`loader` is the argument of `iter(...)`, itself the argument of `next(...)` or read
    by its `.next()` (`iter(loader).next()`)."""
    inner = _called_with(parents, loader, "iter")
    return inner is not None and (
        _called_with(parents, inner, "next") is not None or _next_method_called(parents, inner)
    )


def _next_method_called(parents: dict[cst.CSTNode, cst.CSTNode], iterator: cst.CSTNode) -> bool:
    """`iterator.next()`, the Python 2 spelling of `next(iterator)` in old tutorials."""
    attribute = parents.get(iterator)
    return (
        isinstance(attribute, cst.Attribute)
        and attribute.attr.value == "next"
        and isinstance(parents.get(attribute), cst.Call)
    )


def _iterated_for_nothing(parents: dict[cst.CSTNode, cst.CSTNode], loader: cst.CSTNode) -> bool:
    """`loader` is what a `for` loop iterates whose body is only `pass` or `...`."""
    loop = parents.get(loader)
    if not isinstance(loop, cst.For) or loop.iter is not loader or loop.orelse is not None:
        return False
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else [loop.body]
    return all(
        isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        and all(
            isinstance(small, cst.Pass)
            or isinstance(small, cst.Expr) and isinstance(small.value, cst.Ellipsis)
            for small in line.body
        )
        for line in body
    )


def _called_with(
    parents: dict[cst.CSTNode, cst.CSTNode], argument: cst.CSTNode, function: str
) -> cst.Call | None:
    arg = parents.get(argument)
    call = parents.get(arg) if isinstance(arg, cst.Arg) else None
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == function:
        return call
    return None


def _argument_for(call: cst.Call, parameter: str, positional: list[str]) -> cst.BaseExpression | None:
    """The argument `call` passes for `parameter` (by keyword, or by position among
    `positional`), or None when it passes none or it cannot be told (`*args`, `**kwargs`)."""
    for position, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == parameter:
                return arg.value
        elif position < len(positional) and positional[position] == parameter:
            return arg.value
    return None


# The parents of a name that binds it rather than reads it (`_is_read`).
_BINDING_PARENTS = frozenset({cst.Param, cst.AssignTarget, cst.FunctionDef, cst.ClassDef})
_TARGET_PARENTS = frozenset({cst.AnnAssign, cst.AugAssign})


def _a_handful(value: cst.BaseExpression) -> bool:
    """A literal count of 16 or fewer batches, or `True` (Lightning's `fast_dev_run`: one)."""
    count = literal_value(value)
    return count is True or (type(count) is int and 0 < count <= _HANDFUL)


def _is_read(parents: dict[cst.CSTNode, cst.CSTNode], name: cst.Name) -> bool:
    """`name` reads a variable: not an attribute's name (`x.loader`), a keyword
    (`f(loader=...)`), a parameter or the target of an assignment."""
    parent = parents.get(name)
    kind = type(parent)  # asked of every name a loader may be bound to: by type, as in `index`
    if kind is cst.Attribute and parent.attr is name:
        return False
    if kind is cst.Arg and parent.keyword is name:
        return False
    if kind in _BINDING_PARENTS:
        return False
    return not (kind in _TARGET_PARENTS and parent.target is name)


def _handed_out(node: cst.Return | cst.Yield) -> cst.BaseExpression | None:
    """What a `return` or `yield` gives its caller; for `yield from loader`, the loader."""
    value = node.value
    return value.item if isinstance(value, cst.From) else value


def _part_of(expression: cst.BaseExpression) -> str | None:
    """The name a value is taken from: `batch` for `batch["x"]`, `batch.x`, and also through
    method calls, `batch.pop("x")`, `batch.get("x")`, `batch["x"].float()`."""
    while True:
        if isinstance(expression, (cst.Attribute, cst.Subscript)):
            expression = expression.value
        elif isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute):
            expression = expression.func.value
        else:
            return expression.value if isinstance(expression, cst.Name) else None


def _derived_targets(node: cst.CSTNode, derived: set[str]) -> set[str]:
    """The names `node` binds from a value that reads one of `derived`: an assignment, a
    comprehension's `for`, a nested `for` loop."""
    kind = type(node)  # asked of every node of a loop: by type, as in `index`
    if kind is cst.Assign and _reads(node.value, derived):
        return {name for target in node.targets for name in target_names(target.target)}
    if (kind is cst.CompFor or kind is cst.For) and _reads(node.iter, derived):
        return target_names(node.target)
    return set()


def _reads(expression: cst.CSTNode, names: set[str]) -> bool:
    return any(
        isinstance(node, cst.Name) and node.value in names
        for node in (expression, *descendants(expression))
    )


__all__ = ["DATALOADER", "MISSING", "UNKNOWN", "DataLoaderConstruction", "DataLoaders"]


def _names_an_index_set(expression: cst.BaseExpression) -> bool:
    """A name or attribute of a set of sample indices: `train_idx`, `self.val_indices`."""
    return isinstance(expression, (cst.Name, cst.Attribute)) and bool(
        _INDEX_SET.search(last_identifier(expression) or "")
    )


def _names_a_tokenizer(identifier: str) -> bool:
    """`tokenizer.pad_token_id`, `pad_idx`, `self.tokenizer`: a padding id, or a tokenizer."""
    return identifier in _PADDING_IDS or "tokenizer" in identifier.lower()


def _names_pixels(identifier: str) -> bool:
    """`image_processor`, `pixel_values`, `audio`: a name of images or audio."""
    return any(word in identifier.lower() for word in _PIXEL_WORDS)
