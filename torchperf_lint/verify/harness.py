"""The child side of `verify`: instrument PyTorch, run the user's script as `__main__`, report.

The runner starts `python -c "from torchperf_lint.verify.harness import main; main()"` with
the job as JSON in `$TORCHPERF_VERIFY_JOB` and a results folder in `$TORCHPERF_VERIFY_RESULT`,
where each rank writes `rank-<RANK>.json`. Under `torch.distributed.run` every rank runs the
harness (`RANK` comes from the launcher); each counts its own steps, and after the last one
waits until every rank has written its results, so all ranks stop together and none leaves a
collective another still waits in.
The script's (possibly rewritten) source runs with the original `__file__`, `sys.argv[0]`
and `sys.path[0]`, so sibling imports resolve as they do under `python script.py`.

A *step* is one `optimizer.step()` (seen by a global post-step hook), or one enabled
`GradScaler.update()` once a scaler is in use: the steps a scaler skips never reach the
optimizer's hook. After `warmup + steps` steps the harness writes its results and ends the
process with `os._exit`, so a broad `except` in the user's code cannot swallow the stop.

Two kinds of run:
- `timing`: the step hook, plus a clock around DataLoader's `__next__` (two clock reads per
  batch) for the data-wait share. Nothing that costs per tensor operation.
- `census`: adds a `TorchFunctionMode` counting host syncs at the user's call sites and records
  the losses passed to `Tensor.backward`, kept on the device and read once at the end.
"""

from __future__ import annotations

import builtins
import json
import os
import resource
import sys
import time
import traceback
import types
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from torchperf_lint.verify.processes import die_with_parent

JOB_ENV = "TORCHPERF_VERIFY_JOB"
RESULT_ENV = "TORCHPERF_VERIFY_RESULT"

# Tensor methods and functions that make the host wait for the device (on CUDA). They are
# counted whatever the device, so the census is the same on a CPU-only machine.
SYNC_CALLS = frozenset(
    {
        "item",
        "__float__",
        "__bool__",
        "__int__",
        "tolist",
        "cpu",
        "numpy",
        "__repr__",
        "__format__",
        "nonzero",
    }
)


@dataclass(frozen=True)
class Job:
    """What one child run does: which source, as which script, how instrumented, how long."""

    script: str  # the user's script: `__file__`, `sys.argv[0]`, `sys.path[0]` come from it
    code_path: str  # the source that actually runs (the script itself or a rewritten copy)
    mode: str  # "timing" or "census"
    warmup: int
    steps: int
    args: tuple[str, ...] = ()
    ranks: int = 1  # processes started by `torch.distributed.run`; 1 without it

    def to_json(self) -> str:
        return json.dumps({**self.__dict__, "args": list(self.args)})

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        return cls(**{**data, "args": tuple(data["args"])})


class Recorder:
    """What the instrumentation learns during one run, and the way out of the process."""

    def __init__(self, job: Job, results_folder: str) -> None:
        self.job = job
        self.results_folder = Path(results_folder)
        self.rank = int(os.environ.get("RANK", "0")) if job.ranks > 1 else 0
        self.optimizer_steps = 0
        self.scaler_updates = 0
        self.step_ends = [time.perf_counter()]  # step_ends[k]: when step k ended (0: start)
        self.data_wait = 0.0
        self.data_wait_before_window = 0.0
        self.syncs: Counter[tuple[int, str]] = Counter()  # (row in code_path, call) -> count
        self.syncs_elsewhere = 0  # syncs reached from no frame of the script
        self.syncs_before_window: Counter[tuple[int, str]] = Counter()
        self.syncs_elsewhere_before_window = 0
        self.losses: list = []  # 0-d tensors, still on their device
        self.counts_syncs = job.mode == "census"
        self.counting = self.counts_syncs  # off while the harness itself reads tensors

    @property
    def steps(self) -> int:
        return self.scaler_updates or self.optimizer_steps

    def on_step_event(self) -> None:
        """Called after every optimizer step and scaler update: a new step may have ended."""
        if self.steps < len(self.step_ends):
            return
        self.step_ends.append(time.perf_counter())
        if self.steps == self.job.warmup:
            self.data_wait_before_window = self.data_wait
            self.syncs_before_window = self.syncs.copy()
            self.syncs_elsewhere_before_window = self.syncs_elsewhere
        if self.steps >= self.job.warmup + self.job.steps:
            self.finish("ok")

    def count_sync(
        self, call: str, frame: types.FrameType | None, ignored: tuple[str, ...]
    ) -> None:
        """Attribute one sync to the innermost frame of the script, unless PyTorch's optimizer or
        AMP code made it first (AdamW alone reads several scalars per step)."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename == self.job.code_path:
                self.syncs[(frame.f_lineno, call)] += 1
                return
            if filename.startswith(ignored):
                return
            frame = frame.f_back
        self.syncs_elsewhere += 1

    def finish(self, status: str, error: str | None = None) -> None:
        """Write the results and end the process now, whatever the script is doing."""
        self.counting = False
        bounds = self.step_ends[self.job.warmup :]  # the window's start, then each step's end
        step_times = [end - begin for begin, end in zip(bounds, bounds[1:])]
        result = {
            "rank": self.rank,
            "status": status,
            "error": error,
            "steps": self.steps,
            "optimizer_steps": self.optimizer_steps,
            "measured_steps": len(step_times),
            "measured_time_s": bounds[-1] - bounds[0] if step_times else 0.0,
            "step_times_s": step_times,
            "data_wait_s": self.data_wait - self.data_wait_before_window if step_times else 0.0,
            "used_scaler": self.scaler_updates > 0,
            **_device_facts(),
        }
        if self.counts_syncs:
            result["syncs"] = [
                {"row": row, "call": call, "count": count}
                for (row, call), count in sorted((self.syncs - self.syncs_before_window).items())
            ]
            result["syncs_elsewhere"] = self.syncs_elsewhere - self.syncs_elsewhere_before_window
            result["losses"] = _read_losses(self.losses)
        written = self.results_folder / f"rank-{self.rank}.json"
        temporary = written.with_suffix(".partial")
        temporary.write_text(json.dumps(result), encoding="utf-8")
        temporary.replace(written)
        while len(list(self.results_folder.glob("rank-*.json"))) < self.job.ranks:
            time.sleep(0.001)  # the other ranks' last steps (the time limit ends a hung one)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # the script may have closed or replaced its streams
        os._exit(0 if status in ("ok", "ended") else 1)


def _device_facts() -> dict:
    import torch

    on_cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    if on_cuda:
        peak, kind = torch.cuda.max_memory_allocated(), "cuda"
    else:
        # ru_maxrss is in KiB on Linux and in bytes on macOS.
        scale = 1 if sys.platform == "darwin" else 1024
        peak, kind = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale, "rss"
    return {
        "cuda_available": torch.cuda.is_available(),
        "peak_memory_bytes": peak,
        "memory_kind": kind,
        "torch_version": torch.__version__,
    }


def _read_losses(losses: list) -> list[float]:
    import torch

    if not losses:
        return []
    try:
        return torch.stack([loss.float() for loss in losses]).cpu().tolist()
    except RuntimeError:  # losses on different devices cannot be stacked
        return [loss.item() for loss in losses]


def install(recorder: Recorder) -> None:
    """Hook PyTorch: the step hook, the scaler and DataLoader wrappers, and (census) the
    sync-counting mode and the loss recorder."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def after_optimizer_step(optimizer, args, kwargs) -> None:
        recorder.optimizer_steps += 1
        recorder.on_step_event()

    register_optimizer_step_post_hook(after_optimizer_step)

    scaler_update = torch.amp.GradScaler.update

    def update(scaler, *args, **kwargs):
        result = scaler_update(scaler, *args, **kwargs)
        if getattr(scaler, "_enabled", True):
            recorder.scaler_updates += 1
            recorder.on_step_event()
        return result

    torch.amp.GradScaler.update = update

    iterator_class = torch.utils.data.dataloader._BaseDataLoaderIter
    next_batch = iterator_class.__next__

    def timed_next(iterator):
        started = time.perf_counter()
        try:
            return next_batch(iterator)
        finally:
            recorder.data_wait += time.perf_counter() - started

    iterator_class.__next__ = timed_next

    if recorder.counts_syncs:
        _install_census(recorder, torch)


