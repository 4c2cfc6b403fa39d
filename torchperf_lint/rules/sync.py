"""TPL2xx — host-device synchronization."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchperf_lint.facts import FileFacts
from torchperf_lint.facts.loops import LoopFacts
from torchperf_lint.facts.steps import Step
from torchperf_lint.facts.syncs import HostSync
from torchperf_lint.facts.waits import NextWait
from torchperf_lint.rules.base import Finding, Rule

# A sync at the end of a training step whose next step starts with a blocking batch copy, or
# that the step's barrier follows: the other wait waits for the same work, so the two go
# together. Per kind of `NextWait`: the note at the other wait, and the advice added.
_NEXT_WAIT_NOTES = {
    "copy": "the next step's blocking batch copy waits for the GPU here too",
    "accelerate": "the next step's blocking batch copy waits for the GPU here too",
    "upload": "the next blocking copy of a tensor made on the host waits for the GPU here too",
    "barrier": "this barrier waits for the GPU here too",
}
_NEXT_WAIT_ADVICE = {
    "copy": (
        "copy the batch asynchronously (`pin_memory=True` on the loader, `non_blocking=True`"
        " on the copy)"
    ),
    "accelerate": (
        "let Accelerate copy batches asynchronously (`pin_memory=True` on the loader,"
        " `Accelerator(dataloader_config=DataLoaderConfiguration(non_blocking=True))`)"
    ),
    "upload": "build the tensor copied next on the device (`device=`)",
    "barrier": (
        "drop the barrier the step reaches next (the gradients' all-reduce already keeps the"
        " ranks in step)"
    ),
}
_COUNTS = {2: "two", 3: "three", 4: "four", 5: "five"}


class _PerIterationRule(Rule):
    """Reports the sites that run on every step of the kind a subclass selects (in its loops,
    or in the functions the program runs from them), in a module whose tensors live on a CUDA
    device (elsewhere nothing is queued to wait for)."""

    # The kind of step (`Step.kind`) whose per-step functions the rule reports.
    step_kind: str
    # How to stop waiting for a value read (other sites say their own: `HostSync.advice`).
    read_advice: str

    def sites(self, facts: FileFacts) -> list[HostSync]:
        raise NotImplementedError

    def selects(self, facts: FileFacts, loop: LoopFacts) -> bool:
        raise NotImplementedError

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        on_cuda = None  # The program is asked about the device only once a site is per step.
        for site in self.sites(facts):
            step = facts.steps.step_of(site.node)
            if step is None:
                continue
            if step.loop is not None and not self.selects(facts, step.loop):
                continue
            if step.loop is not None and step.loop.short_fit:
                continue  # `for i in range(50):` a few dozen waits in all
            if step.loop is None and step.kind != self.step_kind:
                continue
            if facts.guards.cpu_branch(site.node):
                continue  # the `else` of `if device.type == "cuda":` reads host values
            if self.waits_anyway(facts, site):
                continue
            if on_cuda is None:
                on_cuda = self.runs_on_cuda(facts)
            if not on_cuda:
                return
            also_at = tuple((other.node, f"also waits here: {other.part}") for other in site.others)
            advice = site.advice or self.read_advice
            waits = self.next_waits_too(facts, site, step)
            if waits:
                also_at += tuple((wait.node, _NEXT_WAIT_NOTES[wait.kind]) for wait in waits)
                advice += "".join(f", and {_NEXT_WAIT_ADVICE[wait.kind]}" for wait in waits)
                count = _COUNTS.get(len(waits) + 1, str(len(waits) + 1))
                advice += f": removing one of the {count} waits alone gains little"
            yield self.finding(
                site.node,
                related=step.path,
                also_at=also_at,
                what=site.description,
                advice=advice,
            )

    def next_waits_too(self, facts: FileFacts, site: HostSync, step: Step) -> list[NextWait]:
        """The step's barriers and the blocking batch copy of the next step that wait for
        the same work as `site`, when they are one fix with it (see `SyncInTrainingLoop`);
        none for rules that do not pair them."""
        return []

    def waits_anyway(self, facts: FileFacts, site: HostSync) -> bool:
        """The step waits for the same work next to `site` whatever the code does with it
        (see `SyncInTrainingLoop`); never for rules that do not say so."""
        return False


class SyncInTrainingLoop(_PerIterationRule):
    """The host waits for the GPU on every training step (`.item()`, `.cpu()`, `float(loss)`, ...).

    ## What it does
    In a module that uses CUDA (or with `target-device = "cuda"`), checks for host syncs that
    run on every iteration of a training loop: `.item()`, `.tolist()`, `.cpu()`,
    `.numpy(force=True)` (a bare `.numpy()` raises on a device tensor, so the tensor it reads
    is already on the host), `float(t)` / `int(t)` / `bool(t)` of a tensor (a name bound once
    and backpropagated is one, whatever made it: `loss = loss_fn(z, h)`, `loss.backward()`,
    then `float(loss)`; also a parameter that a caller passes such a tensor: `def
    check_nan_losses(loss): if math.isnan(loss): raise ...`, called with the step's loss),
    `math.isnan(t)` (and `isinf`, `isfinite`,
    which read the tensor as `float(t)` does), `range(t)` (which reads the bound as
    `int(t)` does), a `GradScaler`'s `get_scale()` and `state_dict()` (both read the scale
    with `.item()` unless it is built with `enabled=False`), `print` of a tensor, a tensor formatted
    into a string whatever receives it (an f-string, `str()`, `.format` or `%` passed to
    `print`, `logger.info`, `pbar.set_description` or your own `print0`), a tensor handed to
    a call that formats it for display (`pbar.set_postfix(loss=loss)`,
    `logger.info("%s", loss)`; `debug` logging is off by default), a tensor used as a
    condition (`if torch.isnan(loss):`, `if loss < best:`, `if found_inf:`,
    `if torch.logical_or(a, b):`, `assert torch.isfinite(loss).all()`), which is `bool(t)`
    written implicitly (also on the items of tensors: `for row in rows: if (row == k).sum()
    == 0:` with `rows = [ids[m] for ids, m in zip(input_ids, mask)]`, a row selected by a
    boolean mask, or a chunk of `torch.split`; and on the elements of a device tensor, once per
    element on every step: `for idx, d in enumerate(next_done): if d:` with `next_done =
    torch.Tensor(next_done).to(device)`; iterate the NumPy array it was made from instead), the
    builtin `min()` or `max()` of a tensor
    (`min(self.decay, x)`
    compares with `<`), a tensor used as a slice bound (`x[i, :, start:start + n]` with
    `start = starts[i]` of a device tensor: Python converts it to an int; an index tensor,
    `x[ids]`, runs on the device; a name is judged by the binding that reaches it, so
    `for start in range(0, n, m): b[start:start + m]` reads nothing, whatever tensor an
    earlier `start = torch.clip(...)` held), a device tensor indexed with an index in host
    memory (`b_obs[mb_inds]` with `mb_inds = b_inds[start:end]` of `b_inds = np.arange(n)`, a
    NumPy array, or `x[torch.randperm(n)[:b]]`, a host tensor, unless the module makes the
    factories build on the GPU, `torch.set_default_tensor_type("torch.cuda.FloatTensor")`;
    when the code shows the indexed tensor on the device: made with `device=`, moved with
    `.to(device)` or `.cuda()`, or a view of one, `b_obs = obs.reshape(-1, d)`): PyTorch
    copies the index to the device from pageable memory, a copy that waits for the GPU; the
    gathers of a loop body with the same index are one finding, at the first, whose fix is
    building the index on the device (`torch.randperm(n, device=device)`), and an explicit
    `torch.cuda.synchronize()` (or another backend's)
    that does not bound a timed interval (a clock read right before or after it: `time.time()`,
    a CUDA event's `start.elapsed_time(end)`, which needs the synchronize, `start.record()`
    of a `torch.cuda.Event`, which opens the interval after it, or a timer object's method,
    `fw_timer.toc()`, `self.timer.start()`, or the end of a timer's `with` but for host
    work, `with Timer("update"):`, whose exit reads the clock); one before the clock read
    of a timer that a training loop restarts after reading it (`torch.cuda.synchronize()`,
    `batch_time.update(time.time() - end)`, `end = time.time()`) is reported: such a timer
    runs from one iteration to the next and measures the average step time without the
    wait, which costs the overlap of every step. A chain
    such as `x.cpu().numpy()` is one finding, and so is a statement with several reads (a
    dict of seven `.item()`s is one finding that says it holds seven syncs, reported at the
    first), and so are statements in a row that each read (`d_val = losses["d"].item()`,
    then the same for `g`, `r1`, ...: one fix, stacking the values and reading them once;
    statements that queue little work between them, `_, predicted = outputs.max(1)` or
    `total += y.size(0)`, and an `if` without `else` that tests a value of the step for
    `None`, `if grad_norm is not None: norm = grad_norm.item()`, are part of the run, and
    so is, after a read of the run, a switch's, `if log: log(loss=loss.item())` (a run does
    not start with one: its reads run only when it is on);
    other work between them, or another compound statement, ends it). A read right after an
    explicit synchronize waits for nothing more: only the synchronize is reported (also a
    read after statements that each read back the work they queue, `hist =
    x.mean().item()`, or in any branch of an `if` or `elif` chain on plain flags, `if
    args.use_flex:`, or in the body of a `with` on host values, `with open(log_file, "a")
    as f:`), and so does a read right before a synchronize that bounds a timed interval and
    stays as the measurement it is (`train_loss = loss.item()`, then
    `torch.cuda.synchronize(); end = time.time()`): it waits for the same work. A read
    after another read of the step, with only host work (`iters = epoch * len(loader) +
    i`, a logger's, a list's or a dict's method, a helper of the module that only does
    such work, `self.add_summary(writer, name, value)`) or light work (reshaping, sums,
    conversions to a dtype: `acc = (torch.sum(pos > 0) + torch.sum(neg < 0)).to(torch.
    float32) / n`, PyTorch's elementwise criteria such as `F.l1_loss` or an `nn.L1Loss()`)
    between them,
    waits for nothing new,
    since the first emptied the queue: it is part of the first read's finding, as a related
    location (`train_err += loss.item()`, then `with torch.no_grad(): avg_loss +=
    loss.item()`, or `if rank == 0: writer.add_scalar("loss", loss.item(), it)`; also
    after a read in an `if`'s test, `if torch.isnan(loss): continue`, and after a loop that
    reads each metric it logs, `for k, v in metrics.items(): metrics[k] = v.item()`), and is
    not reported where the first is not (after a read whose comment says it waits on
    purpose). A read whose own statement queues other work (`q_net(obs).argmax().item()`)
    waits for that work, and any other call of your own between them may queue some: each
    ends this. A
    comparison with `None` (`if p_model == None:`) reads nothing: PyTorch answers `False`
    without looking at the tensor. A read in
    a branch of an `if` whose test is itself a read runs only when that test holds, or right
    after it in the `else`, and is part of the test's finding, as a related location (`if
    torch.min(y) < -1:` then `print(torch.min(y))`: one finding at the test).

    The sync may be in another function, in any module of the program, that runs on every
    training step: one the training loop calls, directly or through other functions (a
    method of an object the loop was handed, `log_writer.update(acc=acc)` when the callers
    pass a `TensorboardLogger(...)`, also kept on `self` by the constructor it was passed
    to, `self.train_loss(batch, output)` after `self.train_loss = train_loss` in a `Trainer`
    built with `LossCompute.from_opts(opt)`, a class method returning `cls(...)`, or of one
    tested with `isinstance`,
    `self.sampler.update(losses)` under `if isinstance(self.sampler, LossAwareSampler):`; a
    subclass's override of what its base class's step calls, `self.shared_step(batch)`; the
    function a factory returned, `train(x, y)` after `train = make_train_fn(G, D)` whose
    `return train` hands back a nested `def train(x, y)`; a function the loop passes to another that calls it, `gpu_timer(train_step)` with `def
    gpu_timer(closure): ... closure()`, or to an optimizer's step, `optimizer.step(closure)`:
    a passed `train_step` that steps the optimizer makes the loop a training loop; each
    function of a table the loop calls through, `LOGGERS[how](loss)` with `LOGGERS =
    {"print": log_value, "none": log_nothing}`, or `{"TransE": self.TransE, ...}[name](x)`), a
    framework's per-step hook (`training_step` of a `LightningModule`), the function an
    Ignite `Engine` is given (`trainer = Engine(train_step)`: a training step when it steps
    an optimizer, else an evaluation step), or the `forward` of
    a model handed to a `transformers.Trainer` (`Trainer(model=model)`) and what it calls.
    A function whose result is cached (`@functools.lru_cache`, `@cache`: edm2's `gt(classes,
    device)`, which builds its mixture once per device) runs its body once per distinct
    arguments: neither it nor what it calls runs on every step.
    The finding names the call path. A call in a branch that needs an optional parameter
    (`if normals is not None: penalty(normals)` in `def chamfer(x, y, normals=None)`, or the
    `else` of `if normals is None:`, or a conditional expression: `x.sum().item() if dim is
    None else x.sum(dim)`) runs on every step only through callers that pass it (or leave it
    out).

    It stays silent on calls that do not run on every step: under a periodic guard
    (`if step % log_every == 0:`, also `if last_batch or step % n == 0:`, a flag a
    trainer's callbacks set on those steps, `if state.should_save:`, `control.should_log`, or `if step % n ==
    0 or step >= total_steps:` in a loop that leaves on that same test, `if step >=
    total_steps: return`: its last iteration, also a flag the loop leaves on, `if done or
    step % n == 0:` with `if done: break` later, or a name bound to
    one, also through other names: `do_log = step % n == 0 or last_batch; do_metric = step %
    m == 0 or do_log; if do_metric:`, or a call of a project function that returns such a
    test: `if step_check(step, n):`, also one that narrows it before returning it, `test =
    step % freq == 0`, then `test = test and acc_step == 0`, `if not
    self.metrics.should_log(self.step): return`
    before the read, with `def should_log(self, step): return step == 1 or step % self.freq
    == 0`, or a test of the time since a clock read that its body sets again: `if now -
    last_logging > args.log_freq_time: ...; last_logging = now`), or of a milestone that
    its body moves on: `if niter * batch_size >= optimize_times[-1]: optimize_times.pop();
    ...`, `if step >= next_eval: next_eval += eval_every; ...`) or a test of one of the
    loop's counters (its own, one it
    increments, or one it derives: `if i == 0:`, `if i + 1 == len(loader):`, `if step < 5:`,
    `if 0 <= step <= 2:`, the `else` of `if i != len(loader) - 1:`,
    `batch_count = i + 1; if batch_count == num_batches:`, `ni = i + nb * epoch; if ni < 3:`;
    the counter of `for i, batch in pbar:` after `pbar = tqdm(enumerate(loader))` too),
    also in a function the loop
    calls with its counter (`collect(model, iteration, rollouts)` from `while iteration <
    n: ... iteration += 1`, every caller passing one) and a test of that parameter (`if
    iteration == state.last + k:`, also `if rollouts is None or iteration == ...:`, whose
    body assigns `rollouts`: the first call, then every k steps), under a first-iteration
    flag (`first = True` before the loop, `first = False` in it, `if first:`; also passed to
    a helper that tests `if step % k == 0 or is_first_iteration:`), in a branch that only objects
    built with a switch away from its default run (`if self.batch_eval: ... else:` in a class
    whose `__init__(self, ..., batch_eval=True)` stores it; `if self.verbose:` for a switch
    that defaults to `False`; `if self.remap is not None:` for one that defaults to `None`;
    `if self.use_ema:` after `self.use_ema = ema_decay is not None` with `ema_decay=None`,
    or a switch stored as `bool(flag)` or `threshold > 0`; `elif self.pooling ==
    "attention":` for an option that defaults to `"mean"`),
    in a loop over a literal collection of constants (`for
    stride, width in [(1, 32), (2, 64)]:`, a handful of configurations, not steps), in a fit
    of at most 100 steps (`for i in range(training_iter):` with `training_iter = 2 if
    smoke_test else 50`, or `for idx, batch in enumerate(loader):` that leaves after a
    literal count, `if idx == 3: break`, or a count that is a parameter's default the
    module's calls keep, `if batch_idx + 1 == num_it: break` with `num_it=100`, a learning-rate
    range test, outside any other loop: a tutorial's few dozen full-batch steps,
    whose waits add up to milliseconds; the functions it calls are still judged), in a
    handful of forward and backward passes that update nothing (`for _ in range(3):` outside
    any other loop: a benchmark's warm-up, or its profiled run), in a debugging or profiling
    mode (`if args.debug:`, `if not config.ignore_sanity_checks:`, a level such as `if
    opt.debug > 0:`, `if self.train_profile and ...: torch.cuda.synchronize()`: a switch
    whose name says debug, sanity check or profile, which users turn on to trade speed for
    checks or measurements), in a branch that needs a value of the run's
    settings that no run the project ships gives them (`if args.verbose:` for a
    `--verbose` flag, off by default, that no shell script, README command, YAML or JSON
    config or Python launcher of the project passes; the `else` of `if
    config.TRAIN.CLIP_GRAD:` where the config tree's default, `_C.TRAIN.CLIP_GRAD = 5.0`,
    and every shipped config clip; what follows `if args.qa_mask != 1: continue` with
    `--qa-mask` at 0; the right operand of `if args.verbose and loss.item() > 10:`, which
    runs only when the setting passes, also `if self.cfg.kl_threshold and kl >
    self.cfg.kl_threshold: break` where the agents' config class declares `kl_threshold:
    float = 0.0` and no launcher sets it; a setting that picks the device, `if args.cuda:`, is
    taken to be on),
    in what a call that saves a checkpoint runs
    (`save_checkpoint_and_time(iteration, model, optimizer)`, `save_model(...)`, by its name,
    and what computes the state it is given: `save_checkpoint(checkpoint_state(model,
    optimizer), filename=name)`:
    a run saves at intervals, whatever test decides when), after
    an early exit on the other steps (`if (i + 1) % accumulation != 0: continue`, also
    `if skip_batch and skip_time: return` with `skip_batch` such a test, or `if
    self.skip_log: log_loss(); return` with `self.skip_log = batch_idx % n != 0` set by
    the hook before each step), code after a
    `return`, `raise`, `break` or `continue` of its block (no path reaches it: `def
    sync(device): return` above a `torch.cuda.synchronize(device)`) or in the branch of an
    `if` that a constant rules out (`debug = 0` just before `if debug:`), a
    lazy initialisation (`if buffer is None: buffer = ...`), in a branch whose body ends by
    leaving the loop (`if updates == max_updates: save(); break`, or `return`: it runs
    once), or behind a latch (`if
    use_queue or not torch.all(queue[-1] == 0): use_queue = True`: the tensor test runs
    only until the flag is set); in a branch of a step function
    that training and evaluation share which runs only when not training
    (`if stage != sb.Stage.TRAIN:`, `if mode == "val":`, `if not self.training:`, the `else`
    of `if mode == "train":` or of `if mode != "test":`, or a setting for a run that
    evaluates instead of training: `if opt.test:`), and in
    what that branch calls; in an evaluation the training loop runs (a function that calls
    `model.eval()` and trains nothing: `test()` in the epoch loop of a full-batch training),
    whose reads belong to TPL202, and in the step of a training loop that runs such an
    evaluation on every iteration (full-batch training, one step and one `test()` per epoch:
    the host waits for the GPU there by design); on
    calls after the loop (also in a loop around a training loop over a DataLoader, `for
    epoch_logs in epochs:` around `for x, y in loader:`, once per pass, even where it steps
    the optimizer once more for the gradients left accumulated; a loop that iterates a
    DataLoader itself, over batches of tasks, steps on each) or
    outside any training loop (a reinforcement-learning rollout whose iterations step no
    optimizer, such as PPO's collection of `num_steps` before its update loop, is not one);
    in a function defined in the training loop that nothing runs on every step (it runs when
    called, or when passed to a function that calls it), and in a training or
    DataLoader loop nested inside it, which is judged as its own (an evaluation loop's reads
    are TPL202's); any other loop nested in the step (over parameters, over the elements of a
    tensor) runs on every step, and its reads are reported. It is also silent where
    the read waits for nothing or is the algorithm itself: a read in a `with
    torch.cuda.stream(side):` block, which waits for that stream only, not for the step's
    work on the default one; the values prioritized experience replay keeps on the host
    (passed to a buffer's `update_priorities(indices, td.cpu().numpy())`, also through a
    name, or put in the list a caller asked for with an optional argument, `if errors_out
    is not None: ... errors_out.append(e)`); host tensors (the batches a
    DataLoader yields before they are moved, also after a conversion in place, `y =
    y.float()`, and their items, `r_id` in `for r_id, cam in
    zip(ref_ids, cams):`, tensors built without `device=` or with `device="cpu"`, also when
    augmented assignments update them (`tokens = torch.tensor(0)` then `tokens += (labels !=
    -100).sum()`: an in-place update keeps a tensor where it is), NumPy values,
    a tokenizer's or processor's `return_tensors="pt"` encoding and the list it encodes,
    which is text (`tokenizer(smiles[0].tolist(), return_tensors="pt")`), what is computed from a copy
    already made (with `.cpu()`, or `.to("cpu")`, `.to(device="cpu")`): `ids = x.detach().cpu()`
    is reported, `ids[0].tolist()`, `ids.sum(1).item()`
    and the rows of `for row in ids:` are not, also for a parameter rebound to its copy),
    copies of a model's weights made to be sent elsewhere (`{k: v.cpu() for k, v in
    model.state_dict().items()}`, `TensorDict.from_module(policy).data.clone().cpu()`,
    `weights.cpu()`: to actors, an inference server or another process; gradients are still
    reads), values handed to an environment (`env.step(action.item())`; a value bound to a
    name first that reaches the environment's argument before anything binds it again,
    also through NumPy's conversions and from one branch of an `if`: `actions =
    q.argmax(1).cpu().numpy()` or `actions = a.cpu().numpy().clip(lo, hi)`, then
    `envs.step(actions)`; one that is only logged is still reported; or read in a function that
    picks an agent's action: `get_action`, `select_action`, `act`), values handed the same
    way to one of SciPy's solvers (`linear_sum_assignment(cost)` after `cost =
    C.cpu().numpy()`, also per part, `[linear_sum_assignment(c[i]) for i, c in
    enumerate(C.split(sizes, -1))]`: DETR's Hungarian matching needs the assignment for
    this step's loss), the bytes of a Python
    object a device buffer carried (`pickle.loads(bytes(buf[2:n + 2].tolist()))` after an
    `all_gather` of pickled objects, with the reads of that buffer's header, `n =
    buf[0].item()`, that size it, and, in a module that decodes gathered bytes, the buffer
    sizes the ranks gather to pad and slice those buffers: `[int(s.item()) for s in
    size_list]` and `if local_size != max_size:` after `dist.all_gather(size_list,
    local_size)` with `local_size = torch.tensor([buf.numel()])`), frames copied to the host
    for display or saving (`cv2.imshow("fit", x.cpu().numpy())`, `frame = ...cpu()...` then
    `writer.append_data(frame)` or `add_image`), which are the program's output, and every
    other read of a loop that shows or saves such a frame on each iteration (it waits for the
    device by design: the loss it logs adds next to nothing), sizes (`int(torch.rand(1) *
    x.size(-1))`: a host tensor and a Python int; also a slice bound computed from the items
    of a host tensor, `data[i : i + block_size] for i in ix` with `ix = torch.randint(n,
    (b,))`, nanoGPT's `get_batch`), tensors read from a file into host memory
    (`int(header[2])` with `header = torch.from_file(path, False, 256, dtype=torch.int32)`),
    a batch as a DataLoader yields it, before its copy (also `next(batches)` or
    `batches.__next__()` of an iterator over a loader, and a helper's parameter that every
    caller passes such a batch: PET's `_mask_tokens(lm_input_ids)`, whose `.tolist()` reads
    the unlabeled batch drawn before it is moved),
    the tensors of an object whose parts the function copies to the device piece by piece
    and never moves whole (`dataset.train_idx.tolist()` beside `dataset.x[nodes].to(device)`),
    reads in the CPU branch of a device test (the `else` of `if device.type == "cuda":` or
    of `if torch.cuda.is_available():`, the body of `if device.type == "cpu":`: a benchmark's
    timing loop for the host, whose values are host tensors), a read whose comment says it waits on purpose (`loss_item = loss.item()  #
    synchronization`, also `# sync` on the line above), the message of an `assert` (computed only
    when it fails), the fallback for an empty input (`if len(boxes) == 0:`, `if
    num_insts == 0:`), failure paths (an `except` handler, a branch that raises, what follows
    `if torch.isfinite(x).all(): return` in a block that ends by raising, and the branch for
    non-finite values: the body of `if torch.isnan(loss).any():` or `if not
    torch.isfinite(loss).all(): ...; continue`; the test itself is still reported, and the
    branch for a step the optimizer skipped on an overflow: `if overflow:`, the `else` of
    `if not skipped_iter:`), a
    synchronize next to a clock read also when it sits in nested branches
    (`if args.synchronize_step: if device.type == "cuda": torch.cuda.synchronize()` then
    `time.time()` after the outer `if`), a helper's conversion of
    what it is given only when that is a tensor (a metric logger's
    `if isinstance(v, torch.Tensor): v = v.item()`) unless the program shows a caller passing
    it a tensor (`metric_logger.update(acc=acc)`, not `update(loss=loss.item())`), CPU-only modules (or
    `target-device = "cpu"`), and test files, which read values on purpose. A flag or rank
    guard (`if rank == 0:`, or `if args.verbose:` where a launcher passes `--verbose`) still
    runs on every step and is reported.

    ## Why is this bad?
    CUDA work is asynchronous: the host queues kernels and runs ahead, preparing the next
    batch while the GPU computes. Reading a value on the host (`loss.item()`) makes the host
    wait until every queued kernel has finished, then the GPU idles while the host launches
    the next step. One sync per step removes the overlap between host and device for the whole
    run; with small models or fast GPUs that is a large share of the step time.

    Every sync in the step has to go for the overlap to return, so each one is reported
    (reads in a row, which one change removes, in one finding). The exception is a read
    right next to the step of an enabled `GradScaler` (`scaler.step(optimizer)`, or a
    `loss_scaler(loss, optimizer)` helper before it), with nothing but the step's upkeep
    between them (`scaler.update()`, `optimizer.zero_grad()`, a meter's `update`; also
    when the scaler's step is in the branch of a setting every shipped run takes, `if
    args.fp16:` for a `store_true` flag that defaults on, and the other branch's backward
    runs in no run): the
    scaler reads its inf check on the host there on every step, after the same backward, so
    the read waits for little more (the optimizer's kernels) and is not reported. With a
    fused optimizer (`fused=True`), which takes the check on the device, with a scaler that
    may be disabled (`GradScaler(enabled=args.amp)`), or with one that steps only every N
    micro-batches, the read is the step's wait and is reported. The same holds after
    Apex's `with amp.scale_loss(loss, optimizer) as scaled_loss:` block where the module
    sets up dynamic loss scaling (`amp.initialize(..., opt_level="O1")`, "O2" or
    `loss_scale="dynamic"`): the block's exit reads the overflow flag with `.item()`. Nor is
    a read in a step that steps an L-BFGS optimizer with a closure (`optimizer.step(closure)` of a
    `torch.optim.LBFGS` or a project's copy of it, also under `if opt == "LBFGS":` where
    `opt` defaults to it, pykan's `fit`): that step reads the loss and its tolerances on the
    host many times, and the line search of such an optimizer's own `step(self, closure)`
    decides on the host how many evaluations it makes. A tensor used as an `if` condition (`if torch.isnan(loss): ...`)
    is reported too: the `if` must know the value, so it is `bool(t)` on every step. Check it
    every N steps instead, or keep the decision on the device (`torch.where`, or skip the
    update with a `GradScaler`, which already ignores steps with non-finite gradients).

    A sync that the host follows, before any further backward (an optimizer step between
    them queues little, and the copy waits for it too), with a
    blocking copy of host data to the device (`x.cuda()` or `x.to(device)` without
    `non_blocking=True`, of the batch, of `next(region_iter)` or of `torch.cat([a, b])`;
    later in the same step, or at the start of the next; or a call of a project helper that
    starts by copying the batch it is given that way, `prepare_model_inputs(args, batch,
    device)`, or a lambda mapped over the batch that does, `map(lambda x:
    x.float().to(device), batch)`; or a loader that
    `accelerator.prepare` returned, in a module that sets no `DataLoaderConfiguration`:
    Accelerate's copies block by default) is one wait with that copy: the copy waits for
    the same work, so removing the read alone gives back only the time the host spends
    fetching the next batch. The finding points at the copy too, and its advice is to make
    both go: accumulate on the device, and copy from pinned memory with `non_blocking=True`
    (with Accelerate, `Accelerator(dataloader_config=DataLoaderConfiguration(non_blocking=True))`;
    for the copy of a tensor a factory has just made on the host, `torch.zeros(*shape).to(device)`,
    build it on the device).
    Where the host prepares data on the way (`tokenizer(text, return_tensors="pt").to(device)`,
    a processor, a transform), the read alone costs that work's overlap, and the finding
    stays as it is. A copy that a setting may skip (`if not args.prefetcher: x = x.cuda()`,
    timm's, where the default prefetcher already copies without blocking; a test for the GPU,
    `if torch.cuda.is_available():`, is passed on every step that matters) and a copy of a
    constant (`torch.as_tensor(IMAGENET_DEFAULT_MEAN).to(device)`, a few bytes) are not
    paired. A barrier of the ranks that the step reaches after the sync, before any further
    update (`dist.barrier()`, `accelerator.wait_for_everyone()`, Lightning's
    `self.barrier()`, a project's `synchronize()` helper, at the end of every step, under no
    `if`), is paired in the same way, before the copy when the step has both: it waits for the same
    work, and the advice is to drop it too, since the gradients' all-reduce already keeps
    the ranks in step.

    ## Example
    ```python
    for step, (x, y) in enumerate(loader):  # loader = DataLoader(..., pin_memory=True)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total_loss += loss.item()
    ```

    ## Use instead
    ```python
    total_loss = torch.zeros((), device="cuda")
    for step, (x, y) in enumerate(loader):  # loader = DataLoader(..., pin_memory=True)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total_loss += loss.detach()
        if step % log_every == 0:
            print(f"step {step}: loss {total_loss.item() / (step + 1):.4f}")
    ```

    Accumulate on the device with `.detach()` (which also frees the autograd graph, see
    TPL501) and read the value every N steps or once after the loop. For progress bars, update
    the postfix under the same periodic guard.

    ## Fix safety
    There is no automatic fix: where to accumulate and how often to read depends on what the
    code does with the value.

    The sources disagree here, and this rule follows the device-side accumulation:
    - PyTorch's FAQ ("My model reports 'cuda runtime error(2): out of memory'") suggests
      `total_loss += float(loss)` so the history does not keep the graph alive. That fixes
      the memory leak but syncs on every step, which this rule reports.
    - The Performance Tuning Guide ("Avoid unnecessary CPU-GPU synchronization") lists
      `cuda_tensor.item()` among the operations that make the host wait for the GPU, so
      the value is best accumulated on the GPU instead.
    `loss.detach()` gives both: the graph is freed and nothing waits for the GPU.

    ## References
    - PyTorch docs, [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - PyTorch Performance Tuning Guide, [Avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
    - PyTorch FAQ, [My model reports "cuda runtime error(2): out of memory"](https://pytorch.org/docs/stable/notes/faq.html)
    - PyTorch docs, [`torch.cuda.set_sync_debug_mode`](https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html),
      which reports these syncs at run time
    """

    code = "TPL201"
    name = "sync-in-training-loop"
    message = "{what} on every training step makes the host wait for the GPU; {advice}"
    read_advice = "accumulate on the device with `.detach()` and read it every N steps"
    default = True
    step_kind = "train"

    def sites(self, facts: FileFacts) -> list[HostSync]:
        return facts.host_syncs.device_reads

    def selects(self, facts: FileFacts, loop: LoopFacts) -> bool:
        return loop.is_training

    def waits_anyway(self, facts: FileFacts, site: HostSync) -> bool:
        """A gradient scaler's step reads its inf check on the host right before or after
        the read, with no backward between them, or the step is an L-BFGS step that reads
        on the host all along (`StepWaits.anyway`)."""
        return facts.waits.anyway(site.node)

    def next_waits_too(self, facts: FileFacts, site: HostSync, step: Step) -> list[NextWait]:
        """The barriers, and the blocking copy of host data, that the training loop reaches
        next after the sync, before any further update (`StepWaits.next_after`): they wait
        for the same work."""
        return [] if step.loop is None else facts.waits.next_after(step.loop, site.node)


class SyncInEvalLoop(_PerIterationRule):
    """The host waits for the GPU on every evaluation batch (`.item()`, `.cpu()`, ...).

    ## What it does
    Checks for the same host syncs as TPL201 (`.item()`, `.tolist()`, `.cpu()`,
    `.numpy(force=True)`, `float(t)`/`int(t)`/`bool(t)`, `print` of a tensor, a tensor used
    as a condition), counted as TPL201 counts them (a statement, or statements in a row, with
    several reads is one finding, and so is an `if` whose test reads with the reads of its
    branches), on every iteration of an evaluation loop: a loop over a `DataLoader`
    that calls a model and has no backward or optimizer step. Periodic guards, calls after
    the loop, fits of at most 100 steps and CPU-only modules are silent, as for TPL201.

    Test files are not checked.

    ## Why is this bad?
    Each sync stops the host from queueing the next batch's forward pass while the GPU is
    busy, so the GPU idles between batches. Evaluation runs are usually short, which is why
    this rule is opt-in; on large validation sets the idle time adds up.

    ## Example
    ```python
    with torch.no_grad():
        for x, y in val_loader:
            logits = model(x.cuda())
            correct += (logits.argmax(1) == y.cuda()).sum().item()
    ```

    ## Use instead
    ```python
    correct = torch.zeros((), dtype=torch.long, device="cuda")
    with torch.no_grad():
        for x, y in val_loader:
            logits = model(x.cuda())
            correct += (logits.argmax(1) == y.cuda()).sum()
    accuracy = correct.item() / len(val_loader.dataset)
    ```

    ## Fix safety
    There is no automatic fix. Collect predictions on the device (`torch.cat` once after the
    loop) and move them to the host once.

    ## References
    - PyTorch docs, [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    - PyTorch Performance Tuning Guide, [Avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
    """

    code = "TPL202"
    name = "sync-in-eval-loop"
    message = "{what} on every evaluation batch makes the host wait for the GPU; {advice}"
    read_advice = "accumulate on the device and read it once after the loop"
    default = False
    step_kind = "eval"

    def sites(self, facts: FileFacts) -> list[HostSync]:
        return facts.host_syncs.device_reads

    def selects(self, facts: FileFacts, loop: LoopFacts) -> bool:
        return (
            loop.iterates_dataloader
            and not loop.is_training
            and any(facts.tensors.is_module_call(call) for call in loop.own_calls)
        )


class DataDependentShapeInLoop(_PerIterationRule):
    """An operation whose output size depends on the data runs on every training step.

    ## What it does
    In a module that uses CUDA, checks for `.nonzero()` / `torch.nonzero`,
    `torch.masked_select`, `torch.unique` and boolean-mask reads (`t[t > 0]`, `t[mask]`) on
    every iteration of a training loop. Periodic guards, code outside training loops and
    assignments through a mask are silent (`t[mask] = 0` with a scalar runs as
    `masked_fill_`, without a sync).

    Test files are not checked.

    ## Why is this bad?
    The size of the result is only known once the GPU has counted the selected elements, and
    the host needs that size to allocate the output. So each of these operations is a host
    sync, with the same cost as an `.item()` (see TPL201), and it also gives tensors of a
    different shape every step, which defeats CUDA graphs and makes `torch.compile` break the
    graph or recompile.

    ## Example
    ```python
    for x, y in loader:
        logits = model(x.cuda())
        valid = y.cuda() != IGNORE
        loss = criterion(logits[valid], y.cuda()[valid])
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        logits = model(x.cuda())
        loss = criterion(logits, y.cuda())  # criterion = nn.CrossEntropyLoss(ignore_index=IGNORE)
        loss.backward()
        optimizer.step()
    ```

    Keep shapes fixed: `ignore_index`, `torch.where(mask, x, 0)`, `x.masked_fill(~mask, 0)`,
    or multiply by the mask and divide by `mask.sum()`.

    ## Fix safety
    There is no automatic fix: the fixed-shape version depends on what consumes the result.

    ## References
    - PyTorch docs, [`torch.cuda.set_sync_debug_mode`](https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html) (which lists `nonzero` among the syncing operations)
    - PyTorch docs, [`torch.nonzero`](https://pytorch.org/docs/stable/generated/torch.nonzero.html) ("requires a host-device synchronization" on CUDA)
    - PyTorch Performance Tuning Guide, [Avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
      (which lists `cuda_tensor.nonzero()`)
    """

    code = "TPL203"
    name = "data-dependent-shape-in-loop"
    message = (
        "{what} in a training loop makes the host wait for the GPU to learn the output size; "
        "{advice}"
    )
    read_advice = "keep shapes fixed (`torch.where`, `masked_fill`, `ignore_index`)"
    default = False
    step_kind = "train"

    def sites(self, facts: FileFacts) -> list[HostSync]:
        return facts.host_syncs.data_dependent_shapes

    def selects(self, facts: FileFacts, loop: LoopFacts) -> bool:
        return loop.is_training


class PythonLoopOverTensorElements(Rule):
    """A Python `for` loop walks a tensor element by element.

    ## What it does
    Checks for `for i in range(len(t))`, `range(t.shape[k])` and `range(t.size(k))` over a
    tensor expression `t` whose body indexes tensors with `i` (`t[i]`, `out[i] = ...`,
    `t[:, i]`), in code that runs on every training or evaluation step (inside a training
    loop or a loop over a `DataLoader`, in `forward`, in a framework's per-step hook).
    Loops that run once (set-up, pre-processing, a `__main__` block), training, evaluation
    and DataLoader loops themselves, bodies that call a model or a criterion, loops over
    Python lists, and test files are not reported.

    A host read of the elements in such a loop (`if scores[i].item() > 0:`, or `if d:` in
    `for d in t:`, which this rule does not cover) makes the host wait once per element: in
    a training step it is TPL201's finding (on by default), at the read. Where both apply,
    the loop is reported here and the read there; vectorising the loop removes both.

    ## Why is this bad?
    Each `t[i]` is a separate operation: a kernel launch on the GPU (and a sync when the
    element is read on the host), a dispatcher round trip on the CPU. A loop over ten thousand
    elements launches tens of thousands of tiny kernels that a single vectorised operation
    would replace.

    ## Example
    ```python
    class Rescorer(nn.Module):
        def forward(self, logits):
            scores = torch.sigmoid(logits)
            weights = torch.softmax(logits, dim=0)
            for i in range(len(scores)):
                scores[i] = scores[i] * weights[i]
            return scores
    ```

    ## Use instead
    ```python
    class Rescorer(nn.Module):
        def forward(self, logits):
            return torch.sigmoid(logits) * torch.softmax(logits, dim=0)
    ```

    ## Fix safety
    There is no automatic fix: vectorising a loop body is a rewrite only its author can
    check.

    ## References
    - PyTorch docs, [Broadcasting semantics](https://pytorch.org/docs/stable/notes/broadcasting.html)
    - PyTorch docs, [Tensor indexing](https://pytorch.org/docs/stable/tensor_view.html)
    - PyTorch Performance Tuning Guide, [Fuse operations](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#fuse-operations)
      (eager mode launches a separate kernel for each operation)
    """

    code = "TPL204"
    name = "python-loop-over-tensor-elements"
    message = (
        "Python loop over the elements of a tensor runs one tiny operation per element; "
        "vectorise it"
    )
    default = False

    def check(self, facts: FileFacts) -> Iterator[Finding]:
        for loop in facts.loops.all:
            node = loop.node
            if not isinstance(node, cst.For) or not isinstance(node.target, cst.Name):
                continue
            if loop.is_hot or not self._ranges_over_tensor(facts, node.iter):
                continue
            if not facts.steps.runs_per_step(node):
                continue
            body_calls = [
                c for c in facts.index.inside(facts.index.calls, node.body)
                if facts.scopes.within_same_scope(c, node.body)
            ]
            if any(facts.tensors.is_module_call(call) for call in body_calls):
                continue
            if self._indexes_tensor_with(facts, node, node.target.value):
                yield self.finding(node)

    @staticmethod
    def _ranges_over_tensor(facts: FileFacts, iterated: cst.BaseExpression) -> bool:
        """`range(len(t))`, `range(t.shape[k])`, `range(t.size(k))`, also with a start."""
        if not isinstance(iterated, cst.Call) or not 1 <= len(iterated.args) <= 2:
            return False
        if facts.names.call_name(iterated) != "builtins.range" or any(
            arg.star or arg.keyword for arg in iterated.args
        ):
            return False
        return facts.tensors.is_tensor_size(iterated.args[-1].value)

    def _indexes_tensor_with(self, facts: FileFacts, loop: cst.For, variable: str) -> bool:
        """A subscript in the loop body whose index is the loop variable, of a tensor."""
        for subscript in facts.index.inside(facts.index.subscripts, loop.body):
            if not facts.scopes.within_same_scope(subscript, loop.body):
                continue
            indices = [
                element.slice.value
                for element in subscript.slice
                if isinstance(element.slice, cst.Index)
            ]
            uses_variable = any(
                isinstance(index, cst.Name) and index.value == variable for index in indices
            )
            if uses_variable and facts.tensors.is_definitely_tensor(subscript.value):
                return True
        return False


RULES = (SyncInTrainingLoop, SyncInEvalLoop, DataDependentShapeInLoop, PythonLoopOverTensorElements)
