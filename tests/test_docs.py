"""The documentation says what the code does, and a change to one without the other fails here.

Every CLI command and option is in docs/cli.md; every config key is in
docs/configuration.md; every derived predicate of rules/schema.dl is in
docs/selection.md; every meta-tool of `jit serve` is in docs/serve.md; every error
code is in docs/cli.md's table; every module of the package is in the module table of
docs/ARCHITECTURE.md; and no Markdown link points outside the repository or nowhere.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import re
import subprocess
import types
import typing
import unicodedata
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from pydantic import BaseModel
from typer.main import get_command

from jit import config as cfg, errors
from jit.cli import EXIT_CODES, app, exit_code
from jit.selection.logic import RuleSet
from jit.serve.server import create_server
from jit.serve.state import ServeOptions

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PACKAGE = REPO / "jit"
CLI_DOC = (DOCS / "cli.md").read_text(encoding="utf-8")
CONFIG_DOC = (DOCS / "configuration.md").read_text(encoding="utf-8")

GROUP = get_command(app)  # typer's own (vendored) click group


def _section(name: str) -> str:
    """The text of ``## `jit NAME` `` up to the next second-level heading."""
    m = re.search(rf"^## `jit {re.escape(name)}`\n(.*?)(?=^## |\Z)", CLI_DOC, re.DOTALL | re.MULTILINE)
    assert m, f"docs/cli.md has no section '## `jit {name}`'"
    return m.group(1)


@pytest.mark.parametrize("name", sorted(GROUP.commands))
def test_every_command_and_option_is_documented(name):
    section = _section(name)
    for param in GROUP.commands[name].params:
        if param.param_type_name == "option":
            for opt in param.opts:
                assert f"`{opt}" in section, f"jit {name}: option {opt} is not documented in its section"
        else:
            metavar = (param.metavar or param.name.upper()).split()[0]
            assert f"`{metavar}" in section, f"jit {name}: argument {metavar} is not documented"


def test_global_options_and_exit_codes_are_documented():
    for param in GROUP.params:
        for opt in param.opts:
            assert f"`{opt}" in CLI_DOC, f"global option {opt} is not documented"
    table = re.search(r"^## Exit codes\n(.*?)(?=^## )", CLI_DOC, re.DOTALL | re.MULTILINE).group(1)
    for code in set(EXIT_CODES.values()) | {0, 130}:
        assert re.search(rf"^\| {code} \|", table, re.MULTILINE), f"exit code {code} is not documented"


