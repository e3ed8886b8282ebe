"""Claude sub-agents scoped by role: one agent per shard, whose only MCP server is jit acting for that role.

Each :class:`RoleAgent` is one shard of jit's config as a sub-agent: its MCP server is
``jit serve --stdio --expose-shard SHARD`` (the shard's compiled Full tier as tools, the
meta-tools for the rest, and every call checked against the role: a tool the role's policy
denies is neither listed nor callable), declared inline so that only that sub-agent connects
to it, and its ``disallowed_tools`` keep out the servers of the parent conversation (jit's
unscoped server among them), which a sub-agent would otherwise inherit.

Two renderings of the same agents:

* :func:`agent_definitions`: the Claude Agent SDK's ``AgentDefinition`` per agent, for
  ``ClaudeAgentOptions(agents=...)`` in a harness (the ``claude-agent-sdk`` extra);
* :func:`frontmatter`: the YAML front matter of a Claude Code agent file
  (``.claude/agents/<name>.md``), which ``jit setup claude-code --subagents`` writes
  (jit/cli/claude_agents.py).

Usage in a harness (docs/clients-setup.md, "The Claude Agent SDK")::

    from claude_agent_sdk import ClaudeAgentOptions
    from jit.adapters.claude_agent_sdk import agent_definitions, role_agents

    agents = role_agents(config, config_file="/abs/path/config.json", hidden_servers=())
    options = ClaudeAgentOptions(agents=agent_definitions(agents))
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import Config, ShardConfig
from ..errors import ConfigError

if TYPE_CHECKING:  # the optional extra: imported only by agent_definitions()
    from claude_agent_sdk import AgentDefinition

__all__ = ["AGENT_PREFIX", "RoleAgent", "agent_definitions", "agent_name", "frontmatter", "mcp_servers",
           "role_agents"]

#: What every agent's (and its server's) name starts with: ``jit-coder``, ``jit-reviewer``.
AGENT_PREFIX = "jit-"
#: Claude Code's rule for an agent's name: lowercase letters, digits and hyphens.
_AGENT_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def agent_name(shard: str) -> str:
    """The sub-agent (and server) name of ``shard``: ``jit-`` and the shard's name in lowercase, every
    run of other characters than letters and digits a hyphen (``Code_Reviewer`` -> ``jit-code-reviewer``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", shard.lower()).strip("-")
    name = AGENT_PREFIX + slug
    if not slug or not _AGENT_NAME.fullmatch(name):
        raise ConfigError(f"shard {shard!r} cannot name a sub-agent: a name needs a letter or digit",
                          key=f"shards.{shard}")
    return name


@dataclass(frozen=True)
class RoleAgent:
    """One shard as a sub-agent.

    ``server`` is the stdio entry that starts jit for the role (``{"type": "stdio", "command",
    "args"}``), registered under ``server_name`` for this agent alone; ``disallowed_tools`` are the
    parent's MCP servers as Claude Code's rules (``mcp__jit``: every tool of server ``jit``)."""

    name: str
    shard: str
    description: str
    prompt: str
    server_name: str
    server: dict[str, Any]
    disallowed_tools: tuple[str, ...]

    @property
    def tool_prefix(self) -> str:
        """What the names of this agent's MCP tools start with in Claude Code: ``mcp__jit-coder__``."""
        return f"mcp__{self.server_name}__"


def _description(shard: str, config: ShardConfig) -> str:
    what = config.description.strip() or f"works as the {shard} role"
    return (f"The {shard} role: {what}. Its MCP tools come through jit, scoped to what the {shard} role "
            f"may use; delegate {shard} work to it.")


def _prompt(shard: str, server_name: str) -> str:
    return (f"You act as the {shard} role. Your MCP tools come from jit (server {server_name}), which chose "
            f"them for this role and the current task:\n\n"
            f"- The tools named SERVER__TOOL are the {shard} role's selection for the current task. When the "
            f"task moves on, call set_task with the new task: the selection follows it.\n"
            f"- search_tools finds other tools this role may use; describe_tool gives one's full definition; "
            f"call_tool calls one by its server and tool name.\n"
            f"- A tool the {shard} role may not use is refused with tool_denied: do not retry it, say what "
            f"you needed it for instead.\n")


def role_agents(config: Config | Mapping[str, ShardConfig], *, shards: Iterable[str] | None = None,
                command: Sequence[str] | None = None, config_file: str | None = None,
                hidden_servers: Iterable[str] = ("jit",)) -> list[RoleAgent]:
    """One :class:`RoleAgent` per shard of ``config`` (a :class:`Config` or its ``shards``), in the
    config's order, or per shard named in ``shards``.

    ``command`` is the program and leading arguments that start jit (default: this interpreter with
    ``-m jit``, right for a harness on this machine; a file a team commits passes ``["jit"]``).
    ``config_file`` is the config ``jit serve`` reads (``-c``; none: jit's default lookup in the
    directory the client starts it in). ``hidden_servers`` are the MCP servers of the parent
    conversation the sub-agents must not inherit. Raises :class:`ConfigError` for a shard not in the
    config and for shards whose agent names would clash."""
    known = config.shards if isinstance(config, Config) else config
    wanted = list(known) if shards is None else list(dict.fromkeys(shards))
    unknown = [s for s in wanted if s not in known]
    if unknown:
        raise ConfigError(f"unknown shard {unknown[0]!r}; the config's shards: {', '.join(known) or 'none'}",
                          key="shards")
    program = list(command) if command is not None else [sys.executable, "-m", "jit"]
    if not program or not program[0]:
        raise ConfigError("the command that starts jit must not be empty")
    base = [*program[1:], "serve", "--stdio", *(("-c", config_file) if config_file else ())]
    hidden = tuple(f"mcp__{s}" for s in dict.fromkeys(hidden_servers))
    agents: list[RoleAgent] = []
    seen: dict[str, str] = {}
    for shard in wanted:
        name = agent_name(shard)
        if name in seen:
            raise ConfigError(f"shards {seen[name]!r} and {shard!r} would both be the sub-agent {name!r}: "
                              f"rename one of them", key=f"shards.{shard}")
        seen[name] = shard
        if f"mcp__{name}" in hidden:
            raise ConfigError(f"the parent's server {name!r} has the name of the {shard} role's own server",
                              key=f"shards.{shard}")
        agents.append(RoleAgent(
            name=name, shard=shard, description=_description(shard, known[shard]), prompt=_prompt(shard, name),
            server_name=name, server={"type": "stdio", "command": program[0],
                                      "args": [*base, "--expose-shard", shard]},
            disallowed_tools=hidden))
    return agents


def mcp_servers(agents: Iterable[RoleAgent]) -> dict[str, dict[str, Any]]:
    """Each agent's server by name: ``ClaudeAgentOptions(mcp_servers=...)`` for a harness that registers
    them once and names them in the agents (:func:`agent_definitions` with ``inline=False``). The
    parent conversation then sees them too; inline servers (the default) it does not."""
    return {a.server_name: dict(a.server) for a in agents}


def agent_definitions(agents: Iterable[RoleAgent], *, inline: bool = True,
                      model: str | None = None) -> dict[str, AgentDefinition]:
    """The Claude Agent SDK's ``AgentDefinition`` of each agent, by name (``ClaudeAgentOptions(agents=...)``).

    ``inline`` declares each agent's server in its definition (connected for that sub-agent only);
    without it the definition names the server, which :func:`mcp_servers` registers for the session.
    ``model`` is the SDK's model alias or id for every agent (default: the parent's). Needs the
    ``claude-agent-sdk`` extra (``pip install -e '.[claude-agent-sdk]'`` in jit's clone)."""
    try:
        from claude_agent_sdk import AgentDefinition
    except ImportError:
        raise ConfigError("agent_definitions needs the Claude Agent SDK: pip install -e '.[claude-agent-sdk]' in "
                          "jit's clone (role_agents() and frontmatter() need nothing)") from None
    return {a.name: AgentDefinition(
        description=a.description, prompt=a.prompt, model=model,
        mcpServers=[{a.server_name: dict(a.server)}] if inline else [a.server_name],
        disallowedTools=list(a.disallowed_tools) or None) for a in agents}


def frontmatter(agent: RoleAgent) -> dict[str, Any]:
    """The front matter of ``agent``'s Claude Code file, ``.claude/agents/<name>.md`` (the body is
    :attr:`RoleAgent.prompt`): ``name``, ``description``, the inline ``mcpServers`` and
    ``disallowedTools``. ``tools`` is left out, so the agent keeps Claude Code's own tools."""
    data: dict[str, Any] = {"name": agent.name, "description": agent.description,
                            "mcpServers": [{agent.server_name: dict(agent.server)}]}
    if agent.disallowed_tools:
        data["disallowedTools"] = list(agent.disallowed_tools)
    return data
