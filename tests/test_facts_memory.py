"""Facts the TPL5xx rules rely on: rendering replacement code in place."""

from __future__ import annotations

from pathlib import PurePath

import libcst as cst

from torchperf_lint.facts import FileFacts
from torchperf_lint.rules.edits import add_keyword

SOURCE = (
    "def build(block, x):\n"
    "    if x:\n"
    "        return checkpoint(\n"
    "            block,\n"
    "            x,\n"
    "        )\n"
)


def facts_for(source: str) -> FileFacts:
    return FileFacts(cst.parse_module(source), PurePath("train.py"))


def the_call(facts: FileFacts) -> cst.Call:
    return next(call for call in facts.index.calls if call.func.value == "checkpoint")


def test_indents_lists_every_enclosing_block_outermost_first() -> None:
    facts = facts_for("def build(block, x):\n    if x:\n      return checkpoint(block, x)\n")
    assert facts.indents(the_call(facts)) == ["    ", "  "]


def test_code_at_keeps_the_indentation_of_continuation_lines() -> None:
    facts = facts_for(SOURCE)
    call = the_call(facts)
    new_call = add_keyword(call, "use_reentrant", cst.Name("False"))
    assert facts.code(new_call, at=call) == (
        "checkpoint(\n"
        "            block,\n"
        "            x,\n"
        "            use_reentrant=False,\n"
        "        )"
    )


def test_code_without_a_place_renders_at_module_level() -> None:
    facts = facts_for(SOURCE)
    assert facts.code(the_call(facts)).splitlines()[1] == "    block,"
