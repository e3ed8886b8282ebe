"""How a task names the servers of a catalog: a server's name said as a product ("search Notion",
"the Web board in Trello", "MongoDB"), and the servers whose tools only demonstrate the protocol,
whose tools do no step (:mod:`jit.selection.steps`)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache

from ..text import split_identifier
from .snapshot import CatalogSnapshot
from .step_words import VERBS

__all__ = ["DEMO_TOOLS", "ServerNames", "demo_servers", "named_servers", "server_names"]

#: A tool description that demonstrates the protocol rather than doing work.
_DEMO = re.compile(r"\b(?:demonstrat\w*|simulat\w*|echoes back|mcp (?:server|client|logo)s?)\b", re.I)


#: The words of a tool's name that only a server demonstrating the protocol has (the reference ``everything``
#: server's echo, sum and environment).
DEMO_TOOLS = frozenset({("echo",), ("add",), ("get", "sum"), ("get", "env"), ("print", "env")})


def demo_servers(servers: Mapping[str, Sequence[str]],
                 names: Mapping[str, Sequence[str]] | None = None) -> frozenset[str]:
    """Servers whose tools demonstrate the protocol (echo, a sum, their environment): half
    their tools or more describe themselves as demonstrating or simulating something or name
    MCP itself as their subject, and, when ``names`` (server -> its tools' names) is given, one
    of them is a reference server's own tool (:data:`DEMO_TOOLS`), so a simulator or a server
    whose descriptions name MCP in passing is none. ``servers``: server -> its tools' descriptions."""
    return frozenset(s for s, texts in servers.items()
                     if texts and 2 * sum(bool(_DEMO.search(d)) for d in texts) >= len(texts)
                     and (names is None or any(tuple(split_identifier(n)) in DEMO_TOOLS for n in names.get(s, ()))))


#: Names of days and months: said capitalised, they name no product ("on Monday").
_CALENDAR = frozenset("monday tuesday wednesday thursday friday saturday sunday january february march april may "
                      "june july august september october november december".split())


@lru_cache(maxsize=16384)
def _server_pattern(server: str) -> tuple[str, re.Pattern[str]] | None:
    """How a text says a server's name (:func:`named_servers`): its first word, lowercase, and the
    pattern of its words in order; None for a name no text says as a product (a day, a month)."""
    words = [w for w in re.split(r"[-_\s.]+", server) if w]
    if not words or words[0].lower() in _CALENDAR:
        return None
    pattern = r"(?<![\w@/.])" + r"[\s\-_.]?".join(re.escape(w) for w in words) + r"(?![\w@])"
    return words[0].lower(), re.compile(pattern, re.I)


class ServerNames:
    """Servers as a text may name them (:func:`named_servers`), by the first word of their name,
    lowercase: a text holds few of those words, so the others' patterns are passed over at one test
    per word (a 100,000-tool catalog holds ~13,000 servers and ~1,200 first words). Built once per
    catalog (:func:`server_names`)."""

    def __init__(self, servers: Iterable[str]) -> None:
        self.by_word: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
        for server in servers:
            said_as = _server_pattern(server)
            if said_as is not None:
                self.by_word.setdefault(said_as[0], []).append((server, said_as[1]))

    def within(self, text: str) -> ServerNames:
        """The servers whose first word ``text`` holds: what :func:`named_servers` finds in
        ``text`` or in any text made of its pieces joined by spaces or ", " (a task's clauses),
        from one pass over the catalog's first words. A first word holds neither whitespace nor
        a comma (a server's name holds none), so no join makes one stand where ``text`` has none."""
        lowered = text.lower()
        out = ServerNames(())
        out.by_word = {first: said for first, said in self.by_word.items() if first in lowered}
        return out


def server_names(view: CatalogSnapshot) -> ServerNames:
    """The catalog's servers as :class:`ServerNames`, kept in the snapshot's memo."""
    found = view.memo.server_names
    if found is None:
        found = view.memo.server_names = ServerNames(view.index.server_names)
    return found


def named_servers(text: str, servers: Collection[str] | ServerNames) -> frozenset[str]:
    """The servers ``text`` names as products: a server's name (its words in order, ``google-calendar``
    as "Google Calendar") said as a proper noun, capitalised ("search Notion", "Sentry issue WEB-3F2")
    but not as the verb a sentence or a clause opens with ("Fetch the page"), or spelled as no
    ordinary word is, with a digit or an inner capital ("Context7", "MongoDB"); a day or a month is
    no product. A server whose name is an ordinary word said in lower case ("fetch the page", "the
    time") is not named. ``servers``: names, or the catalog's :class:`ServerNames`."""
    if not isinstance(servers, ServerNames):
        servers = ServerNames(servers)
    found: set[str] = set()
    lowered = text.lower()
    for first, said in servers.by_word.items():
        # The pattern needs the server's first word somewhere in the text: most servers' is not, and
        # they are passed over without running it (a catalog holds thousands of servers).
        if first not in lowered:
            continue
        for server, pattern in said:
            for m in pattern.finditer(text):
                said_as = m.group(0)
                start = not text[:m.start()].strip() or re.search(r"[.;:!?,(]\s*$", text[:m.start()]) is not None
                if re.search(r"\d|[a-z][A-Z]", said_as) or (said_as[0].isupper()
                                                            and not (start and said_as.lower() in VERBS)):
                    found.add(server)
                    break
    return frozenset(found)