def _models(annotation: typing.Any) -> list[tuple[str, type[BaseModel]]]:
    """The pydantic models inside an annotation, with the key suffix their container adds."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models(args[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in args for m in _models(a)]
    if origin is dict:
        return [(".<name>" + suffix, m) for suffix, m in _models(args[1])]
    if origin is list:
        return [("[]" + suffix, m) for suffix, m in _models(args[0])]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [("", annotation)]
    return []


def _keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for name, field in model.model_fields.items():
        key = prefix + name
        keys.add(key)
        for suffix, inner in _models(field.annotation):
            keys |= _keys(inner, f"{key}{suffix}.")
    return keys


def _documented(key: str) -> bool:
    # Documentation names dict entries by what they are: servers.<name>, overrides.<key>.
    pattern = re.escape(key).replace(re.escape("<name>"), r"<[a-z]+>")
    return re.search(rf"`{pattern}`", CONFIG_DOC) is not None


def test_every_config_key_is_documented():
    keys = _keys(cfg.ConfigFile)
    assert {"tool_selection.token_budget", "servers.<name>.command", "shards.<name>.categories"} <= keys
    missing = sorted(k for k in keys if not _documented(k))
    assert not missing, f"config keys missing from docs/configuration.md: {missing}"


def test_every_available_tools_key_is_documented():
    keys = _keys(cfg.AvailableTools)
    assert {"tools[].skeleton", "overrides.<name>.exclude"} <= keys
    missing = sorted(k for k in keys if not _documented(k))
    assert not missing, f"available_tools.json keys missing from docs/configuration.md: {missing}"


# --------------------------------------------------------------------------- tables in the docs


def _heading_section(doc: Path, heading: str) -> str:
    """The text under the Markdown heading ``heading`` (any level) up to the next heading
    of the same or a higher level."""
    text = doc.read_text(encoding="utf-8")
    m = re.search(rf"^(#+) {re.escape(heading)}\n", text, re.MULTILINE)
    assert m, f"{doc.relative_to(REPO)} has no heading {heading!r}"
    level = len(m.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE).search(text, m.end())
    return text[m.end() : end.start() if end else len(text)]


def _table_column(section: str, column: int) -> list[str]:
    """Cell ``column`` of every body row of the Markdown table(s) in ``section``."""
    rows = [line for line in section.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    body = [c for c in cells if not all(re.fullmatch(r":?-+:?", x) for x in c)]
    return [c[column] for c in body[1:] if len(c) > column]  # body[0] is the header


def _code_names(cell: str) -> list[str]:
    """The names in backticks in a table cell, an argument list dropped: `skeleton(Shard, T)` → skeleton."""
    return [re.sub(r"\(.*\)$", "", name) for name in re.findall(r"`([^`]+)`", cell)]


def test_every_derived_predicate_is_documented_in_selection():
    derived = {d.name for d in RuleSet.load().derived()}
    assert {"blocked", "tier_cap", "relevance_points"} <= derived
    section = _heading_section(DOCS / "selection.md", "2. The rules (`rules/`)")
    documented = [n for cell in _table_column(section, 2) for n in _code_names(cell)]
    assert len(documented) == len(set(documented)), f"a predicate is listed twice: {documented}"
    assert set(documented) == derived, (
        f"docs/selection.md's strata table vs rules/schema.dl's derive predicates: "
        f"undocumented {sorted(derived - set(documented))}, not derived {sorted(set(documented) - derived)}"
    )


def test_every_meta_tool_of_jit_serve_is_documented():
    registered = {t.name for options in (ServeOptions(), ServeOptions(expose_shard="coder"))
                  for t in asyncio.run(create_server(options).list_tools())}
    assert {"search_tools", "call_tool", "reload", "set_task"} <= registered
    section = _heading_section(DOCS / "serve.md", "Meta-tools")
    documented = {n for cell in _table_column(section, 0) for n in _code_names(cell)}
    assert documented == registered, (
        f"docs/serve.md's meta-tool table vs jit serve: undocumented {sorted(registered - documented)}, "
        f"not served {sorted(documented - registered)}"
    )


def _error_classes() -> list[type[errors.JitError]]:
    return [c for _, c in inspect.getmembers(errors, inspect.isclass)
            if issubclass(c, errors.JitError) and c.__module__ == errors.__name__]


def test_every_error_code_is_documented_with_its_class_and_exit_code():
    classes = _error_classes()
    codes = [c.code for c in classes]
    assert len(codes) == len(set(codes)), f"two error classes share a code (one does not set its own): {codes}"
    section = _heading_section(DOCS / "cli.md", "Error codes")
    rows = {
        _code_names(code)[0]: (_code_names(cls)[0], int(exit_))
        for code, cls, exit_ in zip(*(_table_column(section, i) for i in range(3)), strict=True)
    }
    expected = {c.code: (c.__name__, exit_code(c.__new__(c))) for c in classes}
    assert rows == expected, (
        f"docs/cli.md's error-code table vs jit/errors.py: undocumented {sorted(expected.keys() - rows.keys())}, "
        f"no such code {sorted(rows.keys() - expected.keys())}, "
        f"wrong class or exit code {sorted(k for k in rows.keys() & expected.keys() if rows[k] != expected[k])}"
    )


def _modules() -> set[str]:
    """Every module of the package, as a path relative to jit/ (subpackages included)."""
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def test_the_module_table_names_every_module_and_nothing_else():
    section = _heading_section(DOCS / "ARCHITECTURE.md", "Modules")
    named = [n for cell in _table_column(section, 0) for n in _code_names(cell)]
    # A subpackage may be named by its directory (`catalog/`) for its __init__.py.
    named = [n + "__init__.py" if n.endswith("/") else n for n in named]
    assert len(named) == len(set(named)), f"a module is named twice in docs/ARCHITECTURE.md: {named}"
    modules = _modules()
    assert len(modules) > 20 and "__init__.py" in modules
    assert set(named) == modules, (
        f"docs/ARCHITECTURE.md's module table vs jit/: missing {sorted(modules - set(named))}, "
        f"no such module {sorted(set(named) - modules)}"
    )


def _generator():
    """scripts/gen_architecture.py, loaded from its path (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_architecture", REPO / "scripts" / "gen_architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_module_table_is_the_one_the_package_generates():
    gen = _generator()
    page = (DOCS / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert page.count(gen.BEGIN) == 1 and page.count(gen.END) == 1, "docs/ARCHITECTURE.md lost its table markers"
    assert gen.render(page) == page, f"docs/ARCHITECTURE.md's module table is stale: run `{gen.COMMAND}`"


def test_the_module_table_generator_follows_the_package(tmp_path):
    """A module added, moved or removed changes the table; a module without a docstring is refused."""
    gen = _generator()
    package = tmp_path / "jit"
    (package / "wing").mkdir(parents=True)
    (package / "__init__.py").write_text('"""The package."""\n', encoding="utf-8")
    (package / "core.py").write_text('"""A core module, ``code`` and\n:class:`~jit.models.ToolDef`.\n\nMore."""\n', encoding="utf-8")
    (package / "wing" / "__init__.py").write_text('"""A wing of its own: a | b."""\n', encoding="utf-8")
    (package / "wing" / "part.py").write_text('"""One part."""\n', encoding="utf-8")
    page = f"# Title\n\n## Modules\n\n{gen.BEGIN}\nold rows\n{gen.END}\n\nAfter.\n"
    assert gen.render(page, package) == (
        f"# Title\n\n## Modules\n\n{gen.BEGIN}\n\n| module | holds |\n|---|---|\n"
        "| `__init__.py` | The package. |\n| `core.py` | A core module, `code` and `ToolDef`. |\n"
        "| `wing/` | A wing of its own: a \\| b. |\n| `wing/part.py` | One part. |\n"
        f"\n{gen.END}\n\nAfter.\n"
    )
    (package / "wing" / "part.py").rename(package / "moved.py")
    assert "`moved.py` | One part." in gen.render(page, package)
    assert "wing/part.py" not in gen.render(page, package)
    (package / "bare.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(gen.GenerationError, match="bare.py has no docstring"):
        gen.render(page, package)
    with pytest.raises(gen.GenerationError, match="lacks the markers"):
        gen.render("# Title\n", package)


# --------------------------------------------------------------------------- links

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)


def _markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def _links(doc: Path) -> list[str]:
    text = _INLINE_CODE.sub("", _FENCE.sub("", doc.read_text(encoding="utf-8")))
    return _LINK.findall(text) + _REFERENCE.findall(text)


def _anchors(doc: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#+ (.+?)\s*$", _FENCE.sub("", doc.read_text(encoding="utf-8")), re.MULTILINE):
        slug = "".join(ch for ch in heading.lower() if ch in " -_" or unicodedata.category(ch)[0] in "LN")
        slug = slug.replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        seen.setdefault(f"{slug}-{n}" if n else slug, 1)
    return set(seen)


@pytest.mark.parametrize("doc", _markdown_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_links_stay_in_the_repository_and_resolve(doc):
    bad = []
    for target in _links(doc):
        url = urlsplit(target)
        if url.scheme in ("http", "https", "mailto"):
            continue  # a web address: not a file
        if url.scheme or url.netloc:
            bad.append(f"{target} (not a repository path)")
            continue
        path = (doc.parent / unquote(url.path)).resolve() if url.path else doc
        if url.path.startswith("/") or not path.is_relative_to(REPO):
            bad.append(f"{target} (outside the repository)")
        elif not path.exists():
            bad.append(f"{target} (no such file)")
        elif url.fragment and path.suffix == ".md" and url.fragment not in _anchors(path):
            bad.append(f"{target} (no such heading in {path.relative_to(REPO).as_posix()})")
    assert not bad, f"{doc.relative_to(REPO).as_posix()}: broken links: {bad}"


# --------------------------------------------------------------------------- what a new user reads (issue #18)


def _fenced_lines(doc: Path) -> list[str]:
    """Every line inside the fenced code blocks of ``doc``: what a reader copies and runs."""
    blocks = (m.group(0) for m in _FENCE.finditer(doc.read_text(encoding="utf-8")))
    return [line.strip() for block in blocks for line in block.splitlines()]


def test_a_one_shot_compile_is_documented_as_leaving_statuses_and_tools_online():
    section = _section("compile")
    prose = " ".join(section.split())
    assert "it changes no server's status" in prose and "reached stay `idle`, and their tools stay online" in prose
    assert not re.search(r"compile[^.]*\bmarks?\b[^.]*offline", prose), "a compile marks nothing offline"
    # What the sentence rests on: `idle` (a sync's servers once it ended) counts as online.
    from jit.models import ServerStatus

    assert ServerStatus.IDLE.online and ServerStatus.CONNECTED.online and not ServerStatus.UNKNOWN.online


def test_client_setups_name_the_config_with_c_or_jit_config_never_the_long_option():
    """The MCP Inspector takes ``--config`` for itself; ``-c`` and ``JIT_CONFIG`` reach jit."""
    for doc in _markdown_files():
        for line in _fenced_lines(doc):
            if re.search(r"\bjit\b.*\bserve\b|\"serve\"", line):
                assert "--config" not in line, f"{doc.relative_to(REPO)}: {line.strip()}"
    clients = _heading_section(DOCS / "serve.md", "Connecting a client")
    assert "-c FILE" in clients and "JIT_CONFIG" in clients and "Inspector" in clients
    from jit.serve.early import serve_command

    assert serve_command(["serve", "--stdio", "-c", "/a/config.json"], {}).config_file == "/a/config.json"
    assert serve_command(["serve", "--stdio"], {"JIT_CONFIG": "/b.json"}).config_file == "/b.json"


def test_the_config_file_order_is_documented_with_the_mcp_json_fallback():
    which = " ".join(_heading_section(DOCS / "configuration.md", "Which file").split())
    assert "3. else `./.jit/config.json`, when it exists" in which and "note: no config.json here" in which
    assert "4. else `./config.json`; 5. else `./.mcp.json`" in which
    global_option = next(r for r in CLI_DOC.splitlines() if r.startswith("| `--config FILE`"))
    assert "else `./.mcp.json`" in global_option


def test_the_readme_eval_command_runs_on_a_fresh_clone():
    """The README's ``jit eval`` line names data a clone has (``check_data`` passes on it)."""
    from jit.evaluation.datasets import DATASETS, check_data

    readme = REPO / "README.md"
    commands = [line.split("#")[0].split() for line in _fenced_lines(readme) if line.startswith("jit eval ")]
    assert commands, "the README shows a `jit eval` command"
    for words in commands:
        assert "--data-dir" in words, f"{' '.join(words)}: the benchmark data is not in the package"
        check_data(DATASETS[words[2]], REPO / words[words.index("--data-dir") + 1])
    text = " ".join(readme.read_text(encoding="utf-8").split())
    assert "$JIT_DATA_DIR" in text and "docs/quality.md#the-data" in text


def test_the_readme_says_how_to_get_cpu_torch_and_the_setup_script_does_it():
    url = "https://download.pytorch.org/whl/cpu"
    readme_text = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"pip install torch --index-url {url}" in _fenced_lines(REPO / "README.md")
    setup = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert f"TORCH_INDEX_URL={url}" in " ".join(readme_text.split())
    assert re.search(r'pip install --quiet "torch==[\d.]+" \$\{TORCH_INDEX_URL:\+--index-url "\$TORCH_INDEX_URL"\}',
                     setup)


ACTIVATE = "source .venv/bin/activate"


def test_the_readme_and_the_demo_say_how_to_put_jit_on_path():
    """``./scripts/demo.sh`` runs jit with ``.venv/bin`` on its own PATH; the user's shell has no
    ``jit`` afterwards. The README's first commands and the demo's last lines say how to get it."""
    first_block = _FENCE.search((REPO / "README.md").read_text(encoding="utf-8")).group(0)
    assert "./scripts/demo.sh" in first_block and ACTIVATE in first_block
    demo = (REPO / "scripts" / "demo.sh").read_text(encoding="utf-8").splitlines()
    last_jit = max(i for i, line in enumerate(demo) if line.startswith("jit "))
    assert any(line.startswith("echo") and ACTIVATE in line for line in demo[last_jit:]), "said after the demo ran"
    if not (REPO / ".venv" / "bin" / "activate").is_file():
        pytest.skip("no .venv in this checkout (./scripts/setup.sh makes it)")
    found = subprocess.run(["bash", "-c", f"{ACTIVATE} && command -v jit"], cwd=REPO, capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(REPO)}, timeout=60)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).parent.resolve() == (REPO / ".venv" / "bin").resolve()


def test_every_part_of_the_logic_score_is_documented_with_its_rule():
    """docs/selection.md says what the logic points are made of: one row per part a compile
    reports (ScoredTool.points), naming the rule that gives it."""
    from jit.selection.policy import POINTS

    section = _heading_section(DOCS / "selection.md", "3. Scores")
    parts = {p.strip() for cell in _table_column(section, 0) for p in cell.split("/")}
    rules = {n for cell in _table_column(section, 1) for n in _code_names(cell)}
    named = {p.part for p in POINTS}
    predicates = {p.predicate for p in POINTS}
    assert named <= parts, f"undocumented logic parts: {sorted(named - parts)}"
    assert predicates <= rules, f"rules not named: {sorted(predicates - rules)}"
