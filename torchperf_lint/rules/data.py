"""TPL1xx — data pipeline and host-to-device transfer."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchperf_lint.conventions import is_lightning_name
from torchperf_lint.diagnostics import Applicability
from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.arguments import (
    MISSING,
    SIGNATURES,
    UNKNOWN,
    bound_argument,
    literal_value,
)
from torchperf_lint.facts.dataloaders import DataLoaderConstruction
from torchperf_lint.facts.devices import (
    creates_cuda_tensor,
    is_cpu_device,
    is_dtype,
)
from torchperf_lint.facts.guards import iteration_counter
from torchperf_lint.facts.index import descendants, statements_of
from torchperf_lint.facts.loops import LoopFacts
from torchperf_lint.facts.names import dotted_name, last_identifier
from torchperf_lint.rules.base import PYTORCH_0_4, Finding, ProposedFix, Rule
from torchperf_lint.rules.edits import add_keyword

DATA_DOCS = "https://pytorch.org/docs/stable/data.html#multi-process-data-loading"
PIN_DOCS = "https://pytorch.org/docs/stable/data.html#memory-pinning"

TO_SIGNATURE = SIGNATURES["Tensor.to"]

# What the fix proposes: enough workers to overlap loading with compute on most machines,
# without the oversubscription of one worker per core on a many-core box.
SUGGESTED_WORKERS = 4


def trains_at_import_time(facts: FileFacts) -> bool:
    """A hot loop at module level outside `if __name__ == "__main__":`.

    Spawned DataLoader workers (the default on Windows and macOS) re-import the main module,
    so such a module would start training again in every worker.
    """
    return any(
        loop.function is None and loop.is_hot and not facts.guards.under_main_guard(loop.node)
        for loop in facts.loops.all
    )


class DataLoaderNoWorkers(Rule):
    """`DataLoader` loads every batch in the training process (`num_workers` is 0).

    ## What it does
    Checks for `DataLoader(...)` calls without `num_workers`. An explicit `num_workers=0` is a
    decision (debugging, a platform without `fork`, a dataset that must stay in the process)
    and is left alone, like an explicit `pin_memory=False` for TPL102.

    It stays silent where workers would gain nothing: datasets that already hold their
    samples in memory (a `TensorDataset`, a `range`, a set of sample indices named so,
    `self.dataset.train_idx`, when no `collate_fn` loads from them, a list or other literal, a list built by
    an expression such as `list(InputExample(...) for ...)` or `gold + silver`, a mock or other
    stand-in such as `MagicMock()` or `DummyDataset()`, a tensor (`DataLoader(train_idx,
    batch_size=1024)` over node indices), a NumPy array (`np.asarray(rows)`, scikit-learn's
    `check_array(X)`, a fitted scaler's `transform` of one), a dataset class of the module whose
    `__getitem__` or `__iter__` calls nothing but PyTorch's factories and `is_tensor`,
    builtins and tensor methods that read only their tensor (`idx.tolist()`), or NumPy's
    and SciPy's conversions of what it
    indexes (`torch.from_numpy(self.x[index].toarray()[0])`, a sparse matrix's row made
    dense; `{k: v[idx] for k, v in self.data.items()}`, a dict of precomputed features) (it only indexes what it holds, returns constants or
    makes up samples: `torch.randn(size)`, `self.data[start:end].long()` with `start` drawn
    from `torch.randint(0, self.data.size(0) - n, (1,))`, or
    `self._data[i]["input_ids"].type(torch.int64)`), a
    Hugging Face dataset preprocessed ahead of training with `.map` (also a split of one,
    `train, val = ds.train_test_split(0.2).values()`), or built from what the
    program holds (`Dataset.from_list(prompts)`, `from_dict`, `from_pandas`), and not
    transformed on access (`with_transform`, `set_transform`), a dataset read back whole from a file (`torch.load(path)`,
    `pickle.load(f)`: one saved after preprocessing, whose samples are in memory), and
    `Subset`/`ConcatDataset` of those; a dataset class or a
    dataset-returning function of another module of the project counts by what it does
    there, also as an item of the tuple it returns (`train_set, eval_set =
    create_prompt_dataset(...)` returning two `torch.load(...)`):
    `DataLoader(RandomTokenDataset(...))`, `DataLoader(get_dataset(tokenizer))`, and
    a function of the module by what it returns (`DataLoader(_generate_dataset(n, d))`
    returning a `TensorDataset`), either value of a conditional expression (`Rows(X, mean)
    if scale else Rows(X)`); a loader factory's parameter counts by what every caller
    in the module passes (a method's, by the calls of its class on `self`:
    `self._embed(net, X)`), also through a function's tuple return: `dataset, model,
    optimizer = load_train_objs()` then `prepare_dataloader(dataset, batch_size)`), and a
    parameter of a function or method of any module by what every caller outside tests
    passes, when they agree (a library's `learner.fit(dataset)`, whose examples pass
    in-memory datasets),
    loaders only read for one batch (`next(iter(loader))`, also `iter(loader).next()`, or
    `it = iter(loader)` then `next(it)` outside loops) or by loops that do nothing with their batches (`for x, y in
    loader: pass`, an input pipeline a tutorial shows), loaders a dataset class builds in
    its own methods (PyG's `process()` running a feature extractor once over the raw data),
    a library's convenience loader for callers that pass a dataset instead of their own
    loader (in the `else` of `if isinstance(train_dataset, DataLoader):`, or under `if not
    isinstance(...)`), and test files. It is silent too for loaders that nothing reads once
    per step: a loader bound to a name that nothing reads (in its function, in its module
    when the script's `if __name__ == "__main__":` block binds it, or in any cell of
    a notebook, IPython lines included: `%time train(model, loader)` reads it; a test loader
    built and never used); a loader handed to
    sentence-transformers' `fit` (`model.fit(train_objectives=[(loader, loss)])`,
    `CrossEncoder.fit(loader)`), which reads it once to build a dataset and trains from its
    own Trainer's loader; a loader whose only reads are one pass after the training of its
    function or module (an embedding pass, a final `evaluate(test_loader)` after the epoch
    loop: a loop over it, or a call of a function of the module that loops over its
    parameter, that no loop encloses and that trains nothing); a loader built and read
    once per call in a function the program calls every N steps only (an `evaluate()`
    that train.py runs under `if step % val_step == 0:`, building its loader each time; a
    pass run once, over a test set or a corpus, is still reported); and a loader a class's
    `test_dataloader` or `predict_dataloader` hook builds (also a private method assigned
    to one: `self.test_dataloader = self._test_dataloader`; Lightning reads it only in
    `trainer.test()` or `trainer.predict()`, one pass), or one handed to such a pass outside
    any loop (`trainer.test(model, dataloaders=test_loader)`, also `predict` and
    `validate`, after a fit or in an evaluation script); a loader whose sampler
    draws a handful of samples, 16 at most (`RandomGeoSampler(dataset, size=256,
    length=3)`, to plot them); a loader the trainer it is handed to reads a handful of
    batches of, 16 at most (Composer's `Trainer(train_dataloader=loader,
    train_subset_num_batches=5)`, Lightning's `Trainer(limit_train_batches=5)` or
    `fast_dev_run=True` then `.fit(model, loader)`: an API demo or a smoke run); a loader
    whose every read is a loop that only looks at the data (it runs no model, trains
    nothing, moves or builds nothing on a device and calls no function of its module: a dataset
    module's `__main__` block that plots the first images, a script that counts label
    tokens); and a loader built in a branch of its function that no
    caller takes (`if deterministic:` in `load_data(..., deterministic=False)`, whose every
    caller leaves it out). A loader read inside a loop (each epoch), before any training,
    or by a framework every step (a Lightning `Trainer.fit`, `accelerator.prepare`) is still
    reported. It is silent
    too where loading must stay in the training process: a dataset built from the running
    object's own state, a bound method
    (`ExperienceSourceDataset(self.generate_trajectory_samples)`, an RL agent collecting
    experience with the current policy) or a replay or rollout buffer the training fills,
    as the dataset or what it is built from (`RLDataset(self.buffer)`,
    `DataLoader(replay_buffer)`, `ReplayDataset(rollout_buffer)`, or the buffer handing
    itself over, `DataLoader(self)` in `class PPORolloutStorage(BaseRolloutStore)`): workers would sample
    from stale copies of it. And it is
    silent for a dataset class of the module whose `__getitem__` (or `__iter__`) moves its
    samples to the accelerator (`audio.to(self.device)`), or for a dataset a call builds
    on the accelerator (`generate_counterfactual_dataset(n, device="cuda:0")`, a list of
    GPU tensors): a forked worker cannot use CUDA.

    A `# noqa: TOR401` (TorchFix's code for the same check) silences it too.

    ## Why is this bad?
    With `num_workers=0` the main process reads, decodes and collates every batch itself, and
    the GPU waits while it does. Worker processes prepare the next batches while the model
    trains on the current one. Iterable datasets that already stream from their own workers are
    still flagged: the DataLoader's workers are what overlap loading with the training step.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4, persistent_workers=True)
    ```

    ## Fix safety
    Unsafe: workers need a picklable dataset and `collate_fn`, each worker holds a copy of the
    dataset, and random augmentation draws from per-worker generators. With
    `persistent_workers=True` the loader's iterator is created once instead of once per epoch,
    so it draws fewer seeds from the global generator and a shuffled loader visits the data in
    another order from the second epoch on (`torchperf-lint verify` reports this as
    `changes-results` on `examples/verify_demo.py -- --epochs 3`). The fix sets
    `num_workers=4` (tune it to your cores) and `persistent_workers=True`. It is display-only
    when the module trains at import time without an `if __name__ == "__main__":` guard:
    spawned workers (Windows, macOS) re-import the module and would run the training again.
    It is display-only too when the dataset is an `IterableDataset` of this module whose
    class never calls `torch.utils.data.get_worker_info()`: each worker would then iterate the
    whole dataset, and every sample would come once per worker.

    ## References
    - PyTorch docs, [Multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
    - PyTorch Performance Tuning Guide, [Enable asynchronous data loading and augmentation](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-asynchronous-data-loading-and-augmentation)
    - PyTorch docs, [`torch.utils.data.DataLoader`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
      (`num_workers`: "0 means that the data will be loaded in the main process")
    """

    code = "TPL101"
    name = "dataloader-no-workers"
    message = "`DataLoader` without `num_workers` loads batches in the training process; set `num_workers`"
    default = True
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        guarded = not trains_at_import_time(facts)
        loaders = facts.dataloaders
        for loader in loaders.constructions:
            if loader.value("num_workers") is not MISSING:
                continue  # `num_workers=0` written out is a decision, like any other value
            if loaders.dataset_in_memory(loader, facts.samples_elsewhere):
                continue
            dataset = loader.argument("dataset")
            if dataset is not None and facts.tensors.is_tensor(dataset.value):
                continue  # a tensor of indices or samples: batches are slices of it
            if loaders.read_once(loader) or loaders.built_by_a_dataset(loader):
                continue
            if loaders.wraps_a_dataset_given_instead(loader):
                continue
            if _never_read_per_step(facts, loader):
                continue
            if loaders.reads_live_state(loader):
                continue  # workers would sample from stale copies of the policy or buffer
            if loaders.moves_samples_to_device(loader):
                continue  # a forked worker cannot initialise CUDA
            new_call = add_keyword(loader.call, "num_workers", cst.Integer(str(SUGGESTED_WORKERS)))
            if loader.value("persistent_workers") is MISSING:
                new_call = add_keyword(new_call, "persistent_workers", cst.Name("True"))
            applicable = guarded and not loaders.iterable_dataset_without_sharding(loader)
            fix = self.replace(
                facts,
                loader.call,
                new_call,
                f"Load batches in {SUGGESTED_WORKERS} persistent worker processes",
                Applicability.UNSAFE if applicable else Applicability.DISPLAY_ONLY,
            )
            yield self.finding(loader.call, fix)


class DataLoaderNoPinMemory(Rule):
    """`DataLoader` feeding a CUDA model without `pin_memory=True`.

    ## What it does
    Checks for `DataLoader(...)` calls without `pin_memory=True` in a module that uses CUDA
    (or in every module, with `target-device = "cuda"`; never with `target-device = "cpu"`),
    when the module shows the loader's batches reaching the device: a loop over the loader
    (or, for a loader that no loop of the module iterates directly, a loop over a loader
    passed in, such as `for x, y in train_loader:` in a `train` function) sends a value of
    its batch there (`x.cuda()`, `x.to(device)`, `{k: v.to(device) for k, v in
    batch.items()}`, `send_to_device(batch, device)`), or a framework moves every batch
    itself: Accelerate (`accelerator.prepare(model, loader)`), Fabric
    (`fabric.setup_dataloaders(loader)`), Lightning (a loader built in the
    `train_dataloader`-style hooks of a `LightningModule` or `LightningDataModule`, also one
    derived through the project's own base class in another module). A loader
    that its function returns (a loader factory, `return DataLoader(...)`) or whose batches it
    yields (`yield from loader`) is iterated by the program that calls it, and counts as
    reaching the device.

    It stays silent when the batches are not seen to reach the device (strings, prompts,
    values a framework moves out of sight); when the loader's only loop is a pass that runs
    once before its function's training loop (caching latents or embeddings), or a dataset
    class builds it in its own methods (PyG's `process()`, once over the raw data), or it is
    a library's convenience for callers that pass a dataset instead of a loader, as for
    TPL101; when nothing reads it once per step, as for TPL101 (nothing reads it at all;
    sentence-transformers' `fit` converts it into a dataset; its only reads are one pass
    after training, an embedding pass or a final test, or a `test_dataloader` hook's; its
    sampler draws a handful of samples, or its trainer reads a handful of its batches; its
    loops only look at the data; it is built and read once per call of a function called
    every N steps; no caller takes the branch that builds it); for
    `DataLoader([])`, a stand-in that yields no batch; when its `collate_fn` is a project
    function that builds the batch from a plain class of its module without a `pin_memory`
    method, which pinning leaves as it is (DETR's `utils.collate_fn`, whose images become a
    `NestedTensor`: only the small targets would be pinned; also through a class method that
    returns an instance, `NestedTensor.from_tensor_list(...)`, and a `functools.partial` of
    the function, `partial(utils.collate_fn, False)`; also a method of the dataset's class,
    `collate_fn=dataset.collate_fn`, that builds it through a project function of another
    module: graph4nlp's `to_batch(graphs)`, returning its `GraphData`; or that builds an
    instance of such a class of another module, `return PaddedBatch(x, lengths)`, as
    pytorch-lifestream's collate functions do, directly or through a helper; when the
    collate function is one of two, `collate_wo_target if onnx else
    padded_collate_wo_target`, either of which builds such a batch; and for
    `collate_fn=train_data.collate_fn` of a dataset the function is given, when every
    project class's `collate_fn` builds one); when the dataset is a
    class of the module whose `__init__` and `__getitem__` call nothing (its samples are the
    Python values it was given, such as a prompt and an index: nothing to pin); when it is a
    range of indices
    (`torch.arange(n)`, `TensorDataset(torch.arange(len(bins)))`: a few integers per batch,
    whatever the loop then picks with them); when it is a Hugging Face dataset
    preprocessed ahead of training (`load_dataset(...).map(tokenize)`, indexed by split, not
    transformed on access), whose batches of token ids are too small for pinning to matter;
    when the dataset is a class of the module that makes up its samples with PyTorch's random
    factories and reads nothing (`RandomDataset`, a demo's or a test's stand-in for data);
    these last two also when the class, or a function that returns such a dataset, is in
    another module of the project (`DataLoader(RandomTokenDataset(...))`,
    `DataLoader(get_dataset(tokenizer))`);
    when the collate function makes batches of token ids (Hugging Face's text collators
    such as `DataCollatorWithPadding(tokenizer)`, a collate function given a tokenizer's
    padding id, or the tokenizer itself, and nothing about images or audio:
    `partial(padded_collate_sft, padding_idx=tokenizer.pad_id)`, `Collater(self.tokenizer,
    512)`, or a function defined beside the loader that pads with one of those, `def
    collate_fn(xs): return self.tokenizer.pad(...)`; not when the dataset names images or audio, `ImageCaptions(captions,
    image_processor=p)`) or no batch at all (`collate_fn=list` hands over the
    samples, prompts, as they are);
    when it is one of the datasets of tiny images
    (MNIST and its kin: 28×28 pixels, one channel; also through `Subset` and `random_split`), whose batches copy in microseconds
    either way (CIFAR's, six times larger, are still reported);
    when the dataset is built from the running object's own state, as for TPL101 (a bound
    method, `ExperienceSourceDataset(self.generate_trajectory_samples)`, or a replay buffer):
    such a loader must load in the training process, which would then pin every batch
    itself, an extra copy on the step's path;
    when every loop that reads the loader, in its function or in a function of the module
    it is handed to (`test(model, test_loader)`), trains nothing and copies the outputs of
    each batch back to the host (`embeddings.extend(model(x).cpu().numpy())`,
    `preds.append(out.argmax(1).tolist())`): an evaluation or an embedding pass that waits
    for the device on every batch and works on its outputs on the host, so a pinned,
    asynchronous copy of the next batch has nothing to overlap (a loop that reads one
    number per batch, `correct += (pred == y).sum().item()`, is still reported);
    when the loader is given no workers (`num_workers=0`, a decision TPL101 leaves alone, or
    no `num_workers` at all, which TPL101 reports): the training process loads every batch,
    and pinning it there adds a copy on the step's path for little (give it workers first;
    pinning pays once they load); when its batches hold one sample (`batch_size=1`: an
    evaluation or a tool that goes sample by sample, whose copies pinning would not shorten; not
    `batch_size=None`, or none given, which often serves a dataset that makes its own
    batches);
    when `pin_memory` is passed at all (an explicit `False` or an expression is a decision);
    when `**kwargs` may carry it; when the dataset
    is built from CUDA tensors in the same module or is a class of the module whose
    `__getitem__` moves its samples to the accelerator, or is what a call given an
    accelerator as `device=` builds (pinning CUDA tensors raises), and in test files.

    ## Why is this bad?
    Batches in pageable host memory are first copied by the driver into a pinned staging buffer
    and only then to the GPU, and the copy cannot overlap with compute. With `pin_memory=True`
    the loader's pin-memory thread puts batches in page-locked memory, so `.to(device,
    non_blocking=True)` copies them asynchronously while the GPU keeps working.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4)
    for x, y in loader:
        x, y = x.to("cuda"), y.to("cuda")
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
    ```

    ## Fix safety
    Unsafe: pinning raises when a batch already holds CUDA tensors, and page-locked memory is
    taken from the host's RAM for the lifetime of the buffers.

    ## References
    - PyTorch docs, [Memory pinning](https://pytorch.org/docs/stable/data.html#memory-pinning)
    - PyTorch tutorial, [A guide on good usage of `non_blocking` and `pin_memory()` in PyTorch](https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html)
    - PyTorch Performance Tuning Guide, [Enable asynchronous data loading and augmentation](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-asynchronous-data-loading-and-augmentation)
      ("When using a GPU it's better to set `pin_memory=True`")
    """

    code = "TPL102"
    name = "dataloader-no-pin-memory"
    message = "`DataLoader` in a CUDA module without `pin_memory=True`; pin batches for faster, async copies"
    default = True
    fix_applicability = Applicability.UNSAFE
    gains_only_on_cuda = True

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        # The program is asked about the device only where there is a loader to report.
        if not facts.dataloaders.constructions or not self.runs_on_cuda(facts):
            return
        for loader in facts.dataloaders.constructions:
            if loader.value("pin_memory") is not MISSING:
                continue
            dataset = loader.argument("dataset")
            if dataset is not None and creates_cuda_tensor(dataset.value, facts.scopes):
                continue
            if facts.dataloaders.moves_samples_to_device(loader):
                continue  # batches of CUDA tensors: pinning them raises
            if dataset is not None and _empty_literal(dataset.value):
                continue  # `DataLoader([])`: a stand-in that yields no batch
            if _never_read_per_step(facts, loader):
                continue
            if loader.value("num_workers") in (0, MISSING):
                continue  # loaded in the training process, which would pin it too (TPL101)
            if _single_samples(loader):
                continue  # one sample per step: a copy that pinning would not shorten
            elsewhere = facts.samples_elsewhere
            if facts.dataloaders.preprocessed_rows(loader, elsewhere):
                continue  # rows tokenized ahead of training: kilobytes of ids per batch
            if facts.dataloaders.holds_plain_values(loader):
                continue  # prompts and indices: no tensor to pin
            if facts.dataloaders.loads_indices(loader):
                continue  # `TensorDataset(torch.arange(n))`: a few integers per batch
            if facts.dataloaders.collates_token_ids(loader):
                continue  # padded token ids: kilobytes per batch
            collate = loader.argument("collate_fn")
            if collate is not None and any(
                facts.program.unpinnable_batch(function)
                for function in _collate_functions(facts, collate.value)
            ):
                continue  # DETR's `NestedTensor`: pinning leaves the images as they are
            if facts.dataloaders.built_by_a_dataset(loader):
                continue  # a dataset's one-time preprocessing pass
            if facts.dataloaders.wraps_a_dataset_given_instead(loader):
                continue
            if facts.dataloaders.makes_up_samples(loader, elsewhere):
                continue  # random stand-ins for data: a demo's, a test's
            if facts.dataloaders.tiny_images(loader):
                continue  # MNIST: batches copied in microseconds, pinned or not
            if facts.dataloaders.reads_live_state(loader):
                continue  # loaded in the training process, which would pin each batch too
            if not _batches_reach_the_device(facts, loader):
                continue
            if _evaluated_batch_by_batch(facts, loader):
                continue  # each batch's result is read back: the copy has nothing to overlap
            new_call = add_keyword(loader.call, "pin_memory", cst.Name("True"))
            fix = self.replace(facts, loader.call, new_call, "Add `pin_memory=True`")
            yield self.finding(loader.call, fix)


def _single_samples(loader: DataLoaderConstruction) -> bool:
    """`batch_size=1`: batches of one sample. (`batch_size=None`, or none given, often
    serves a dataset that makes its own batches.)"""
    size = loader.value("batch_size")
    return size is not True and size == 1


def _never_read_per_step(facts: FileFacts, loader: DataLoaderConstruction) -> bool:
    """Nothing reads the loader once per step: nothing reads it at all, sentence-transformers'
    `fit` converts it into a dataset and trains from its own loader, it is only read in one
    pass after training (an embedding pass, a final test, a `test_dataloader` hook's), its
    sampler draws a handful of samples, or the trainer it is handed to reads a handful of
    its batches, or its loops only look at the data, or it is built and read once per call
    of a function the program calls every N steps, or it is built in a branch of its
    function that no caller takes (`if deterministic:` with `deterministic=False`, which
    every caller leaves out: `Steps.callers_never_take`)."""
    loaders = facts.dataloaders
    return (
        facts.steps.callers_never_take(loader.call)
        or loaders.never_read(loader, facts.ipython_names)
        or loaders.built_for_a_final_pass(loader)
        or loaders.converted_by_sentence_transformers(loader)
        or loaders.read_in_one_pass_after_training(loader, facts.loops)
        or loaders.draws_a_handful(loader)
        or loaders.read_by_a_capped_run(loader)
        or _only_inspected(facts, loader)
        or _read_on_few_calls(facts, loader)
    )


def _read_on_few_calls(facts: FileFacts, loader: DataLoaderConstruction) -> bool:
    """The loader is built, and read by loops that train nothing and that no other loop
    encloses, in a function the program calls under periodic guards only
    (`ProgramFacts.called_periodically`): an evaluation every N steps that builds its
    loader anew each time, so workers would start a process pool per short pass. A pass
    run once may cover a whole corpus (a retrieval scoring, a test set's inference), and
    a `train()` that `main()` calls once trains on every batch of its loader."""
    function = facts.scopes.enclosing_function(loader.call)
    if function is None or facts.loops.enclosing_loops(loader.call):
        return False
    loops = facts.dataloaders.loops_reading(loader)
    return (
        loops is not None
        and all(
            facts.scopes.enclosing_function(loop) is function
            and not facts.loops.enclosing_loops(loop)
            and not facts.loops.by_node[loop].is_training
            for loop in loops
        )
        and facts.program.called_periodically(function)
    )


def _evaluated_batch_by_batch(facts: FileFacts, loader: DataLoaderConstruction) -> bool:
    """Every read of the loader is a loop, here or in the module's function it is handed to
    (`test(model, test_loader)`), that trains nothing and copies the outputs of each batch
    back to the host (`preds.append(out.cpu())`, `emb.to("cpu").numpy()`): the host waits
    for the device on every batch and then works on them, so a pinned, asynchronous copy
    of the next batch has nothing to overlap. A loop that only reads a number per batch
    (`correct += (pred == y).sum().item()`, a CIFAR test every epoch) is the device's work,
    which a faster copy shortens."""
    loops = facts.dataloaders.loops_reading(loader, hops=2)
    if loops is None:
        return False
    for loop in loops:
        if facts.loops.trains_within(loop):
            return False
        if not any(
            facts.host_syncs.copies_back(call)
            and facts.guards.runs_on_every_iteration(call, loop)
            for call in facts.index.inside(facts.index.calls, loop.body)
        ):
            return False
    return True


def _only_inspected(facts: FileFacts, loader: DataLoaderConstruction) -> bool:
    """Every read of the loader is a loop that only looks at the data: it runs no model,
    trains nothing, moves or builds nothing on a device (no `device=`) and calls no function
    of the module (a dataset module's `__main__` block that shows the first images with
    `plt.imshow`, a script that counts label tokens). No training step waits for its
    batches."""
    loops = facts.dataloaders.loops_reading(loader)
    if loops is None:
        return False
    defined = {function.name.value for function in facts.index.functions}
    return all(
        not any(
            facts.steps.runs_a_model(call)
            or facts.dataloaders.moves_batches_to_device(loop)
            or last_identifier(call.func) in ("backward", "step", "cuda", "to")
            or any(arg.keyword is not None and arg.keyword.value == "device" for arg in call.args)
            or (isinstance(call.func, cst.Name) and call.func.value in defined)
            or dotted_name(call.func) in ("self", "cls")
            or (dotted_name(call.func) or "").startswith("self.")
            for call in descendants(loop.body) if isinstance(call, cst.Call)
        )
        for loop in loops
    )


def _moves_a_factory_tensor(facts: FileFacts, wait: cst.CSTNode) -> bool:
    """`wait` is the move of a tensor that a factory made (`torch.zeros(n).cuda()`)."""
    moved = (
        wait.func.value
        if isinstance(wait, cst.Call) and isinstance(wait.func, cst.Attribute)
        else wait
    )
    return any(
        isinstance(node, cst.Call) and _factory_kind(facts, node) is not None
        for node in (moved, *descendants(moved))
    )


def _empty_literal(expression: cst.BaseExpression) -> bool:
    return isinstance(expression, (cst.List, cst.Tuple, cst.Dict)) and not (
        expression.elements
    )


def _batches_reach_the_device(facts: FileFacts, loader: DataLoaderConstruction) -> bool:
    """A framework moves the loader's batches itself (Accelerate, Fabric, Lightning), the
    loader is returned to the program that iterates it, or some loop of the module that iterates `loader` sends its batches to the accelerator; for a
    loader no loop iterates directly (it is passed on, or returned), some loop over a loader
    this module does not construct (`for x, y in train_loader:` in `train(...)`)."""
    if facts.dataloaders.moved_by_a_framework(loader):
        return True
    owner = facts.dataloaders.loader_hook_class(loader.call)
    if owner is not None and any(map(is_lightning_name, facts.program.external_bases(owner))):
        return True  # a DataModule whose Lightning base is reached through the project's
    if facts.dataloaders.is_returned(loader):
        return True  # a loader factory: the program's loop over it is elsewhere
    loops = [loop for loop in facts.loops.all if facts.dataloaders.loader_of(loop.node) == loader]
    if loops and all(_one_pass_before_training(facts, loop) for loop in loops):
        return False  # set-up: caching latents or embeddings once, before training starts
    if not loops:
        loops = [
            loop for loop in facts.loops.all
            if loop.iterates_dataloader and facts.dataloaders.loader_of(loop.node) is None
        ]
    return any(facts.dataloaders.moves_batches_to_device(loop.node) for loop in loops)


def _one_pass_before_training(facts: FileFacts, loop: LoopFacts) -> bool:
    """A loop over a loader that runs once, before the training loop of its function: not
    inside another loop, training nothing itself (`for batch in cache_loader:` that encodes
    and stores latents)."""
    if facts.loops.enclosing_loops(loop.node) or facts.loops.trains_within(loop.node):
        return False
    position = facts.loops.all.index(loop)
    return any(
        other.is_training and other.function is loop.function
        for other in facts.loops.all[position + 1:]
    )


class DataLoaderWorkersNotPersistent(Rule):
    """`DataLoader` workers are started again for every epoch.

    ## What it does
    Checks for `DataLoader(...)` calls with worker processes (`num_workers` not `0`) and no
    `persistent_workers` when the loader is iterated inside an epoch loop, directly or by
    passing it to a function called in that loop.

    Test files are not checked.

    ## Why is this bad?
    Without `persistent_workers=True` every `iter(loader)`, once per epoch, shuts the workers
    down and forks new ones, each re-importing and re-initialising the dataset. On large
    datasets the first batches of every epoch wait seconds for that.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=8)
    for epoch in range(epochs):
        for x, y in loader:
            ...
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=8, persistent_workers=True)
    ```

    ## Fix safety
    Unsafe: workers keep their memory between epochs, and a dataset that changes between
    epochs (curriculum, resampling in the main process) is no longer re-read by the workers.
    When `num_workers` is not a literal the fix writes `persistent_workers=<num_workers> > 0`,
    since persistent workers with zero workers raise.

    ## References
    - PyTorch docs, [`torch.utils.data.DataLoader`](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader) (`persistent_workers`)
    - PyTorch docs, [Multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
      (workers are created each time an iterator of the `DataLoader` is created)
    """

    code = "TPL103"
    name = "dataloader-workers-not-persistent"
    message = "`DataLoader` workers are restarted every epoch; pass `persistent_workers=True`"
    default = False
    fix_applicability = Applicability.UNSAFE

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for loader in facts.dataloaders.constructions:
            workers = loader.value("num_workers")
            if workers in (MISSING, UNKNOWN, 0) and not _is_expression(loader, "num_workers"):
                continue
            if loader.value("persistent_workers") is not MISSING:
                continue
            if not self._used_every_epoch(facts, loader):
                continue
            if workers is UNKNOWN:
                passed = loader.argument("num_workers")
                value = cst.parse_expression(f"{facts.code(passed.value)} > 0")
            else:
                value = cst.Name("True")
            new_call = add_keyword(loader.call, "persistent_workers", value)
            fix = self.replace(facts, loader.call, new_call, "Keep the workers alive across epochs")
            yield self.finding(loader.call, fix)

    @staticmethod
    def _used_every_epoch(facts: FileFacts, loader: DataLoaderConstruction) -> bool:
        for loop in facts.loops.all:
            iterated = facts.dataloaders.loader_of(loop.node)
            if iterated == loader and facts.loops.enclosing_loops(loop.node):
                return True
        names = _bound_names(facts, loader.call)
        for loop in facts.loops.all:
            for call in loop.own_calls:
                if any(dotted_name(arg.value) in names for arg in call.args):
                    return True
        return False


def _is_expression(loader: DataLoaderConstruction, parameter: str) -> bool:
    """The argument is passed as a non-literal expression (not via `**kwargs`)."""
    return loader.argument(parameter) is not None and loader.value(parameter) is UNKNOWN


def _bound_names(facts: FileFacts, call: cst.Call) -> set[str]:
    """Names the result of `call` is assigned to (`loader = DataLoader(...)`)."""
    parent = facts.index.parents.get(call)
    if isinstance(parent, cst.Assign):
        return {name for t in parent.targets if (name := dotted_name(t.target)) is not None}
    return set()


class BlockingHostToDeviceCopy(Rule):
    """A batch from a pinned `DataLoader` is copied to the GPU synchronously.

    ## What it does
    Checks for `.to(device)` and `.cuda()` on a batch inside the loop that iterates a
    `DataLoader(..., pin_memory=True)` (or `pin_memory=` a setting such as `args.pin_mem`:
    the loader pins when asked, and so may settings unpacked from a configuration,
    `**cfg["kwargs"]`; settings unpacked from a dict the module builds, `train_kwargs =
    {"batch_size": 64}` then `DataLoader(ds, **train_kwargs)`, ask only in a module that
    names `pin_memory`, as PyTorch's MNIST example does with `cuda_kwargs = {"pin_memory":
    True}`), without `non_blocking=True`: `for x, y in loader:`, or a
    `while` loop that reads `batch = next(data_iter)` with `data_iter = iter(loader)`; the
    batch's items count too (`[t.to(device) for t in batch]`). The loader may be built
    elsewhere in the program: returned by a project function (`loader = build_loader(cfg)`,
    also as an item of a tuple: `loader, dataset = create_dataloader(...)`), or passed as a
    parameter (`def train_one_epoch(model, loader):`) by every caller outside tests; a
    logger's wrapper around it (`metric_logger.log_every(loader, 10)`) is seen through, and
    so is a name bound to a wrapper (`pbar = enumerate(loader)`, then `pbar = tqdm(pbar)`).
    A subclass of `DataLoader` that takes its arguments as they are (`InfiniteDataLoader`),
    or a name bound to such classes (`loader = DataLoader if weighted else
    InfiniteDataLoader`), builds a loader as `DataLoader` does.
    A loader that Accelerate or Fabric prepares (`accelerator.prepare(loader)`) is not
    checked: the framework copies its batches to the device, and a later `.to(device, dtype)`
    only casts.

    An evaluation loop (no backward pass) that reads a device value on every batch
    (`correct += pred.eq(y).sum().item()`, `losses.update(loss.item())`) is not checked: the
    read drains the GPU each iteration, so the blocking copy has no queued work to wait behind
    and `non_blocking=True` would only overlap the copy with the launch of the forward pass;
    nor is a loop that only copies batches and stores them (`preloaded.append({"ids":
    b["ids"].to(device)})`, a prefetch), which queues nothing for a copy to overlap with, nor
    an evaluation that runs every N epochs (under `if epoch % val_every == 0:`, also around
    the call of its function, when every other caller runs it once, as an `--eval` mode
    does): its copies are a small share of the run.
    A training loop is checked either way (its per-step read is TPL201's finding), unless it
    is a fit of at most 100 steps, as for TPL201 (a learning-rate range test that leaves
    after `num_it=100` batches): its copies add up to milliseconds. Test files are not
    checked, nor a project whose every allowed PyTorch is older than 0.4 (`torch==0.3.0`),
    which has no `non_blocking=` (0.3 spelt it `async=`).

    ## Why is this bad?
    Pinning memory only pays off with an asynchronous copy: without `non_blocking=True` the
    host waits for every host-to-device copy to finish before it can queue the forward pass,
    so the copy and the compute never overlap.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```

    ## Use instead
    ```python
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix safety
    Safe: a copy from pinned memory with `non_blocking=True` is ordered on the current stream
    before any kernel that uses it, so results are identical. Unsafe when the loader has a
    custom `collate_fn`: a custom batch type's `.to()` may not accept the keyword. Device-to-host
    copies (`.cpu()`, `.to("cpu")`) are never flagged: a non-blocking copy to the host can be read
    before it has arrived.

    ## References
    - PyTorch tutorial, [A guide on good usage of `non_blocking` and `pin_memory()` in PyTorch](https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html)
    - PyTorch docs, [`Tensor.to`](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    - PyTorch docs, [CUDA semantics: use pinned memory buffers](https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers)
    """

    code = "TPL104"
    name = "blocking-host-to-device-copy"
    message = "Blocking copy of a pinned batch to the GPU; pass `non_blocking=True`"
    default = True
    fix_applicability = Applicability.SAFE
    gains_only_on_cuda = True
    fix_needs_torch = PYTORCH_0_4

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for loop in facts.loops.all:
            loader = facts.loader_of(loop.node)
            if loader is None or not loader.pins_memory or loader.moved_by_a_framework:
                continue
            if not loop.is_training and (
                self._waits_every_iteration(facts, loop)
                or self._only_stores_copies(facts, loop)
                or facts.guards.periodic_guard(loop.node) is not None
                or self._runs_on_few_calls(facts, loop)
            ):
                continue
            if loop.short_fit:
                continue
            for call in loop.own_calls:
                if not facts.host_syncs.is_blocking_move(call):
                    continue
                if not facts.host_syncs.copies_a_batch(call, loop):
                    continue
                new_call = add_keyword(call, "non_blocking", cst.Name("True"))
                applicability = (
                    Applicability.UNSAFE if loader.has_custom_collate else Applicability.SAFE
                )
                fix = self.replace(facts, call, new_call, "Add `non_blocking=True`", applicability)
                yield self.finding(call, fix)

    @staticmethod
    def _runs_on_few_calls(facts: FileFacts, loop: LoopFacts) -> bool:
        """The loop runs once per call of its function (no loop of the function encloses
        it), and the program calls the function on few steps (`ProgramFacts.seldom_called`:
        under `if epoch % 10 == 0:`, or once, as an `--eval` mode does)."""
        return (
            loop.function is not None
            and not facts.loops.enclosing_loops(loop.node)
            and facts.program.seldom_called(loop.function)
        )

    @staticmethod
    def _only_stores_copies(facts: FileFacts, loop: LoopFacts) -> bool:
        """The loop only copies batches and stores them (`preload.append({"ids":
        b["ids"].to(device)})`): it queues no computation for a copy to overlap with."""
        stores = [call for call in loop.own_calls if last_identifier(call.func) in _STORING_CALLS]
        return any(last_identifier(call.func) in _STORES for call in stores) and all(
            call in stores or facts.host_syncs.is_blocking_move(call) for call in loop.own_calls
        )

    @staticmethod
    def _waits_every_iteration(facts: FileFacts, loop: LoopFacts) -> bool:
        """Whether the loop reads a device value on every iteration (`loss.item()`,
        `correct += pred.eq(y).sum().item()`), or synchronizes to time it, outside sparse
        guards and error paths."""
        waits = (
            *(site.node for site in facts.host_syncs.device_reads),
            *facts.host_syncs.timing_synchronizations,
        )
        return any(
            loop in facts.loops.enclosing_loops(wait)
            and facts.guards.sparse_guard(wait, loop.node) is None
            and not facts.steps.on_error_path(wait)
            for wait in waits
        )



def _collate_functions(
    facts: FileFacts, collate: cst.BaseExpression, depth: int = 0
) -> list[cst.BaseExpression]:
    """The functions a `collate_fn` argument may be: through `functools.partial`, the values
    that reach a name and both values of a conditional expression (`collate_fn =
    collate_wo_target if onnx else padded_collate_wo_target`)."""
    collate = _partial_of(facts, collate)
    if depth > 3:
        return [collate]
    if type(collate) is cst.IfExp:
        return [
            *_collate_functions(facts, collate.body, depth + 1),
            *_collate_functions(facts, collate.orelse, depth + 1),
        ]
    values = facts.scopes.reaching_values(collate) if type(collate) is cst.Name else None
    return [collate, *(f for value in values or () for f in _collate_functions(facts, value, depth + 1))]


def _partial_of(facts: FileFacts, function: cst.BaseExpression) -> cst.BaseExpression:
    """The function `functools.partial(f, ...)` calls (`f`); else `function` itself."""
    if (
        type(function) is cst.Call
        and facts.names.qualified_name(function.func) == "functools.partial"
        and function.args
    ):
        return function.args[0].value
    return function


# Calls that store values, and those that store them or walk an iterable: neither queues
# anything on the device.
_STORES = frozenset({"append", "extend", "insert", "update", "setdefault"})
_STORING_CALLS = _STORES | {"tqdm", "enumerate", "zip", "len", "items", "keys", "values"}
# Factories that compute their values on the device when given `device=`. Factories that copy
# host data (`torch.tensor`, `as_tensor`, `from_numpy`, the legacy `torch.LongTensor(...)`)
# still build the tensor on the host with `device=`, then copy it: the fix would gain nothing.
_FACTORIES_DETERMINISTIC = frozenset({
    "zeros", "ones", "full", "empty", "arange", "eye", "linspace", "logspace", "zeros_like",
    "ones_like", "full_like", "empty_like", "empty_strided", "range",
})
# Sampling ops that take an input tensor (`multinomial`, `bernoulli`, `poisson`) are no
# factories: they have no `device=` and compute where their input lives.
_FACTORIES_RANDOM = frozenset({
    "rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like",
    "randint_like",
})
# Factories whose first argument is the size of the tensor (or its first dimension).
_SIZE_FIRST_FACTORIES = frozenset({"zeros", "ones", "full", "empty", "rand", "randn"})
# Calls that move their receiver to a device: `.to(device)`, `.cuda()`, `.type_as(tensor)`.
_MOVES = frozenset({"to", "cuda", "type_as"})
# Factories with a `Tensor.new_*` counterpart, which builds on the device and in the dtype of
# the tensor it is called on, as `.to(ref_tensor)` converts to both.
_NEW_METHODS = {"zeros": "new_zeros", "ones": "new_ones", "full": "new_full", "empty": "new_empty"}


class TensorCreatedThenMoved(Rule):
    """A tensor is created on the CPU and then copied to the device, on every step.

    ## What it does
    Checks for tensor factories whose result is immediately moved, in code that runs on every
    training or evaluation step (the body of a training loop or of a loop over a
    `DataLoader`, `forward` and the functions it calls, also in other modules, a framework's
    per-step hook such as `training_step`, and the functions these call, also through an
    object tested with `isinstance`: `posterior.sample()` under
    `if isinstance(posterior, DiagonalGaussian):`):
    `torch.zeros(3).cuda()`, `torch.ones(n).to(device)`, `torch.arange(n).to("cuda")`. Also
    a factory's result moved by the next statement (`z = torch.randn(n, d)` then
    `z = z.type_as(imgs)`; `.type_as(t)` moves to `t`'s device), reported at the factory, and
    one computed on with PyTorch math and Python numbers before the move
    (`torch.exp(-math.log(p) * torch.arange(half) / half).to(t.device)`, `(torch.ones(n) *
    i).to(device)` with `i` a loop's index, or a view of it by literal indices,
    `torch.arange(n)[None, :].to(device)`), which `device=` would compute on the device;
    these two shapes get no fix.

    It stays silent where passing `device=` gains nothing: code that runs once (`__init__`,
    a function whose result is cached: `@cached_property`, `@lru_cache`, start-up, a `__main__`
    block outside the training loop, an error path (also a branch for
    non-finite values: `if torch.isnan(K).any(): K = torch.eye(n).to(x.device)`), the
    fallback for an empty or nearly empty input (`if self.n_max_boxes == 0:`, `if
    len(boxes) == 0:`, `if idx.shape[0] < 3:`), a branch that runs
    every N steps (also the loop of a sampler that every caller runs under such a guard:
    `if step % sample_every == 0: euler_sampler(model, noise)`, a preview image), the
    set-up of a loop that runs a model with autograd off: buffers a
    decoding or sampling function allocates before its loop, or lazily in it under `if attn
    is None:`, once per call and shared by the loop's model calls, a lazy initialisation in
    a per-step function that runs on the first call only (`if not self.initialized:` whose
    body, or a method it calls, sets the flag or fills the buffer: `self.initialized.fill_(1)`),
    or once per key (`if i not in self.sr_u:` whose body stores `self.sr_u[i]`),
    or again when the shape changes:
    `if self.mask is None or self.mask.size(0) != n: self.mask = ...`, or when an input
    outgrows a cache, `if seq_len > self.max_seq_len_cached: self._set_cos_sin_cache(...)`,
    also written as an early return that a builder starts with (`if self.cos_cached is not
    None and x.shape[0] <= self.cos_cached.shape[0]: return`, then the code that sets
    `self.cos_cached`), also through a method it calls on `self` that assigns the attribute, or of a module
    global, also through a function of the module that assigns it after `global KERNEL`
    (`if KERNEL is None: load_kernel()`); what a function that
    runs a model's `generate(...)` with autograd off prepares for it, also in its loops over
    frames or modalities: the decoding loop runs the model once per token); factories that copy host data (`torch.tensor(...)`, `torch.as_tensor`,
    `torch.from_numpy`, the legacy `torch.LongTensor(...)`), which build on the host and copy
    even with `device=`; factories given a `generator=` (a CPU generator is a deliberate
    choice of random stream, and it cannot draw on the GPU); `.to(dtype)` and moves to the
    CPU; `*_like(t)` factories, which build on `t`'s device already (unless `t` is known to
    live in host memory); empty placeholders (`torch.empty(0)`, `torch.arange(0, 0)`), which
    copy nothing;
    sampling ops that take an input tensor (`multinomial`, `bernoulli`), which are no
    factories; and code the program never runs outside a training loop: a method (or
    private function) that no file of the project, tests included, names, no decorator
    registers and no framework class other than `nn.Module` may call, the methods of a
    class that no file of the project names, configs and launchers included, and no
    decorator registers, in a module another file imports, but as the base of such classes
    (a legacy `VectorQuantizer` beside the improved class every model imports, also as
    `from .quantize import VectorQuantizer2 as VectorQuantizer`, which names the improved
    one; `super(VectorQuantizer, self)` in its own methods names no use, nor does another
    file that defines its own class of that name or imports that name from a module where
    it is another class: TFB's baselines carry copies of Time-Series-Library's
    `ProbAttention` that their packages never build, while the library's models import
    its own), a function, public or not, that only such methods (or functions like it)
    call and that no other file names (Point-BERT's vendored `farthest_point_sample`, called
    only by `sample_and_group` and the `forward` of PointNet++ classes that nothing builds;
    also the `__init__` of a class only such code builds, TFB's copied `ProbMask`), the
    `forward` of an
    `autograd.Function` that no file names (it runs only through `Cls.apply`), the
    `forward` of an operator for ONNX export (a class that defines `symbolic`: its forward
    only makes up outputs while `torch.onnx.export` traces the model), a branch that a
    constant rules out (`intra_list = 1` just before `if intra_list: ... else:`), and a branch
    that needs a switch nothing turns on (`if self.gradient_checkpointing:` after
    `self.gradient_checkpointing = False`, set to nothing else by any code that may run),
    a branch that needs a value of the run's settings no shipped run gives them (`if
    args.verbose:` for a `--verbose` flag off by default that no launcher of the project
    passes, the `else` of `if config.TRAIN.CLIP_GRAD:` where every config clips),
    a branch on a parameter off by default that no caller turns on (`if init is True:` in
    `forward(self, x, init=False)`, whose callers, `self.conv(x)`, leave it out, or which no code
    of the project calls with `init=` at all), and
    a fallback for callers that leave out an optional parameter (`if x_mask is None:`) of a
    function whose every caller passes it; a branch that only objects built with a switch
    away from its default run (`if self.add_zero_attn:` in a `forward` whose class stores
    `self.add_zero_attn = add_zero_attn` from `__init__(..., add_zero_attn=False)`, `if
    self.remap is not None:` from `__init__(..., remap=None)`, or `if self.use_ema:` after
    `self.use_ema = ema_decay is not None`);
    loops over a literal collection of constants (`for stride, width in [(1, 32), (2,
    64)]:`), which run a handful of configurations, not steps; the body of a loop of epochs
    around the loop over the loader (`for epoch in range(n):`) outside that loop, where
    sampling a few images from the model after each epoch runs once per epoch;
    loops that show or save a frame they copy to the host on every iteration
    (`writer.append_data(x.cpu().numpy())`): they wait for the device by design, so a small
    copy adds nothing; and a move right after the host waited for the device, with little
    queued since: what it moves reads a device value first (`torch.zeros(batch[-1].item() +
    1).to(device)`), or an earlier statement of its block, with only statements that
    reshape, join or convert tensors (`torch.cat`, `.view`, `.float()`), leave early (`if
    n == 0: continue`) or branch to statements that do only that between, is a host read, a synchronize, a gather by a boolean mask, an
    operation whose output size depends on the values (`pos = mask.nonzero()`, `unique`,
    `masked_select`) or
    a blocking copy of host memory to the device (`feats = host_feats[i].to(device)`, then
    `mask = torch.ones(feats.shape[:-1]).to(device)`), an `assert` of a tensor (`assert
    (idx >= 0).all().item()`), or an early exit on a device value (`if
    torch.isnan(x).any(): raise ...`): the copy waits for little but itself. The search
    goes on from the first statement of an `if` or `with` block to its header and the
    statements before it: the test of `if mask.any():` waits, `if n > limit:` and `with
    torch.no_grad():` queue nothing; it stops at the start of a loop's body or a function's.
    A factory's move is such a wait only when it comes itself right after one (a run of
    small copies after one wait: `torch.cat([torch.zeros(n, 1).cuda(), ids], 1)` twice after
    `ids[mask.nonzero(as_tuple=True)] = k`); two copies alone are both reported, since
    fixing one leaves the other the wait. The move may sit in a statement that otherwise
    only joins or reshapes tensors (`x = torch.cat([x, torch.zeros(shape).to(x)], -1)`). Or
    a move right before such a wait (`mask = torch.eye(n, dtype=torch.bool).to(device)`
    then `labels = labels[~mask]`), which waits for what the host waits for there anyway.
    The set-up of a loop that optimizes inputs (an adversarial attack's steps, each taking
    `torch.autograd.grad(cost, adv)`, or stepping an optimizer built over `[w]`) runs once per
    call, shared by the loop's forward and backward passes: a handful of values made there
    (`torch.ones([x.shape[0], 1, 1, 1]).to(device)`) is not reported, a tensor the size of
    the input (`torch.rand(x.shape).to(device)`, a random start) is.
    A move to the device of a batch still on the host (`.to(batch_y.device)` where the loop's
    `batch_y` was only converted, `batch_y = batch_y.float()`) moves nothing and is not
    reported either. Test files are not checked, nor a project whose every allowed PyTorch is
    older than 0.4 (`torch==0.3.0`), whose factories take no `device=`.

    ## Why is this bad?
    The tensor is allocated and filled on the CPU, then copied over PCIe, and the CPU copy is
    thrown away, on every step. Passing `device=` creates it directly on the GPU with one
    kernel and no copy.

    ## Example
    ```python
    class Block(nn.Module):
        def forward(self, x):
            mask = torch.ones(x.size(1), x.size(1)).cuda()
            return self.attention(x, mask)
    ```

    ## Use instead
    ```python
    class Block(nn.Module):
        def forward(self, x):
            mask = torch.ones(x.size(1), x.size(1), device=x.device)
            return self.attention(x, mask)
    ```

    ## Fix safety
    Safe for deterministic factories (`zeros`, `ones`, `full`, `empty`, `arange`, `eye`,
    `*_like`, ...) when the target is provably a device: a `"cuda..."` literal,
    `torch.device(...)`, `.cuda()`, a `device=` keyword, or a name bound to one of these.
    Unsafe when the target's name says it is a device (`args.device`, `dev`). Always unsafe for
    random factories (`rand`, `randn`, `randint`, `randperm`, ...): the CUDA generator draws
    different numbers than the CPU one. When the target could be a tensor (`.to(ref)`, which
    also converts to `ref`'s dtype), the fix for `zeros`, `ones`, `full` and `empty` without
    keyword arguments is `ref.new_zeros(...)` (and `new_ones`, `new_full`, `new_empty`), which
    matches both, shown but never applied (display-only) since `ref` may be a device after
    all; other factories get no fix there. No fix is offered when `.to()` also changes the
    dtype or copies.

    ## References
    - PyTorch Performance Tuning Guide, [Create tensors directly on the target device](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#create-tensors-directly-on-the-target-device)
    - PyTorch docs, [Tensor creation ops](https://pytorch.org/docs/stable/torch.html#creation-ops)
    - PyTorch Performance Tuning Guide, [Avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
      (copies such as `tensor.cuda()` and `tensor.to(device)` synchronise)
    """

    code = "TPL105"
    name = "tensor-created-then-moved"
    message = "Tensor created on the CPU then moved to the device; pass `device=` to the factory"
    default = True
    fix_applicability = Applicability.SAFE
    gains_only_on_cuda = True
    fix_needs_torch = PYTORCH_0_4

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for call in facts.index.calls:
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value not in _MOVES:
                continue
            # Only the factory moved in the same expression gets a fix (its kind).
            kind = _host_factory(facts, func.value) if isinstance(func.value, cst.Call) else None
            if kind is not None:
                factory, reported = func.value, call
            elif isinstance(func.value, cst.Name):  # `z = torch.randn(n)` then `z.type_as(x)`
                factory = reported = _factory_just_before(facts, call, func.value)
            else:  # `torch.exp(torch.arange(n)).to(d)`
                factory, reported = _computed_from_a_host_factory(facts, func.value), call
            if factory is None:
                continue
            target = self._device_target(facts, call)
            if target is None or not facts.steps.runs_per_step(call):
                continue
            if facts.host_syncs.in_display_loop(call) or self._waits_anyway(facts, call):
                continue  # the host waits for the device anyway: a small copy adds nothing
            if facts.steps.sets_up_input_optimization(call) and not _sized_like_a_tensor(factory):
                continue  # once per attack call, shared by its forward and backward passes
            fix = self._fix(facts, call, factory, kind, *target) if kind is not None else None
            yield self.finding(reported, fix)

    @staticmethod
    def _waits_anyway(facts: FileFacts, move: cst.Call) -> bool:
        """The host has just waited for the device (`_waited_just_before`), or waits right
        after the move (`HostSyncs.wait_just_after`: a boolean-mask gather by the moved
        mask), not by moving a tensor a factory made, and an empty placeholder
        (`torch.empty(0).to(d)`) copies nothing and waits for nothing."""
        after = facts.host_syncs.wait_just_after(move)
        return _waited_just_before(facts, move) or (
            after is not None and not _moves_a_factory_tensor(facts, after)
        )

    def _fix(
        self,
        facts: FileFacts,
        call: cst.Call,
        factory: cst.Call,
        kind: str,
        device: cst.BaseExpression | None,
        provable: bool,
    ) -> ProposedFix | None:
        if device is None:
            return None
        message = "Create the tensor on the device"
        factory = factory.with_changes(lpar=(), rpar=())
        if provable or "dev" in (dotted_name(device) or "").lower():
            applicability = (
                Applicability.SAFE if provable and kind == "deterministic" else Applicability.UNSAFE
            )
            new_call = add_keyword(factory, "device", device)
            return self.replace(facts, call, new_call, message, applicability)
        # `.to(other)` may name a tensor, and `device=<tensor>` raises: `other.new_zeros(...)`
        # builds on its device in its dtype, as `.to(other)` does; shown, never applied.
        name = facts.names.call_name(factory) or ""
        method = _NEW_METHODS.get(name.rpartition(".")[2])
        if method is None or any(arg.keyword is not None or arg.star for arg in factory.args):
            return None
        new_call = factory.with_changes(
            func=cst.Attribute(value=device.with_changes(lpar=(), rpar=()), attr=cst.Name(method))
        )
        return self.replace(facts, call, new_call, message, Applicability.DISPLAY_ONLY)

    @staticmethod
    def _device_target(
        facts: FileFacts, call: cst.Call
    ) -> tuple[cst.BaseExpression | None, bool] | None:
        """None when `call` is no move to a device; else (device expression for the factory,
        whether it is provably a device). The expression is None when `.to()` does more than
        move (a dtype, `non_blocking`, `copy`): the move is flagged but no fix is offered."""
        if call.func.attr.value == "cuda":
            return (cst.SimpleString('"cuda"'), True) if not call.args else (None, False)
        if call.func.attr.value == "type_as":  # to the type, and so the device, of a tensor
            [reference] = call.args if len(call.args) == 1 else [None]
            if reference is None or not facts.host_syncs.may_be_device_tensor(reference.value):
                return None
            return None, False
        device = bound_argument(call, "device", TO_SIGNATURE)
        if not isinstance(device, cst.Arg):
            return None
        if is_dtype(device.value, facts.names) or is_cpu_device(device.value, facts.names, facts.scopes):
            return None  # .to(torch.float16), .to(x.dtype), .to("cpu"): no move to a device
        value = device.value
        if (
            type(value) is cst.Attribute
            and value.attr.value == "device"
            and not facts.host_syncs.may_be_device_tensor(value.value)
        ):
            return None  # `.to(batch_y.device)` of a batch still on the host: no move either
        if any(arg is not device for arg in call.args):
            return None, False
        return device.value, device.keyword is not None or _provably_device(facts, device.value)


def _sized_like_a_tensor(factory: cst.Call) -> bool:
    """The factory makes a tensor the size of another (`torch.rand(x.shape)`,
    `torch.zeros(x.size())`): as large as the input, not a handful of values."""
    if not factory.args:
        return False
    size = factory.args[0].value
    if type(size) is cst.Attribute:
        return size.attr.value == "shape"
    return type(size) is cst.Call and type(size.func) is cst.Attribute and (
        size.func.attr.value == "size" and not size.args
    )


def _waited_just_before(facts: FileFacts, move: cst.Call) -> bool:
    """The host has just waited for the device before `move` (`HostSyncs.wait_just_before`).
    A wait that moves a tensor a factory made (`torch.zeros(n, 1).cuda()`) counts only when
    the host had just waited before it too: a run of small copies after one wait waits for
    little, but two copies alone would hide each other, and fixing the first leaves the
    second the wait."""
    wait = facts.host_syncs.wait_just_before(move)
    if wait is None:
        return False
    if not _moves_a_factory_tensor(facts, wait):
        return True
    return isinstance(wait, cst.Call) and _waited_just_before(facts, wait)


def _host_factory(facts: FileFacts, call: cst.Call) -> str | None:
    """The kind of factory (`_factory_kind`) when `call` creates a tensor with elements on the
    host: no `device=` (nor `generator=`, a deliberate CPU stream), not `*_like` of a tensor
    that may live elsewhere, not an empty placeholder."""
    kind = _factory_kind(facts, call)
    if kind is None or any(
        bound_argument(call, keyword) is not None for keyword in ("device", "generator")
    ):
        return None
    if _on_a_device_already(facts, call) or _is_empty(call):
        return None
    return kind


def _factory_just_before(facts: FileFacts, move: cst.Call, name: cst.Name) -> cst.Call | None:
    """The host factory the statement before `move`'s assigns to the name it moves:
    `z = torch.randn(n, d)` then `z = z.type_as(imgs)` (or `.to(device)`)."""
    statement = facts.scopes.ancestors(move)
    line = next((node for node in statement if isinstance(node, cst.SimpleStatementLine)), None)
    block = facts.index.parents.get(line) if line is not None else None
    lines = statements_of(block)
    if line not in lines or lines.index(line) == 0:
        return None
    previous = lines[lines.index(line) - 1]
    if not (isinstance(previous, cst.SimpleStatementLine) and len(previous.body) == 1):
        return None
    assignment = previous.body[0]
    if not (
        isinstance(assignment, cst.Assign)
        and len(assignment.targets) == 1
        and dotted_name(assignment.targets[0].target) == name.value
        and isinstance(assignment.value, cst.Call)
    ):
        return None
    return assignment.value if _host_factory(facts, assignment.value) is not None else None


def _counts_iterations(facts: FileFacts, name: cst.Name) -> bool:
    """A Python int a loop binds: `i` in `for i in range(n):` or `for i, x in enumerate(xs):`."""
    return any(
        iteration_counter(target, iterated) == name.value
        for target, iterated in facts.tensors.iterations_around(name)
    )


def _constant_index(element: cst.SubscriptElement) -> bool:
    """An index of literals: `None`, a number, `...`, or a slice of numbers (`[None, :]`)."""
    index = element.slice
    if type(index) is cst.Slice:
        parts = (index.lower, index.upper, index.step)
        return all(part is None or isinstance(part, cst.BaseNumber) for part in parts)
    value = index.value
    return isinstance(value, (cst.BaseNumber, cst.Ellipsis)) or dotted_name(value) == "None"


def _computed_from_a_host_factory(facts: FileFacts, moved: cst.BaseExpression) -> cst.Call | None:
    """The host factory a moved value was computed from on the host, with PyTorch math and
    Python numbers only, when the factory's `device=` would have computed it all on the
    device: `torch.exp(-math.log(p) * torch.arange(half) / half).to(t.device)`,
    `torch.arange(n).float().to(d)`, `torch.arange(n)[None, :].to(d)`."""
    if not isinstance(moved, (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)):
        return None
    factories: list[cst.Call] = []

    def host_math(node: cst.CSTNode) -> bool:
        """Whether `node` computes on the host from one factory and Python values only."""
        if isinstance(node, cst.Call) and _host_factory(facts, node) is not None:
            factories.append(node)
            return True
        if isinstance(node, cst.Name):  # a Python value assigned here, not a parameter
            if facts.scopes.is_parameter(node.value, facts.scopes.enclosing_function(node)):
                return False
            values = facts.scopes.bound_values(node)
            if not values:
                return _counts_iterations(facts, node)
            return not any(facts.tensors.is_tensor(v) for v in values)
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Call):
            # `torch.arange(n)[None, :]`: a view of the factory's tensor.
            return host_math(node.value) and all(map(_constant_index, node.slice))
        if isinstance(node, (cst.Attribute, cst.Subscript)):
            return not facts.tensors.is_tensor(node)
        if isinstance(node, cst.Call):
            name = facts.names.call_name(node) or ""
            if name.startswith("math."):
                return True  # Python floats, whatever its arguments
            if isinstance(node.func, cst.Attribute) and not name:
                receiver_ok = isinstance(node.func.value, cst.Call) and host_math(node.func.value)
            else:
                receiver_ok = name.startswith("torch.") and not name.startswith("torch.nn.")
            return receiver_ok and all(host_math(arg.value) for arg in node.args)
        if isinstance(node, cst.BinaryOperation):
            return host_math(node.left) and host_math(node.right)
        if isinstance(node, cst.UnaryOperation):
            return host_math(node.expression)
        return isinstance(node, (cst.BaseNumber, cst.BaseString))

    if not host_math(moved) or len(factories) != 1 or factories[0] is moved:
        return None
    return factories[0]


def _on_a_device_already(facts: FileFacts, factory: cst.Call) -> bool:
    """`torch.zeros_like(t)`: a `*_like` factory builds on `t`'s device, so unless `t` is
    known to live in host memory nothing was created on the CPU."""
    name = last_identifier(factory.func) or ""
    if not name.endswith("_like") or not factory.args:
        return False
    return not facts.host_syncs.is_host_value(factory.args[0].value)


def _is_empty(factory: cst.Call) -> bool:
    """`torch.empty(0)`, `torch.zeros((0, n))`, `torch.arange(0, 0)`: a placeholder with no
    elements to copy. A leading 0 is a size only for factories whose first argument is the
    size: in `torch.randint(0, 10, (4,))` and `torch.arange(0, n)` it is a bound."""
    if last_identifier(factory.func) in ("arange", "range"):
        bounds = [literal_value(arg.value) for arg in factory.args[:2] if arg.keyword is None]
        return bounds == [0] or (len(bounds) == 2 and bounds[0] == bounds[1] != UNKNOWN)
    if last_identifier(factory.func) not in _SIZE_FIRST_FACTORIES:
        return False
    if not factory.args or factory.args[0].keyword is not None:
        return False
    size = factory.args[0].value
    dimensions = [e.value for e in size.elements] if isinstance(size, (cst.Tuple, cst.List)) else [size]
    return any(literal_value(dimension) == 0 for dimension in dimensions)


def _provably_device(facts: FileFacts, value: cst.BaseExpression, depth: int = 0) -> bool:
    """A `"cuda..."` literal, `torch.device(...)`, or a name bound only to those."""
    if isinstance(literal_value(value), str):
        return True
    if isinstance(value, cst.Call):
        return facts.names.call_name(value) == "torch.device"
    if isinstance(value, cst.IfExp):
        return _provably_device(facts, value.body, depth) and _provably_device(
            facts, value.orelse, depth
        )
    if isinstance(value, (cst.Name, cst.Attribute)) and depth < 3:
        bound = facts.scopes.bound_values(value)
        return bool(bound) and all(_provably_device(facts, v, depth + 1) for v in bound)
    return False


def _factory_kind(facts: FileFacts, call: cst.Call) -> str | None:
    """"deterministic", "random", or None when `call` is not a `torch` factory that computes
    its values where it is created."""
    name = facts.names.call_name(call) or ""
    prefix, _, factory = name.rpartition(".")
    if prefix != "torch":
        return None
    if factory in _FACTORIES_DETERMINISTIC:
        return "deterministic"
    if factory in _FACTORIES_RANDOM:
        return "random"
    return None


RULES = (
    DataLoaderNoWorkers,
    DataLoaderNoPinMemory,
    DataLoaderWorkersNotPersistent,
    BlockingHostToDeviceCopy,
    TensorCreatedThenMoved,
)
