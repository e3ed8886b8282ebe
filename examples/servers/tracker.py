"""A project tracker MCP server: issues with labels and comments, and notes, in one JSON file.

The whole state lives in one JSON file (``--data``), rewritten atomically
(write to a temporary file, then rename) after every change, so a crash never
leaves half a file and two runs see each other's work.

Run it over stdio (what ``config.json`` does) or Streamable HTTP::

    python examples/servers/tracker.py --data tracker.json
    python examples/servers/tracker.py --data tracker.json --http 127.0.0.1:8766
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from serving import run_cli  # examples/servers/serving.py, next to this script

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

Priority = Literal["low", "normal", "high", "urgent"]


class TrackerData:
    """The JSON file: ``{"issues": [...], "notes": [...], "next_issue": n, "next_note": n}``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: Tools may run in worker threads; every read-modify-write holds this.
        self.lock = threading.Lock()
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} is not valid JSON: {exc}") from None
            if not isinstance(data, dict):
                raise ValueError(f"{path} must hold a JSON object")
        else:
            data = {}
        self.data: dict[str, Any] = {"issues": [], "notes": [], "next_issue": 1, "next_note": 1, **data}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.path)

    def issue(self, number: int) -> dict[str, Any]:
        for issue in self.data["issues"]:
            if issue["number"] == number:
                return issue
        raise ToolError(f"there is no issue #{number}")

    def note(self, note_id: int) -> dict[str, Any]:
        for note in self.data["notes"]:
            if note["id"] == note_id:
                return note
        raise ToolError(f"there is no note {note_id}")


def _matches(query: str, *texts: str) -> bool:
    words = query.lower().split()
    blob = " ".join(texts).lower()
    return all(w in blob for w in words)


