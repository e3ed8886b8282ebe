"""The sets of real MCP servers that ``bench/record_roles.py`` records, one folder each under ``bench/data/``.

* ``roles`` (issue #15): the 13 reference servers of modelcontextprotocol/servers, current
  and archived, as published on PyPI and npm.
* ``catalogs`` (issue #21): those 13 and the servers people attach to agents most (browsers,
  search, cloud and SaaS APIs, databases, work trackers, mail and chat), many of whose tools
  change things.

A spec says how a server is installed and started, never with a real credential: listing tools
calls no remote API, so a server that checks for a key or a URL at start gets ``DUMMY_ENV`` or a
loopback address. ``args`` and ``env`` may name ``{workdir}``, a scratch directory of the run
that holds ``files/``, ``repo/`` (an empty git repository) and ``home/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

DATA_ROOT = Path(__file__).parent / "data"

#: Placeholder credentials: the servers check that these are set before they start, and
#: listing tools never uses them. Nothing here is a real secret.
DUMMY_ENV = "dummy-not-a-real-credential"


#: A kubeconfig naming a cluster on loopback that does not exist: enough to start, never contacted.
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: dummy
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: dummy
  user: {token: dummy-not-a-real-credential}
contexts:
- name: dummy
  context: {cluster: dummy, user: dummy}
current-context: dummy
"""

#: A Google OAuth client file and a token file in the shapes Google's libraries read, with
#: placeholder values: a server that loads them at start can list its tools, and no call is made.
GOOGLE_OAUTH_CLIENT = json.dumps({"installed": {
    "client_id": "dummy.apps.googleusercontent.com", "client_secret": DUMMY_ENV, "project_id": "dummy",
    "redirect_uris": ["http://localhost"], "auth_uri": "https://accounts.google.com/o/oauth2/auth",
    "token_uri": "https://oauth2.googleapis.com/token"}})
GOOGLE_OAUTH_TOKEN = json.dumps({"access_token": DUMMY_ENV, "refresh_token": DUMMY_ENV, "token_type": "Bearer",
                                 "scope": "https://www.googleapis.com/auth/gmail.modify",
                                 "expiry_date": 4102444800000})


@dataclass(frozen=True)
class ServerSpec:
    """One server of a set: its package and how it is started."""

    name: str  # short and valid as a jit server name: the prefix of its tools
    registry: str  # "pypi" or "npm"
    package: str
    command: str  # console script of the package
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    #: The release installed while no recording pins one (a newer one may not run on Node 20).
    version: str | None = None
    #: More packages installed beside the server's own, e.g. ``mcp<2`` for a server the SDK 2 broke.
    requires: tuple[str, ...] = ()
    #: Servers of one group share a venv or an npm prefix, installed in one command; a server
    #: without one gets its own. Several reference servers import libraries they do not declare
    #: (zod, through the SDK): they send the schemas of their recording only when installed with
    #: the neighbours they were recorded with, which resolve those libraries the same way.
    group: str | None = None
    #: Files the server reads at start (a dummy kubeconfig, placeholder OAuth keys): path under
    #: ``{workdir}`` -> text, which may itself name ``{workdir}``.
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordSet:
    """A named set of servers, recorded into ``bench/data/<name>/``."""

    name: str
    servers: tuple[ServerSpec, ...]
    #: Sets whose recordings pin the versions of the servers this set shares with them.
    pins_from: tuple[str, ...] = ()
    #: Also write ``wire.jsonl`` (each ``tools/list`` page exactly as sent), the licences in
    #: ``servers.json`` and a ``SOURCE.md`` saying how, when and from what the set was recorded.
    provenance: bool = False
    #: Candidate packages left out of the set, each with the reason (listed in SOURCE.md).
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def folder(self) -> Path:
        return DATA_ROOT / self.name


