"""Node rewrites several rules' fixes share: adding or setting a keyword argument, replacing a
statement."""

from __future__ import annotations

import libcst as cst

from torchperf_lint.facts import FileFacts
from torchperf_lint.rules.base import NodeEdit

_NO_SPACE = cst.SimpleWhitespace("")
_ONE_SPACE = cst.SimpleWhitespace(" ")


def keyword_argument(name: str, value: cst.BaseExpression) -> cst.Arg:
    """`name=value`, formatted as PEP 8 wants keyword arguments."""
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE),
    )


def add_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Append `name=value` to `call`, keeping its layout and its comments where they were.

    The whitespace after the last argument runs to the closing parenthesis and holds the
    comment of the last argument's line: the old last argument keeps that comment, and only
    the line break and indentation before `)` move behind the new argument.
    """
    new_argument = keyword_argument(name, value)
    if not call.args:
        return call.with_changes(args=[new_argument])
    args = list(call.args)
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        # A trailing comma means one argument per line: the new one goes on a line of its own.
        closing = last.comma.whitespace_after
        line_break = _argument_line_break(call)
        if isinstance(closing, cst.ParenthesizedWhitespace) and line_break is not None:
            args[-1] = last.with_changes(
                comma=last.comma.with_changes(
                    whitespace_after=closing.with_changes(
                        indent=line_break.indent, last_line=line_break.last_line
                    )
                )
            )
            ending = cst.ParenthesizedWhitespace(indent=closing.indent, last_line=closing.last_line)
            args.append(new_argument.with_changes(comma=cst.Comma(whitespace_after=ending)))
        else:
            previous = args[-2].comma if len(args) > 1 else None
            separator = previous if isinstance(previous, cst.Comma) else cst.Comma(
                whitespace_after=_ONE_SPACE
            )
            args[-1] = last.with_changes(comma=separator)
            args.append(new_argument.with_changes(comma=last.comma))
    else:
        # The new argument joins the last one's line, before what ends it (`)` on the next
        # line, or a comment).
        args[-1] = last.with_changes(
            comma=cst.Comma(whitespace_after=_ONE_SPACE), whitespace_after_arg=_NO_SPACE
        )
        args.append(new_argument.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


def _argument_line_break(call: cst.Call) -> cst.ParenthesizedWhitespace | None:
    """The line break and indentation between the arguments of a call that puts each on its
    own line (after the previous argument's comma, or after `(` for a single argument)."""
    if len(call.args) > 1 and isinstance(call.args[-2].comma, cst.Comma):
        between = call.args[-2].comma.whitespace_after
    else:
        between = call.whitespace_before_args
    return between if isinstance(between, cst.ParenthesizedWhitespace) else None


def set_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Give keyword `name` the value `value`, replacing it if the call already passes it."""
    for position, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == name:
            args = list(call.args)
            args[position] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    return add_keyword(call, name, value)


def remove_keyword(call: cst.Call, name: str) -> cst.Call:
    """Drop keyword argument `name`, moving its comma handling to the new last argument."""
    args = [arg for arg in call.args if arg.keyword is None or arg.keyword.value != name]
    if len(args) == len(call.args):
        return call
    if args and not any(arg.keyword is not None and arg.keyword.value == name for arg in args):
        removed_last = call.args[-1].keyword is not None and call.args[-1].keyword.value == name
        if removed_last:
            args[-1] = args[-1].with_changes(comma=call.args[-1].comma)
    return call.with_changes(args=args)


def replace_statement(
    facts: FileFacts, statement: cst.BaseStatement, replacement: cst.BaseStatement
) -> NodeEdit:
    """An edit that replaces a compound statement (a loop, an `if`) with `replacement`, its
    nested lines rendered at the statement's indentation and its leading lines kept."""
    text = facts.code(replacement.with_changes(leading_lines=()), at=statement)
    # The edit starts where the statement does, after its indentation, and ends with its last
    # line's text, before the line break.
    text = text.removeprefix("".join(facts.indents(statement)))
    return NodeEdit(statement, text.removesuffix(facts.module.default_newline))
