"""A task that writes an office document gets the tool that makes that format as its step.

"save it to /root/ppt/STEINS_GATE.pptx" implies /write like "save it to notes/x.md", but a
text file writer cannot make a PowerPoint file: the policy's ``file_step`` rows name, per
format, the category whose tools do it and a text the step's tool is nearest to. The real
LiveMCPBench catalog (ppt, word-document-server and excel servers among 70), SQLite, the
offline analyzer, the model and the shipped rules.
"""

from __future__ import annotations

import shutil

import pytest

from jit.config import Config
from jit.selection.compiler import Compiler
from jit.selection.logic import RuleSet, default_rules_dir
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter


@pytest.fixture(scope="module")
def compiler(livemcpbench_store, embedder, tmp_path_factory):
    config = Config.default(tmp_path_factory.mktemp("docsteps"))
    with Compiler(livemcpbench_store, config, embedder, token_counter=EstimateCounter()) as c:
        yield c


def steps(ts) -> list[tuple[str, str, Tier]]:
    """The tools of the file steps (named by their capability; a clause's step is named by its text)."""
    return sorted((s.name, s.step, s.tier) for s in ts.tools if s.step.startswith("/"))


@pytest.mark.parametrize(("task", "tool"), [
    ("Help me make a STEINS;GATE introduction PPT and help me save it to /root/ppt/STEINS_GATE.pptx.",
     "ppt__create_presentation"),
    ("Write a one-page company overview of NIO and save it as /root/word/nio.docx.",
     "word-document-server__create_document"),
    ("Recommend some cheap goodies worth buying recently and save the list to /root/excel/goods.xlsx.",
     "excel__excel_write_to_sheet"),
])
def test_an_office_document_s_step_goes_to_a_tool_of_its_format(compiler, task, tool):
    ts = compiler.compile(TaskContext(shard="coder", task=task))
    assert steps(ts) == [(tool, "/write", Tier.FULL)]
    path = ts.task_facts["file_target"][0]
    assert ts.get(tool).reasons[0] == f"tool of the step /write of {path}"


def test_a_text_file_and_a_document_each_get_their_writer(compiler):
    ts = compiler.compile(TaskContext(shard="coder", task=(
        "Collect this week's top GitHub trending repositories, save the notes to /root/notes/trending.md "
        "and save the table to /root/excel/trending.xlsx")))
    found = {name: reason for name, _, _ in steps(ts) for reason in [ts.get(name).reasons[0]]}
    assert found.get("excel__excel_write_to_sheet") == "tool of the step /write of /root/excel/trending.xlsx"
    (text_writer,) = [n for n in found if n != "excel__excel_write_to_sheet"]
    assert found[text_writer] == "tool of the step /write of /root/notes/trending.md"
    assert ts.get(text_writer).facts["categories"] == ["filesystem"]


def test_a_policy_of_three_argument_file_steps_still_names_text_files(compiler, tmp_path):
    """Rules written before file formats: ``file_step(Capability, Category, Text)`` is a text
    file's step; an office document then gets the step's best-scored tool, not a text writer."""
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    for name, old, new in [
        ("schema.dl", "derive file_step(Format, Capability, Category, Text)", "derive file_step(Capability, Category, Text)"),
        ("policy.dl", "+ file_step('text', '/write', 'filesystem',", "+ file_step('/write', 'filesystem',"),
    ]:
        path = rules / name
        text = path.read_text(encoding="utf-8")
        assert old in text
        text = text.replace(old, new)
        if name == "policy.dl":
            text = "\n".join(line for line in text.splitlines()
                             if not line.startswith(("+ file_step('presentation'", "+ file_step('document'",
                                                     "+ file_step('spreadsheet'", "+ file_step('edit'")))
        path.write_text(text + "\n", encoding="utf-8")
    with Compiler(compiler.store, compiler.config, compiler.embedder, token_counter=EstimateCounter(),
                  rules=RuleSet.load(rules)) as old:
        md = old.compile(TaskContext(shard="coder", task="Summarise the open issues and save it to notes/issues.md"))
        ppt = old.compile(TaskContext(shard="coder", task="Make an intro deck and save it to /root/ppt/intro.pptx"))
    (step,) = [s for s in md.tools if s.step.startswith("/")]
    assert step.reasons[0] == "tool of the step /write of notes/issues.md" and step.facts["categories"] == ["filesystem"]
    assert all(not s.reasons[0].startswith("tool of the step /write of") for s in ppt.tools if s.step)
