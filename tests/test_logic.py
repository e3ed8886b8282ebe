"""The rule files and the pyDatalog engine: loading, checking, facts, queries."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from jit.errors import RuleError
from jit.selection.logic import LogicEngine, RuleSet, default_rules_dir


@pytest.fixture
def rules_copy(tmp_path: Path) -> Path:
    d = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), d)
    return d


def _append(path: Path, text: str) -> int:
    """Append lines to a rule file; returns the line number of the first one."""
    before = path.read_text(encoding="utf-8")
    if not before.endswith("\n"):
        before += "\n"
    path.write_text(before + text, encoding="utf-8")
    return before.count("\n") + 1


def test_shipped_rules_load_and_declare_every_derived_predicate():
    rules = RuleSet.load(default_rules_dir())
    derived = {d.name for d in rules.derived()}
    assert {"blocked", "offline", "skeleton", "shard_points", "usage_points", "tier_cap",
            "capability_points", "category_points", "domain_points", "relevance_points"} <= derived
    defined = {r.head for r in rules.rules} | {s.split("(")[0].lstrip("+ ") for _, _, s in rules.statements}
    # unused_points ships without a row (rules/policy.dl says why): declared, so one row turns it on.
    assert derived - defined == {"unused_points"}


def test_dependents_follow_rules_through_other_predicates(rules_copy: Path):
    rules = RuleSet.load()
    assert rules.dependents("usage") == {"usage_points"}
    assert rules.dependents("server_status") == {"blocked", "offline", "tier_cap"}
    with (rules_copy / "policy.dl").open("a", encoding="utf-8") as f:
        f.write("\nblocked(T, 'penalised') <= usage_points(T, P) & (P < 0)\n")
    assert RuleSet.load(rules_copy).dependents("usage") == {"usage_points", "blocked"}


def test_syntax_error_names_file_and_line(rules_copy: Path):
    line = _append(rules_copy / "policy.dl", "offline(T) <= tool(T, S, N) &\n")
    with pytest.raises(RuleError) as info:
        RuleSet.load(rules_copy)
    assert info.value.path == str(rules_copy / "policy.dl")
    assert info.value.line == line
    assert "syntax error" in str(info.value)


def test_unknown_predicate_names_file_and_line(rules_copy: Path):
    line = _append(rules_copy / "policy.dl", "offline(T) <= tool(T, S, N) & server_state(S, 'down')\n")
    with pytest.raises(RuleError) as info:
        RuleSet.load(rules_copy)
    assert (info.value.path, info.value.line) == (str(rules_copy / "policy.dl"), line)
    assert "unknown predicate server_state/2" in str(info.value)


def test_misspelt_head_is_reported(rules_copy: Path):
    line = _append(rules_copy / "policy.dl", "skeletn(Sh, T, 'x') <= declared_skeleton(T, Sh)\n")
    with pytest.raises(RuleError) as info:
        RuleSet.load(rules_copy)
    assert info.value.line == line and "skeletn" in str(info.value)


def test_wrong_arity_and_bare_constants_are_reported(rules_copy: Path):
    line = _append(rules_copy / "policy.dl", "offline(T) <= tool(T, S)\n")
    with pytest.raises(RuleError, match="tool has 3 arguments") as info:
        RuleSet.load(rules_copy)
    assert info.value.line == line
    (rules_copy / "extra.dl").write_text("offline(T) <= tool(T, github, N)\n", encoding="utf-8")
    (rules_copy / "policy.dl").write_text((default_rules_dir() / "policy.dl").read_text(), encoding="utf-8")
    with pytest.raises(RuleError, match="quoted constant") as info:
        RuleSet.load(rules_copy)
    assert info.value.path == str(rules_copy / "extra.dl") and info.value.line == 1


def test_bad_schema_line_is_reported(rules_copy: Path):
    line = _append(rules_copy / "schema.dl", "fact broken(t)\n")
    with pytest.raises(RuleError) as info:
        RuleSet.load(rules_copy)
    assert (info.value.path, info.value.line) == (str(rules_copy / "schema.dl"), line)


def test_missing_rules_directory_is_a_rule_error(tmp_path: Path):
    with pytest.raises(RuleError, match="not found"):
        RuleSet.load(tmp_path / "nope")


def test_engine_derives_from_asserted_facts_and_forgets_retracted_ones():
    with LogicEngine(RuleSet.load()) as engine:
        facts = [("tool", 1, "fs", "read_file"), ("server_status", "fs", "disconnected"),
                 ("tool", 2, "sh", "bash"), ("server_status", "sh", "connected"), ("flag", 2, "hidden_unicode"),
                 ("usage", 2, 10, 0)]
        engine.change(add=facts)
        assert engine.query("offline", None) == [(1,)]
        assert engine.query("tier_cap", None, None) == [(2, "condensed")]
        assert engine.query("usage_points", 2, None) == [(2, 10)]
        assert sorted(engine.query("skeleton", "coder", None, None)) == [
            ("coder", 1, "read_file"), ("coder", 2, "run_command")]
        engine.change(remove=[("flag", 2, "hidden_unicode")])
        assert engine.query("tier_cap", None, None) == []


def test_task_facts_live_only_for_one_session():
    with LogicEngine(RuleSet.load()) as engine:
        first = engine.with_facts([("task_intent", "test"), ("task_language", "/python")],
                                  [("capability_points", (None, None)), ("domain_points", (None, None))])
        assert first == [[("/execute", 20)], [("/python", 20)]]
        assert engine.query("capability_points", None, None) == []


def test_a_rule_may_negate_a_fact_nothing_asserted_yet():
    """system_points negates task_word, which a task without such words never asserts: the engine
    defines every declared fact at load, so the rule answers instead of failing."""
    with LogicEngine(RuleSet.load()) as engine:
        quiet = dict(engine.with_facts([("task_shard", "coder")], [("system_points", (None, None))])[0])
        assert quiet["github"] == -30 and quiet["slack"] == -30
        named = dict(engine.with_facts([("task_word", "github"), ("task_word", "database")],
                                       [("system_points", (None, None))])[0])
        assert "github" not in named and "postgres" not in named and named["slack"] == -30


def test_session_answers_are_remembered_by_the_facts_they_read_until_the_engine_changes():
    """system_points reads task_word facts alone: a session differing only in other task facts is
    answered without asking pyDatalog again; a change of the engine's own facts forgets the answer."""
    with LogicEngine(RuleSet.load()) as engine:
        asked: list[str] = []
        query = engine._query

        def counted(name, args):
            asked.append(name)
            return query(name, args)

        engine._query = counted  # type: ignore[method-assign]
        points = [("system_points", (None, None))]
        first = engine.with_facts([("task_shard", "coder"), ("task_word", "github")], points)
        again = engine.with_facts([("task_shard", "reviewer"), ("task_capability", "/read"),
                                   ("task_word", "github")], points)
        assert again == first and asked == ["system_points"]
        other = engine.with_facts([("task_word", "slack")], points)
        assert dict(other[0])["github"] == -30 and "slack" not in dict(other[0]) and len(asked) == 2
        engine.change(add=[("hosted_system", "jitlab")])
        changed = dict(engine.with_facts([("task_shard", "coder"), ("task_word", "github")], points)[0])
        assert changed["jitlab"] == -30 and "github" not in changed and len(asked) == 3


def test_engine_is_usable_from_many_threads():
    with LogicEngine(RuleSet.load()) as engine:
        engine.change(add=[("tool", i, "s", f"t{i}") for i in range(50)] + [("server_status", "s", "error")])
        results: list[int] = []

        def ask() -> None:
            results.append(len(engine.query("offline", None)))

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [50] * 8