def _install_census(recorder: Recorder, torch: types.ModuleType) -> None:
    import torch.utils.data
    from torch.overrides import TorchFunctionMode

    # Syncs inside the optimizer, AMP and the DataLoader (its sampler's `tolist()`) are the
    # library's own, not the script's: they are not counted.

    ignored = tuple(
        os.path.dirname(module.__file__) + os.sep
        for module in (torch.optim, torch.amp, torch.cuda.amp, torch.utils.data)
    )

    class SyncCensus(TorchFunctionMode):
        """Counts host syncs where the script makes them; changes no result."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if recorder.counting and getattr(func, "__name__", None) in SYNC_CALLS:
                recorder.count_sync(func.__name__, sys._getframe(1), ignored)
            return func(*args, **(kwargs or {}))

    backward = torch.Tensor.backward
    inside_backward = False  # Tensor.backward re-enters itself through the mode's dispatch

    def recording_backward(tensor, *args, **kwargs):
        nonlocal inside_backward
        if inside_backward:
            return backward(tensor, *args, **kwargs)
        if recorder.counting and tensor.numel() == 1:
            recorder.losses.append(tensor.detach().reshape(()).clone())
        inside_backward = True
        try:
            return backward(tensor, *args, **kwargs)
        finally:
            inside_backward = False

    torch.Tensor.backward = recording_backward
    if torch.cuda.is_available():
        torch.cuda.set_sync_debug_mode("warn")
    SyncCensus().__enter__()  # stays on for the whole run; `finish` never returns


def run_script(job: Job, recorder: Recorder) -> None:
    """Run the job's source as `__main__`, as `python script.py args` would, then report."""
    script = os.path.abspath(job.script)
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(
        __file__=script, __builtins__=builtins, __cached__=None, __loader__=None, __spec__=None
    )
    sys.modules["__main__"] = main_module
    sys.argv = [job.script, *job.args]
    sys.path[0] = os.path.dirname(script)
    try:
        code = compile(Path(job.code_path).read_bytes(), job.code_path, "exec")
        recorder.step_ends[0] = time.perf_counter()
        exec(code, main_module.__dict__)  # noqa: S102 - running the user's script is the job
    except SystemExit as stop:
        if stop.code not in (None, 0):
            recorder.finish("error", f"the script exited with status {stop.code!r}")
    except BaseException:  # noqa: BLE001 - whatever the script raised is the report
        error = traceback.format_exc()
        sys.stderr.write(error)
        recorder.finish("error", error)
    recorder.finish("ended")


def main() -> None:
    """Entry point of the child process."""
    # Under `torch.distributed.run` the launcher is the parent: if it dies, so do the ranks.
    die_with_parent()
    job = Job.from_json(os.environ[JOB_ENV])
    recorder = Recorder(job, os.environ[RESULT_ENV])
    install(recorder)
    run_script(job, recorder)
