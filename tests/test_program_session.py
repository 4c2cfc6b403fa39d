"""The warm program (`program/session.py`): summaries kept between edits, linked again only
when one changes, and the files whose findings an edit elsewhere made stale."""

from __future__ import annotations

from pathlib import Path

from torchperf_lint.diagnostics import FileError, FileResult
from torchperf_lint.engine import Analysis, LintSettings, SourceError, analyse_text, rules_for
from torchperf_lint.program.session import ProgramSession
from torchperf_lint.runner import summarize_file

PROJECT = Path(__file__).parent / "fixtures" / "projects" / "per_step_helper"
SETTINGS = LintSettings(rules_for(["TPL201"]))


class Linter:
    """Lints texts through a session, counting the passes."""

    def __init__(self, session: ProgramSession) -> None:
        self.session = session
        self.passes = 0

    def lint(self, name: str, text: str) -> Analysis:
        def analyse(link) -> Analysis:
            self.passes += 1
            result = FileResult(name)
            try:
                analysis = analyse_text(text, name, SETTINGS, link=link)
            except SourceError as error:
                result.error = FileError(name, error.reason, error.location)
                return Analysis(result)
            result.diagnostics = analysis.diagnostics
            return Analysis(result, analysis.summary, analysis.asked)

        return self.session.analyse(name, analyse)


def rows(analysis: Analysis) -> list[tuple[str, int]]:
    return [(d.code, d.location.row) for d in analysis.result.diagnostics]


def project_session() -> ProgramSession:
    return ProgramSession({
        path.name: summarize_file(path) for path in sorted(PROJECT.glob("*.py"))
    })


def source(name: str) -> str:
    return (PROJECT / name).read_text(encoding="utf-8")


def test_a_helper_is_judged_by_the_program_it_belongs_to() -> None:
    linter = Linter(project_session())
    assert rows(linter.lint("utils.py", source("utils.py"))) == [("TPL201", 5), ("TPL201", 15)]
    assert linter.passes == 1


def test_an_edit_in_the_caller_makes_the_helper_stale_and_relinting_it_drops_the_finding() -> None:
    session = project_session()
    linter = Linter(session)
    linter.lint("utils.py", source("utils.py"))
    assert session.stale() == []
    engine = source("engine.py").replace("        log_metrics(loss)\n", "")
    assert rows(linter.lint("engine.py", engine)) == []
    assert session.stale() == ["utils.py"]
    assert rows(linter.lint("utils.py", source("utils.py"))) == [("TPL201", 15)]
    assert session.stale() == []


def test_an_edit_that_changes_no_summary_keeps_the_linked_program() -> None:
    session = project_session()
    linter = Linter(session)
    linter.lint("utils.py", source("utils.py"))
    program = session.program
    engine = source("engine.py").replace("# error: TPL104:13", "# a comment changes no summary")
    linter.lint("engine.py", engine)
    assert session.program is program
    assert session.stale() == []


def test_a_file_is_linted_once_in_the_program_that_holds_its_new_summary() -> None:
    before = (
        "import torch\n\n\n"
        "def log(loss):\n"
        "    print(loss.item())\n\n\n"
        "def train(model, loader, optimizer):\n"
        "    for x in loader:\n"
        "        loss = model(x.cuda()).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    linter = Linter(ProgramSession())
    assert rows(linter.lint("train.py", before)) == []
    passes = linter.passes
    analysis = linter.lint("train.py", before + "        log(loss)\n")
    assert rows(analysis) == [("TPL201", 5)]
    assert linter.passes == passes + 1


def test_a_file_that_stops_parsing_keeps_its_last_summary() -> None:
    session = project_session()
    linter = Linter(session)
    linter.lint("utils.py", source("utils.py"))
    broken = linter.lint("engine.py", source("engine.py") + "\ndef broken(:\n")
    assert broken.result.error is not None
    assert "engine.py" in session.files
    assert session.stale() == []


def test_a_file_without_pytorch_code_leaves_the_program() -> None:
    session = project_session()
    assert session.update("data.py", None)
    assert "data.py" not in session.files
    assert not session.update("data.py", None)


def test_a_forgotten_file_is_never_stale() -> None:
    session = project_session()
    linter = Linter(session)
    linter.lint("utils.py", source("utils.py"))
    session.forget("utils.py")
    linter.lint("engine.py", source("engine.py").replace("        log_metrics(loss)\n", ""))
    assert session.stale() == []
