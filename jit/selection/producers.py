"""The tools of a server that hand out the identifiers another of its tools requires.

A tool that needs a ``libraryId`` or a ``channel_id`` is called after the sibling that resolves
or lists it (``resolve-library-id``, ``list_channels``): :func:`producers` finds that sibling
by the parameter's name and description and the siblings' names and Condensed lines, which the
catalog snapshot holds, so no definition but the tool's own is read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..models import StoredTool
from ..text import split_identifier
from .step_words import VERBS

__all__ = ["coordinate_producers", "producers"]

#: A required parameter that names an identifier another tool hands out: its stem (``libraryId``,
#: ``channel_id``, ``idList``).
_ID_PARAM = re.compile(r"^(?:(?P<stem>[a-z]+?)_?(?:id|ids|slug|key|gid)|id_?(?P<pre>[a-z]{3,}))$", re.I)
#: A tool name's verbs that hand out identifiers.
_LOOKUP = re.compile(r"(?P<verb>(?i:list|search|resolve|find|lookup|get))(?=$|[_\-.]|[A-Z])")


def producers(tool: StoredTool, siblings: Sequence[tuple[int, str, str]], ids_only: bool = False,
              optional_ids: bool = False) -> list[int]:
    """The tools of ``tool``'s server that hand out an identifier it requires: for a required
    parameter ``<stem>Id`` / ``<stem>_id`` (``libraryId``, ``channel_id``, ``team_id``), or named
    plainly with a description that says it is an ID (``customer``: "The ID of the customer"), the
    sibling whose name lists, searches, resolves or finds and holds the stem (a name that
    holds it before one whose Condensed line does, one that is not kept to the caller's own,
    ``get_my_cards``, before one that is, then the one of fewest words).
    ``siblings``: ``(id, name, Condensed line)`` of the server's other tools: what the snapshot
    holds of every tool, so no definition but the tool's own is read (a producer's own producers
    are asked by :func:`settle` once it is chosen). ``ids_only``: only for the parameters named
    as identifiers (``libraryId``, not ``repo``, which a task usually says). ``optional_ids``: also
    for the optional parameters named as identifiers (the ``boardId`` of a ``get_lists`` that
    falls back on an active board: the task's board is found by its name first)."""
    schema = tool.tool.input_schema or {}
    required = [p for p in schema.get("required") or () if isinstance(p, str)]
    if optional_ids:
        required += [p for p in schema.get("properties") or () if isinstance(p, str) and p not in required]
    # The siblings that hand out identifiers at all, each with its lookup verb and its name's words
    # (asked once, whatever the parameters).
    lookups = [(i, name, line, verb, split_identifier(name)) for i, name, line in siblings
               if i != tool.id and (verb := _lookup_verb(name, tool.tool.server, tool.tool.name))]
    found: list[int] = []
    for param in required:
        m = _ID_PARAM.match(param) or _said_id(param, schema)
        if (ids_only or (optional_ids and param not in schema.get("required", ()))) and not m:
            continue
        named = None if m else _named_thing(param, schema, tool.tool.name)
        stem = ((m.groupdict().get("stem") or m.groupdict().get("pre") or param) if m else named or param).lower()
        if len(stem) < (3 if m else 4):
            continue
        best: tuple[int, bool, int, str, int] | None = None
        for i, name, line, verb, words in lookups:
            in_name = stem in name[verb.end("verb"):].lower()  # "list_boards" lists boards, not lists
            many = re.search(r"\b" + re.escape(stem) + r"(?:e?s|_?ids)\b", " ".join(words))
            if named and not in_name and re.search(r"\b" + re.escape(stem) + r"e?s\b", line.lower()[:200]):
                many = in_name = True  # "Get or list … resources": hands out the resource a name names
            if verb.group("verb").lower() == "get" and not many:
                continue  # "get" hands out identifiers when it gets many: get_lists, getTeams
            if not in_name and (not m or stem not in line.lower()[:200]):
                continue  # a parameter that is no identifier is handed out by a tool named for it
            # the most general first: not one kept to the caller's own ("get_my_cards", "list_my_issues")
            key = (0 if in_name else 1, bool(_OWN & {w.lower() for w in words}), len(words), name, i)
            if best is None or key < best:
                best = key
        if best is not None and best[-1] not in found:
            found.append(best[-1])
    # A required value whose description says which of the server's things it comes from ("Exact target element
    # reference from the page snapshot", "The uid of an element … from the page content snapshot"): the sibling
    # named for that thing hands it out (``browser_snapshot``, ``take_snapshot``), whatever its verb, unless that
    # verb changes something.
    for param in schema.get("required") or ():
        m = _FROM_THING.search(_description(param, schema)) if isinstance(param, str) else None
        if m is None:
            continue
        thing = m.group("thing").lower()
        named = ((i, name, [w.lower() for w in split_identifier(name)]) for i, name, _line in siblings if i != tool.id)
        best_from = min(((len(words), name, i) for i, name, words in named
                         if thing in words and VERBS.get(words[0], "/read") == "/read"), default=None)
        if best_from is not None and best_from[-1] not in found:
            found.append(best_from[-1])
    return found


def coordinate_producers(tool: StoredTool, siblings: Sequence[tuple[int, str, str]]) -> list[int]:
    """The sibling that turns an address or a place's name into coordinates (``maps_geocode``:
    "Convert an address into geographic coordinates"), when ``tool`` requires a point on the earth:
    a parameter named for a latitude (``lat``, ``latitude``, ``from_latitude``, ``originLat``), or
    one whose value, or each of whose items, holds one (``maps_elevation``'s ``locations``; through
    ``anyOf``/``oneOf``), and is no reverse geocoder itself. A task names its places by name far more
    often than by their numbers; the caller leaves it out when the task gives numbers.
    ``siblings``: as for :func:`producers`. The producer: a name with a word of geocoding
    (``geocode``, ``geocoding``, ``forward_geocode``) or a Condensed line that says it hands out
    coordinates, not a reverse geocoder, and no name whose verb changes something; of several, the
    one of fewest words."""
    schema = tool.tool.input_schema or {}
    props = schema.get("properties")
    if "reverse" in tool.tool.name.lower() or not isinstance(props, dict) or not any(
            isinstance(p, str) and _is_point(p, props.get(p)) for p in schema.get("required") or ()):
        return []
    best = None
    for i, name, line in siblings:
        words = [w.lower() for w in split_identifier(name)]
        if i == tool.id or "reverse" in words:
            continue
        if not (any(w.startswith("geocod") for w in words) or _GIVES_POINT.search(line[:200])):
            continue
        if any(VERBS.get(w, "/read") != "/read" for w in words[:2] if w != "forward"):
            continue  # a tool that makes or changes something (create_geocoding_job) and says coordinates on the way
        key = (len(words), name, i)
        best = key if best is None or key < best else best
    return [best[-1]] if best is not None else []


#: A parameter's name that is a latitude (the longitude goes with it): ``lat``, ``latitude``, ``from_latitude``,
#: ``origin_lat``, ``originLat``.
_LATITUDE = re.compile(r"^(?:[a-z]+_)?(?:lat|latitude)$|^(?-i:[a-z]+(?:Lat|Latitude))$", re.I)
#: A tool's Condensed line that says it hands out coordinates: turns something into them ("Convert an address into
#: geographic coordinates"), or gets or returns those of an address, a place or a name ("Search a location by name
#: to get its coordinates"; not "Get the map center and return its coordinates").
_POINT_WORDS = r"(?:coordinates|lat(?:itude)?\s*(?:/|,|and)\s*(?:lng|lon|long|longitude))\b"
_GIVES_POINT = re.compile(r"\b(?:in)?to\s+(?:geographic(?:al)?\s+|gps\s+)?" + _POINT_WORDS + "|"
                          r"\b(?:address|place|city|by\s+name)\b[^.]{0,80}?\b(?:get|gets|returns?|giving|gives)\s+"
                          r"(?:its\s+|their\s+|the\s+)?" + _POINT_WORDS, re.I)


def _is_point(param: str, spec: object, depth: int = 0) -> bool:
    """Whether a required parameter is a point on the earth, or a list of them (see :func:`coordinate_producers`)."""
    if _LATITUDE.match(param):
        return True
    if not isinstance(spec, dict) or depth > 2:
        return False
    inner = spec.get("properties")
    if isinstance(inner, dict) and any(isinstance(k, str) and _LATITUDE.match(k) for k in inner):
        return True
    options = [spec.get("items"), *(spec.get("anyOf") or ()), *(spec.get("oneOf") or ())]
    return any(_is_point("", o, depth + 1) for o in options if isinstance(o, dict))


#: A value's description that says it is taken from a page's snapshot, a browser's ("… from the page snapshot",
#: "… from the page content snapshot"; not a database's or a disk's snapshot, which a snapshot's maker names too).
_FROM_THING = re.compile(r"\bfrom\s+the\s+(?:current\s+)?page(?:\s+content)?\s+(?P<thing>snapshot)\b", re.I)


#: Words of a lookup's name that keep it to the caller's own things: not every one the identifier may name.
_OWN = frozenset({"my", "me", "mine", "own", "self"})


def _lookup_verb(name: str, server: str, sibling: str = "") -> re.Match[str] | None:
    """The verb a tool name opens with that hands out identifiers (:data:`_LOOKUP`), after its
    server's name when it starts with it (``linear_getTeams``), or a prefix it shares with
    ``sibling``, the tool that needs what it hands out (``kubectl_get`` for ``kubectl_logs``), when that
    prefix is no verb (``create_list`` makes lists for ``create_card``); ``add_list_to_board`` adds."""
    found = _LOOKUP.match(name)
    prefix = re.match(r"[a-z0-9]+[_\-.]", name, re.I)
    word = prefix.group(0)[:-1].lower() if prefix else ""
    if found is None and prefix and (word in {*split_identifier(server), server.lower()} or (
            sibling.lower().startswith(prefix.group(0).lower()) and word not in VERBS)):
        found = _LOOKUP.match(name, prefix.end())
    return found


#: A parameter's description that says whose name it is ("Name of the resource", "The name of the
#: pod to describe").
_NAME_OF = re.compile(r"^\W*(?:the\s+)?name\s+of\s+(?:the|an?)\s+(?:existing\s+)?([a-z]{3,})\b", re.I)
#: A tool name's verbs that make what their ``name`` names: the name is theirs to give.
_MAKES_NAMED = re.compile(r"(?:(?:^|(?<=[_\-.]))(?i:create|add|new|make|insert|register|init)"
                          r"|(?<=[a-z])(?:Create|Add|New|Make|Insert|Register|Init))(?=$|[_\-.]|[A-Z])")


#: A parameter's description that says it is an identifier ("The ID of the customer").
_ID_OF = re.compile(r"^\W*(?:the\s+)?(?:unique\s+)?(?:id|identifier)\s+of\s+(?:the|an?)\s+", re.I)


def _said_id(param: str, schema: Mapping[str, object]) -> re.Match[str] | None:
    """A plainly named parameter (``customer``, ``payment_intent``) whose description says it is
    the identifier of an existing thing: an identifier like ``customer_id``, its name the stem."""
    if not re.fullmatch(r"[a-z]+(?:_[a-z]+)?", param, re.I):
        return None
    return _ID_OF.match(_description(param, schema))


def _description(param: str, schema: Mapping[str, object]) -> str:
    props = schema.get("properties")
    spec = props.get(param) if isinstance(props, dict) else None
    said = spec.get("description") if isinstance(spec, dict) else None
    return said if isinstance(said, str) else ""


def _named_thing(param: str, schema: Mapping[str, object], tool_name: str) -> str | None:
    """What a plain ``name`` parameter names, when its description says so ("Name of the
    resource": ``resource``) and the tool does not make that thing (``create_branch``'s name
    is the new branch's): an existing thing, which a sibling that lists such things hands out."""
    if param.lower() != "name" or _MAKES_NAMED.search(tool_name):
        return None
    m = _NAME_OF.match(_description(param, schema))
    return m.group(1).lower() if m else None
