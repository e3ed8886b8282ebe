"""Every CLI command and option is in docs/cli.md; every config key is in docs/configuration.md."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.main import get_command

from jit import config as cfg
from jit.cli import EXIT_CODES, app

DOCS = Path(__file__).resolve().parent.parent / "docs"
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
    keys = _keys(cfg._ConfigFile)
    assert {"tool_selection.token_budget", "servers.<name>.command", "shards.<name>.categories"} <= keys
    missing = sorted(k for k in keys if not _documented(k))
    assert not missing, f"config keys missing from docs/configuration.md: {missing}"


def test_every_available_tools_key_is_documented():
    keys = _keys(cfg.AvailableTools)
    assert {"tools[].skeleton", "overrides.<name>.exclude"} <= keys
    missing = sorted(k for k in keys if not _documented(k))
    assert not missing, f"available_tools.json keys missing from docs/configuration.md: {missing}"
