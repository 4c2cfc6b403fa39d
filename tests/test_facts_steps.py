"""What runs on every step (`facts.steps`): the notions the per-step rules rely on."""

from __future__ import annotations

from pathlib import PurePath

import libcst as cst
import pytest

from torchperf_lint.facts import FileFacts


def facts_of(source: str) -> FileFacts:
    return FileFacts(cst.parse_module(source), PurePath("model.py"))


def runs_per_step(source: str, marker: str = "marker") -> bool:
    facts = facts_of(source)
    [call] = [c for c in facts.index.calls if facts.code(c.func) == marker]
    return facts.steps.runs_per_step(call)


@pytest.mark.parametrize(
    ("source", "per_step"),
    [
        # A hot loop (training, or over a DataLoader), also in a `__main__` block.
        ("for x, y in loader:\n    marker()\n    model(x).sum().backward()\n", True),
        ('if __name__ == "__main__":\n    for x in loader:\n        marker()\n', True),
        # A library module's `__main__` smoke block runs once.
        (
            ("class Net(nn.Module):\n    def forward(self, x):\n        return x\n"
            'if __name__ == "__main__":\n    marker()\n    Net()(torch.zeros(1))\n'),
            False,
        ),
        ("def build():\n    marker()\n", False),
        ("class Net:\n    def __init__(self):\n        marker()\n", False),
        ("class Net:\n    def forward(self, x):\n        marker()\n", True),
        # A loop that runs a model each iteration: sampling, denoising, a timed benchmark.
        (
            ("def sample(self, latents, timesteps):\n"
            "    for t in timesteps:\n"
            "        marker()\n"
            "        noise = self.unet(latents, t)\n"
            "        latents = self.scheduler.step(noise, t, latents)\n"),
            True,
        ),
        ("def bench(model, x):\n    for _ in range(100):\n        marker()\n        model(x)\n", True),
        ("def once(items):\n    for item in items:\n        marker()\n        item.save()\n", False),
        # Periodic branches and error paths are not per step.
        (
            ("for step, x in enumerate(loader):\n"
            "    if step % 100 == 0:\n"
            "        marker()\n"),
            False,
        ),
        (
            ("for x in loader:\n"
            "    if x is None:\n"
            "        marker()\n"
            "        raise ValueError(x)\n"),
            False,
        ),
    ],
)
def test_runs_per_step(source: str, per_step: bool) -> None:
    assert runs_per_step(source) is per_step


def test_a_fairseq_task_step_is_a_framework_hook() -> None:
    source = (
        "from fairseq.tasks import FairseqTask\n"
        "class Reranking(FairseqTask):\n"
        "    def valid_step(self, sample, model, criterion):\n"
        "        marker()\n"
        "    def build_model(self, args):\n"
        "        other()\n"
    )
    assert runs_per_step(source) is True
    assert runs_per_step(source, "other") is False