def create_server(data_path: Path) -> MCPServer:
    """The tracker server storing its state in ``data_path``."""
    db = TrackerData(data_path)
    server = MCPServer("tracker", instructions="Issues and notes of one project.", log_level="WARNING",
                       subscriptions=False)

    @server.tool(annotations=WRITES)
    def create_issue(
        title: Annotated[str, Field(min_length=1, max_length=200, description="One-line summary of the issue")],
        body: Annotated[str, Field(description="Full description: steps to reproduce, expected behaviour")] = "",
        labels: Annotated[list[str] | None, Field(description="Labels such as 'bug' or 'enhancement'")] = None,
        assignee: Annotated[str | None, Field(description="Who works on it")] = None,
        priority: Annotated[Priority, Field(description="How urgent the issue is")] = "normal",
    ) -> dict[str, Any]:
        """Open a new issue in the project tracker."""
        with db.lock:
            issue = {"number": db.data["next_issue"], "title": title, "body": body, "labels": sorted(set(labels or ())),
                     "assignee": assignee, "priority": priority, "state": "open", "comments": [],
                     "created_at": time.time(), "updated_at": time.time()}
            db.data["issues"].append(issue)
            db.data["next_issue"] += 1
            db.save()
            return issue

    @server.tool(annotations=READ_ONLY)
    def list_issues(
        state: Annotated[Literal["open", "closed", "all"], Field(description="Which issues to list")] = "open",
        label: Annotated[str | None, Field(description="Only issues with this label")] = None,
        assignee: Annotated[str | None, Field(description="Only issues assigned to this person")] = None,
    ) -> list[dict[str, Any]]:
        """List tracker issues by state, label or assignee (number, title, labels, priority)."""
        out = []
        for i in db.data["issues"]:
            if state != "all" and i["state"] != state:
                continue
            if label and label not in i["labels"]:
                continue
            if assignee and i["assignee"] != assignee:
                continue
            out.append({k: i[k] for k in ("number", "title", "state", "labels", "assignee", "priority")})
        return out

    @server.tool(annotations=READ_ONLY)
    def get_issue(number: Annotated[int, Field(ge=1, description="Issue number")]) -> dict[str, Any]:
        """Get one issue with its full body and comments."""
        return db.issue(number)

    @server.tool(annotations=WRITES)
    def update_issue(
        number: Annotated[int, Field(ge=1, description="Issue number")],
        title: Annotated[str | None, Field(description="New title")] = None,
        body: Annotated[str | None, Field(description="New body")] = None,
        labels: Annotated[list[str] | None, Field(description="Replace the labels with these")] = None,
        assignee: Annotated[str | None, Field(description="New assignee")] = None,
        priority: Annotated[Priority | None, Field(description="New priority")] = None,
    ) -> dict[str, Any]:
        """Change the title, body, labels, assignee or priority of an issue."""
        with db.lock:
            issue = db.issue(number)
            for key, value in (("title", title), ("body", body), ("assignee", assignee), ("priority", priority)):
                if value is not None:
                    issue[key] = value
            if labels is not None:
                issue["labels"] = sorted(set(labels))
            issue["updated_at"] = time.time()
            db.save()
            return issue

    @server.tool(annotations=WRITES)
    def set_issue_state(
        number: Annotated[int, Field(ge=1, description="Issue number")],
        state: Annotated[Literal["open", "closed"], Field(description="'closed' to close, 'open' to reopen")],
        reason: Annotated[str | None, Field(description="Why, e.g. 'fixed in 1f3c2a' or 'duplicate of #4'")] = None,
    ) -> dict[str, Any]:
        """Close or reopen an issue, optionally recording why as a comment."""
        with db.lock:
            issue = db.issue(number)
            issue["state"] = state
            if reason:
                issue["comments"].append({"author": "tracker", "text": f"{state}: {reason}", "at": time.time()})
            issue["updated_at"] = time.time()
            db.save()
            return issue

    @server.tool(annotations=WRITES)
    def comment_on_issue(
        number: Annotated[int, Field(ge=1, description="Issue number")],
        text: Annotated[str, Field(min_length=1, description="The comment")],
        author: Annotated[str, Field(description="Who writes the comment")] = "agent",
    ) -> dict[str, Any]:
        """Add a comment to an issue's discussion."""
        with db.lock:
            issue = db.issue(number)
            comment = {"author": author, "text": text, "at": time.time()}
            issue["comments"].append(comment)
            issue["updated_at"] = time.time()
            db.save()
            return comment

    @server.tool(annotations=READ_ONLY)
    def search_issues(
        query: Annotated[str, Field(min_length=1, description="Words that must all appear in title, body or comments")],
    ) -> list[dict[str, Any]]:
        """Full-text search over issue titles, bodies and comments."""
        return [
            {"number": i["number"], "title": i["title"], "state": i["state"]}
            for i in db.data["issues"]
            if _matches(query, i["title"], i["body"], *(c["text"] for c in i["comments"]))
        ]

    @server.tool(annotations=WRITES)
    def add_note(
        title: Annotated[str, Field(min_length=1, max_length=200, description="Title of the note")],
        text: Annotated[str, Field(description="The note, in Markdown")],
        tags: Annotated[list[str] | None, Field(description="Tags to find the note by")] = None,
    ) -> dict[str, Any]:
        """Write a project note (meeting notes, decisions, design sketches)."""
        with db.lock:
            note = {"id": db.data["next_note"], "title": title, "text": text, "tags": sorted(set(tags or ())),
                    "created_at": time.time()}
            db.data["notes"].append(note)
            db.data["next_note"] += 1
            db.save()
            return note

    @server.tool(annotations=READ_ONLY)
    def list_notes(
        tag: Annotated[str | None, Field(description="Only notes with this tag")] = None,
    ) -> list[dict[str, Any]]:
        """List project notes (id, title, tags), optionally by tag."""
        return [{"id": n["id"], "title": n["title"], "tags": n["tags"]}
                for n in db.data["notes"] if tag is None or tag in n["tags"]]

    @server.tool(annotations=READ_ONLY)
    def read_note(note_id: Annotated[int, Field(ge=1, description="Note id")]) -> dict[str, Any]:
        """Read one project note in full."""
        return db.note(note_id)

    @server.tool(annotations=READ_ONLY)
    def search_notes(
        query: Annotated[str, Field(min_length=1, description="Words that must all appear in the title or text")],
    ) -> list[dict[str, Any]]:
        """Full-text search over project notes."""
        return [{"id": n["id"], "title": n["title"]} for n in db.data["notes"]
                if _matches(query, n["title"], n["text"], *n["tags"])]

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
    def delete_note(note_id: Annotated[int, Field(ge=1, description="Note id")]) -> str:
        """Delete a project note."""
        with db.lock:
            note = db.note(note_id)
            db.data["notes"].remove(note)
            db.save()
            return f"deleted note {note_id}"

    return server


def main(argv: list[str] | None = None) -> None:
    run_cli(__doc__, "--data", "tracker.json", "JSON file holding issues and notes", create_server, argv)


if __name__ == "__main__":
    main()