#: Installed as one group, as they were first recorded: a venv for the PyPI three, a prefix for the rest.
ROLES = RecordSet("roles", tuple(replace(spec, group="roles") for spec in (
    ServerSpec("time", "pypi", "mcp-server-time", "mcp-server-time", ("--local-timezone", "UTC")),
    ServerSpec("fetch", "pypi", "mcp-server-fetch", "mcp-server-fetch"),
    ServerSpec("git", "pypi", "mcp-server-git", "mcp-server-git", ("--repository", "{workdir}/repo")),
    ServerSpec("filesystem", "npm", "@modelcontextprotocol/server-filesystem", "mcp-server-filesystem",
               ("{workdir}/files",)),
    ServerSpec("memory", "npm", "@modelcontextprotocol/server-memory", "mcp-server-memory",
               env={"MEMORY_FILE_PATH": "{workdir}/memory.jsonl"}),
    ServerSpec("everything", "npm", "@modelcontextprotocol/server-everything", "mcp-server-everything",
               ("stdio",)),
    ServerSpec("sequential-thinking", "npm", "@modelcontextprotocol/server-sequential-thinking",
               "mcp-server-sequential-thinking"),
    ServerSpec("github", "npm", "@modelcontextprotocol/server-github", "mcp-server-github",
               env={"GITHUB_PERSONAL_ACCESS_TOKEN": DUMMY_ENV}),
    ServerSpec("gitlab", "npm", "@modelcontextprotocol/server-gitlab", "mcp-server-gitlab",
               env={"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY_ENV, "GITLAB_API_URL": "https://gitlab.com/api/v4"}),
    ServerSpec("slack", "npm", "@modelcontextprotocol/server-slack", "mcp-server-slack",
               env={"SLACK_BOT_TOKEN": DUMMY_ENV, "SLACK_TEAM_ID": DUMMY_ENV}),
    ServerSpec("brave-search", "npm", "@modelcontextprotocol/server-brave-search", "mcp-server-brave-search",
               env={"BRAVE_API_KEY": DUMMY_ENV}),
    ServerSpec("google-maps", "npm", "@modelcontextprotocol/server-google-maps", "mcp-server-google-maps",
               env={"GOOGLE_MAPS_API_KEY": DUMMY_ENV}),
    # Connects lazily: listing tools needs no database, only a well-formed URL.
    ServerSpec("postgres", "npm", "@modelcontextprotocol/server-postgres", "mcp-server-postgres",
               ("postgresql://localhost/dummy",)),
)))

CATALOGS = RecordSet("catalogs", ROLES.servers + (
    ServerSpec("playwright", "npm", "@playwright/mcp", "playwright-mcp"),
    ServerSpec("context7", "npm", "@upstash/context7-mcp", "context7-mcp"),
    ServerSpec("brave", "npm", "@brave/brave-search-mcp-server", "brave-search-mcp-server",
               env={"BRAVE_API_KEY": DUMMY_ENV}),
    ServerSpec("google-calendar", "npm", "@cocal/google-calendar-mcp", "google-calendar-mcp",
               env={"GOOGLE_OAUTH_CREDENTIALS": "{workdir}/gcp-oauth.keys.json",
                    "GOOGLE_CALENDAR_MCP_TOKEN_PATH": "{workdir}/calendar-tokens.json", "HOME": "{workdir}/home"},
               files={"gcp-oauth.keys.json": GOOGLE_OAUTH_CLIENT,
                      "calendar-tokens.json": f'{{"normal": {GOOGLE_OAUTH_TOKEN}}}'}),
    ServerSpec("gmail", "npm", "@gongrzhe/server-gmail-autoauth-mcp", "gmail-mcp",
               env={"GMAIL_OAUTH_PATH": "{workdir}/gcp-oauth.keys.json",
                    "GMAIL_CREDENTIALS_PATH": "{workdir}/gmail-credentials.json", "HOME": "{workdir}/home"},
               files={"gcp-oauth.keys.json": GOOGLE_OAUTH_CLIENT, "gmail-credentials.json": GOOGLE_OAUTH_TOKEN}),
    ServerSpec("jira", "npm", "@aashari/mcp-server-atlassian-jira", "mcp-atlassian-jira",
               env={"ATLASSIAN_SITE_NAME": "example", "ATLASSIAN_USER_EMAIL": "agent@example.com",
                    "ATLASSIAN_API_TOKEN": DUMMY_ENV}),
    ServerSpec("notion", "npm", "@notionhq/notion-mcp-server", "notion-mcp-server", env={"NOTION_TOKEN": DUMMY_ENV}),
    # 0.3 and later proxy to Stripe's remote server; 0.2 serves the agent toolkit's tools itself.
    ServerSpec("stripe", "npm", "@stripe/mcp", "mcp", ("--tools=all", "--api-key=sk_test_dummy"), version="0.2.5"),
    ServerSpec("kubernetes", "npm", "mcp-server-kubernetes", "mcp-server-kubernetes",
               env={"KUBECONFIG": "{workdir}/kubeconfig"}, files={"kubeconfig": KUBECONFIG}),
    ServerSpec("puppeteer", "npm", "@modelcontextprotocol/server-puppeteer", "mcp-server-puppeteer"),
    ServerSpec("chrome-devtools", "npm", "chrome-devtools-mcp", "chrome-devtools-mcp", ("--no-usage-statistics",)),
    ServerSpec("sqlite", "pypi", "mcp-server-sqlite", "mcp-server-sqlite", ("--db-path", "{workdir}/sqlite.db"),
               requires=("mcp<2",)),
    # Its default field lists are joined from a set: a fixed hash seed keeps their order from run to run.
    ServerSpec("atlassian", "pypi", "mcp-atlassian", "mcp-atlassian",
               env={"PYTHONHASHSEED": "0",
                    "JIRA_URL": "https://example.atlassian.net", "JIRA_USERNAME": "agent@example.com",
                    "JIRA_API_TOKEN": DUMMY_ENV, "CONFLUENCE_URL": "https://example.atlassian.net/wiki",
                    "CONFLUENCE_USERNAME": "agent@example.com", "CONFLUENCE_API_TOKEN": DUMMY_ENV}),
    ServerSpec("mongodb", "npm", "mongodb-mcp-server", "mongodb-mcp-server",
               env={"MDB_MCP_CONNECTION_STRING": "mongodb://127.0.0.1:27017/dummy", "MDB_MCP_TELEMETRY": "disabled",
                    "HOME": "{workdir}/home"}),
    ServerSpec("cyanheads-git", "npm", "@cyanheads/git-mcp-server", "git-mcp-server",
               env={"MCP_TRANSPORT_TYPE": "stdio", "HOME": "{workdir}/home"}),
    ServerSpec("tavily", "npm", "tavily-mcp", "tavily-mcp", env={"TAVILY_API_KEY": DUMMY_ENV}),
    ServerSpec("obsidian", "pypi", "mcp-obsidian", "mcp-obsidian",
               env={"OBSIDIAN_API_KEY": DUMMY_ENV, "OBSIDIAN_HOST": "127.0.0.1"}),
    ServerSpec("exa", "npm", "exa-mcp-server", "exa-mcp-server", env={"EXA_API_KEY": DUMMY_ENV}),
    ServerSpec("monday", "npm", "@mondaydotcomorg/monday-api-mcp", "mcp-server-monday-api",
               env={"MONDAY_TOKEN": DUMMY_ENV}),
    ServerSpec("airtable", "npm", "airtable-mcp-server", "airtable-mcp-server", env={"AIRTABLE_API_KEY": DUMMY_ENV}),
    ServerSpec("redis", "pypi", "redis-mcp-server", "redis-mcp-server", ("--url", "redis://127.0.0.1:6379/0")),
    ServerSpec("asana", "npm", "@roychri/mcp-server-asana", "mcp-server-asana", env={"ASANA_ACCESS_TOKEN": DUMMY_ENV}),
    ServerSpec("linear", "npm", "@tacticlaunch/mcp-linear", "mcp-linear", env={"LINEAR_API_TOKEN": DUMMY_ENV}),
    ServerSpec("trello", "npm", "@delorenj/mcp-server-trello", "mcp-server-trello",
               env={"TRELLO_API_KEY": DUMMY_ENV, "TRELLO_TOKEN": DUMMY_ENV}),
    ServerSpec("discord", "npm", "mcp-discord", "mcp-discord", env={"DISCORD_TOKEN": DUMMY_ENV}),
    ServerSpec("hubspot", "npm", "@hubspot/mcp-server", "mcp-hubspot", env={"PRIVATE_APP_ACCESS_TOKEN": DUMMY_ENV}),
    ServerSpec("cloudflare", "npm", "@cloudflare/mcp-server-cloudflare", "mcp-server-cloudflare",
               ("run", "dummy-account-id"),
               env={"HOME": "{workdir}/home"},
               files={"home/.config/.wrangler/config/default.toml": 'oauth_token = "dummy-not-a-real-credential"\n'
                      'expiration_time = "2099-01-01T00:00:00.000Z"\n'}),
    ServerSpec("figma", "npm", "figma-developer-mcp", "figma-developer-mcp", ("--stdio",),
               env={"FIGMA_API_KEY": DUMMY_ENV}),
    ServerSpec("firecrawl", "npm", "firecrawl-mcp", "firecrawl-mcp", env={"FIRECRAWL_API_KEY": DUMMY_ENV},
               version="3.22.2"),
    ServerSpec("sentry", "npm", "@sentry/mcp-server", "sentry-mcp", env={"SENTRY_ACCESS_TOKEN": DUMMY_ENV},
               version="0.36.0"),
    ServerSpec("azure", "npm", "@azure/mcp", "azmcp", ("server", "start"),
               env={"AZURE_MCP_COLLECT_TELEMETRY": "false", "HOME": "{workdir}/home"}),
    ServerSpec("email", "pypi", "mcp-email-server", "mcp-email-server", ("stdio",), env={"HOME": "{workdir}/home"}),
    ServerSpec("google-workspace", "pypi", "workspace-mcp", "workspace-mcp", ("--transport", "stdio"),
               env={"GOOGLE_OAUTH_CLIENT_ID": "dummy.apps.googleusercontent.com",
                    "GOOGLE_OAUTH_CLIENT_SECRET": DUMMY_ENV, "HOME": "{workdir}/home"}),
    ServerSpec("excel", "pypi", "excel-mcp-server", "excel-mcp-server", ("stdio",),
               env={"EXCEL_FILES_PATH": "{workdir}/files"}),
), pins_from=("roles",), provenance=True, skipped=(
    ("@wonderwhy-er/desktop-commander", "its tool descriptions describe the machine the server runs on (the "
     "container it detects, that machine's mount points and host name), not the package: a recording here "
     "would carry the recording machine's details"),
    ("@supabase/mcp-server-supabase 0.13.0", "calls the Supabase API while answering tools/list "
     "('fetch failed' offline)"),
    ("@heroku/mcp-server 1.2.8, 1.2.7, 1.0.7", "1.2.x exits at start (imports "
     "@modelcontextprotocol/sdk/dist/esm/server/mcp, a path the SDK it installs lacks); 1.0.7's command "
     "is not executable ('Exec format error')"),
    ("@stripe/mcp 0.3.3", "proxies to Stripe's remote MCP server, so listing needs the network; "
     "0.2.5 (local, the agent toolkit's tools) is recorded"),
    ("firecrawl-mcp 3.26.0, @sentry/mcp-server 0.39.0", "need Node >= 22; the newest releases that run on "
     "Node 20 (3.22.2, 0.36.0) are recorded"),
    ("mcp-server-docker", "needs Python >= 3.12 and connects to the Docker daemon at start; none runs here"),
    ("@modelcontextprotocol/server-redis", "connects to Redis at start and exits without a server; Redis's "
     "own redis-mcp-server is recorded"),
    ("@modelcontextprotocol/server-gdrive", "one tool (search), and Drive is covered by workspace-mcp"),
    ("@doist/todoist-ai 9.0.0", "its only release depends on @doist/todoist-mcp@^9, which the registry "
     "does not serve: it does not install"),
    ("obsidian-mcp-server (npm)", "needs Node >= 24; mcp-obsidian (PyPI) is recorded"),
))

SETS: dict[str, RecordSet] = {s.name: s for s in (ROLES, CATALOGS)}
