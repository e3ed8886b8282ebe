"""A task as compile() takes it (:class:`TaskContext`) and the facts the rules see of it.

A compile asserts a task's facts for the length of one query (the shard, the intent verb,
the language, the domains of the files it names, and what the offline task analyzer reads
in its text: capabilities, categories, domains) and reads the policy's task tables from
them. A few facts are for the compiler alone (:data:`COMPILER_FACTS`): the steps the task
implies and the files it writes, which :class:`~jit.selection.policy.Policy` turns into the
tool of each step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ..analysis.offline_analyzer import analyze_task
from ..analysis.vocab import normalize_domain
from ..config import ShardConfig
from .logic import Fact

__all__ = ["CODE_EDIT", "COMPILER_FACTS", "FILE_EDIT", "FILE_TARGET", "IMPLIED", "TaskContext", "task_facts"]

#: The task fact kind of an implied step (TaskProfile.implied): read by the compiler, never asserted.
IMPLIED = "task_implied"
#: The task fact kind of a local file the task writes (TaskProfile.file_targets): never asserted.
FILE_TARGET = "task_file_target"
#: The task fact kind of a change to code or a config in local files, no file named to write
#: (TaskProfile.edits_code): its step is the policy's ``file_step('edit', …)``. Never asserted.
CODE_EDIT = "task_code_edit"
#: The task fact kind of a local text file the task changes in place (TaskProfile.edited_files; a
#: FILE_TARGET too): its step is the policy's ``file_step('edit', …)``. Never asserted.
FILE_EDIT = "task_file_edit"
#: Task facts the compiler reads and the engine never sees.
COMPILER_FACTS = frozenset({IMPLIED, FILE_TARGET, CODE_EDIT, FILE_EDIT})


@dataclass(frozen=True)
class TaskContext:
    """One shard spawn: who, what, and the limits of the tool set.

    ``budget`` overrides ``tool_selection.token_budget``; ``include_servers``
    (when given) keeps only those servers' tools, ``exclude_servers`` drops
    servers. Harness tools count as server ``harness``.
    """

    shard: str
    task: str
    intent: str | None = None
    language: str | None = None
    files: tuple[str, ...] = ()
    budget: int | None = None
    include_servers: tuple[str, ...] = ()
    exclude_servers: tuple[str, ...] = ()


def task_facts(ctx: TaskContext, text: str, shards: Mapping[str, ShardConfig], words: list[Fact],
               edits: bool = False) -> list[Fact]:
    """The facts of a task, each once: ``text`` is the task with the names of its files, ``words``
    the ``task_word`` facts of the words the policy names (:meth:`~jit.selection.policy.Policy.task_words`),
    ``edits``: whether the task's steps change code in place where the analyzer read no such change ("fix the
    missing null check in our code", :func:`~jit.selection.steps.task_steps`): a code edit too."""
    facts: list[Fact] = [("task_shard", ctx.shard), *words]
    if ctx.intent:
        facts.append(("task_intent", ctx.intent.strip().lower()))
    if ctx.language:
        lang = ctx.language.strip().lower()
        facts.append(("task_language", normalize_domain(lang) or "/" + lang.lstrip("/")))
    for f in ctx.files:
        dom = _EXTENSION_DOMAINS.get(os.path.splitext(f)[1].lower())
        if dom:
            facts.append(("task_domain", dom))
    if text.strip():
        profile = analyze_task(text, shards)
        facts += [("task_capability", c) for c in profile.capabilities]
        facts += [("task_category", c) for c in profile.categories]
        facts += [("task_domain", d) for d in profile.domains]
        facts += [(IMPLIED, c) for c in profile.implied]  # not for the engine (COMPILER_FACTS)
        facts += [(FILE_TARGET, f) for f in profile.file_targets]
        facts += [(FILE_EDIT, f) for f in profile.edited_files]
        if profile.edits_code or (edits and not profile.file_targets):
            facts.append((CODE_EDIT, "code"))
            if edits and "/write" not in (*profile.capabilities, *profile.implied):
                facts.append((IMPLIED, "/write"))
    return list(dict.fromkeys(facts))


_EXTENSION_DOMAINS = {
    ".py": "/python", ".js": "/javascript", ".mjs": "/javascript", ".jsx": "/javascript", ".ts": "/typescript",
    ".tsx": "/typescript", ".go": "/go", ".rs": "/rust", ".java": "/java", ".cs": "/csharp", ".c": "/cpp",
    ".cc": "/cpp", ".cpp": "/cpp", ".h": "/cpp", ".hpp": "/cpp", ".rb": "/ruby", ".php": "/php",
    ".swift": "/swift", ".kt": "/kotlin", ".sql": "/sql", ".sh": "/shell", ".bash": "/shell",
    ".html": "/web", ".css": "/web", ".vue": "/web", ".ipynb": "/data_science", ".tf": "/devops",
    ".dockerfile": "/devops",
}
