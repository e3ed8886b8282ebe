"""A workspace MCP server: list, read, search, write and edit files under one directory.

Every path argument is relative to the workspace root and is resolved before
use; a path that leaves the root (``..``, an absolute path elsewhere, a
symlink pointing out) is refused with a tool error, so a model given these
tools can touch nothing outside the directory it was given.

Run it over stdio (what ``config.json`` does) or Streamable HTTP::

    python examples/servers/workspace.py --root DIR
    python examples/servers/workspace.py --root DIR --http 127.0.0.1:8765
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from serving import run_cli  # examples/servers/serving.py, next to this script

#: Files larger than this are not read or searched (bytes).
MAX_FILE_BYTES = 2_000_000
#: Directories never listed or searched: tool caches and VCS internals.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".pytest_cache"})

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


class Workspace:
    """File operations confined to ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        if not self.root.is_dir():
            raise ValueError(f"workspace root {root} is not a directory")

    def resolve(self, path: str) -> Path:
        """The absolute path for ``path`` (relative to the root); refuses anything outside it."""
        if "\x00" in path:
            raise ToolError("path contains a NUL byte")
        target = (self.root / path).resolve()
        if target != self.root and not target.is_relative_to(self.root):
            raise ToolError(f"path {path!r} is outside the workspace")
        return target

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def walk(self, start: Path) -> list[Path]:
        """Every file under ``start`` (sorted), skipping VCS and cache directories."""
        if start.is_file():
            return [start]
        out: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            out.extend(Path(dirpath) / f for f in sorted(filenames))
        return out

    def read_text(self, target: Path, path: str) -> str:
        if not target.is_file():
            raise ToolError(f"{path!r} is not a file")
        if target.stat().st_size > MAX_FILE_BYTES:
            raise ToolError(f"{path!r} is larger than {MAX_FILE_BYTES} bytes")
        try:
            return target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text") from None


def create_server(root: Path) -> MCPServer:
    """The workspace server for the directory ``root``."""
    ws = Workspace(root)
    server = MCPServer(
        "workspace",
        instructions=f"File tools for one workspace directory. Paths are relative to its root ({ws.root.name}).",
        log_level="WARNING",
        subscriptions=False,
    )

    @server.tool(annotations=READ_ONLY)
    def list_files(
        path: Annotated[str, Field(description="Directory to list, relative to the workspace root")] = ".",
        recursive: Annotated[bool, Field(description="List files in subdirectories too")] = False,
        pattern: Annotated[str | None, Field(description="Only names matching this glob, e.g. '*.py'")] = None,
    ) -> list[dict[str, Any]]:
        """List the files and directories in a workspace directory, with sizes."""
        target = ws.resolve(path)
        if not target.is_dir():
            raise ToolError(f"{path!r} is not a directory")
        if recursive:
            entries = ws.walk(target)
        else:
            entries = sorted(p for p in target.iterdir() if p.name not in SKIP_DIRS)
        out = []
        for p in entries:
            if pattern and not fnmatch.fnmatch(p.name, pattern):
                continue
            is_dir = p.is_dir()
            out.append({"path": ws.rel(p), "type": "directory" if is_dir else "file",
                        "size": None if is_dir else p.stat().st_size})
        return out

    @server.tool(annotations=READ_ONLY)
    def read_file(
        path: Annotated[str, Field(description="File to read, relative to the workspace root")],
        offset: Annotated[int, Field(ge=1, description="First line to return (1-based)")] = 1,
        limit: Annotated[int | None, Field(ge=1, description="Maximum number of lines to return")] = None,
    ) -> str:
        """Read a UTF-8 text file from the workspace, optionally a range of its lines."""
        target = ws.resolve(path)
        lines = ws.read_text(target, path).splitlines(keepends=True)
        end = len(lines) if limit is None else offset - 1 + limit
        return "".join(lines[offset - 1 : end])

    @server.tool(annotations=READ_ONLY)
    def search_text(
        query: Annotated[str, Field(min_length=1, description="Text (or regular expression) to look for")],
        path: Annotated[str, Field(description="Directory or file to search, relative to the root")] = ".",
        glob: Annotated[str | None, Field(description="Only search files whose name matches this glob")] = None,
        regex: Annotated[bool, Field(description="Treat the query as a regular expression")] = False,
        ignore_case: Annotated[bool, Field(description="Match case-insensitively")] = False,
        max_results: Annotated[int, Field(ge=1, le=1000, description="Stop after this many matching lines")] = 100,
    ) -> list[dict[str, Any]]:
        """Search the text of workspace files and return matching lines with file and line number."""
        flags = re.IGNORECASE if ignore_case else 0
        try:
            rx = re.compile(query if regex else re.escape(query), flags)
        except re.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from None
        hits: list[dict[str, Any]] = []
        for file in ws.walk(ws.resolve(path)):
            if glob and not fnmatch.fnmatch(file.name, glob):
                continue
            if file.stat().st_size > MAX_FILE_BYTES:
                continue
            try:
                text = file.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable files are not text to search
            for n, line in enumerate(text.splitlines(), start=1):
                if rx.search(line):
                    hits.append({"path": ws.rel(file), "line": n, "text": line.strip()[:300]})
                    if len(hits) >= max_results:
                        return hits
        return hits

    @server.tool(annotations=READ_ONLY)
    def find_files(
        pattern: Annotated[str, Field(min_length=1, description="Glob over relative paths, e.g. 'src/**/*.py'")],
    ) -> list[str]:
        """Find workspace files whose relative path matches a glob pattern."""
        return [ws.rel(p) for p in ws.walk(ws.root) if fnmatch.fnmatch(ws.rel(p), pattern)
                or fnmatch.fnmatch(p.name, pattern)]

    @server.tool(annotations=READ_ONLY)
    def file_info(
        path: Annotated[str, Field(description="File or directory, relative to the workspace root")],
    ) -> dict[str, Any]:
        """Size, type, line count and modification time of a workspace path."""
        target = ws.resolve(path)
        if not target.exists():
            raise ToolError(f"{path!r} does not exist")
        st = target.stat()
        info: dict[str, Any] = {"path": ws.rel(target), "type": "directory" if target.is_dir() else "file",
                                "size": st.st_size, "modified": st.st_mtime}
        if target.is_file() and st.st_size <= MAX_FILE_BYTES:
            try:
                info["lines"] = target.read_text(encoding="utf-8").count("\n")
            except UnicodeDecodeError:
                info["binary"] = True
        return info

    @server.tool(annotations=WRITES)
    def write_file(
        path: Annotated[str, Field(description="File to write, relative to the workspace root")],
        content: Annotated[str, Field(description="The complete new content of the file")],
        create_dirs: Annotated[bool, Field(description="Create missing parent directories")] = True,
    ) -> str:
        """Create or overwrite a text file in the workspace with the given content."""
        target = ws.resolve(path)
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory")
        if not target.parent.exists():
            if not create_dirs:
                raise ToolError(f"directory {ws.rel(target.parent)!r} does not exist")
            target.parent.mkdir(parents=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, target)  # never leave a half-written file behind
        return f"wrote {len(content.encode('utf-8'))} bytes to {ws.rel(target)}"

    @server.tool(annotations=WRITES)
    def edit_file(
        path: Annotated[str, Field(description="File to edit, relative to the workspace root")],
        old_text: Annotated[str, Field(min_length=1, description="Exact text to replace; must occur in the file")],
        new_text: Annotated[str, Field(description="Replacement text")],
        replace_all: Annotated[bool, Field(description="Replace every occurrence, not just a unique one")] = False,
    ) -> str:
        """Replace an exact piece of text in a workspace file (unique unless replace_all is set)."""
        target = ws.resolve(path)
        text = ws.read_text(target, path)
        count = text.count(old_text)
        if count == 0:
            raise ToolError(f"old_text does not occur in {path!r}")
        if count > 1 and not replace_all:
            raise ToolError(f"old_text occurs {count} times in {path!r}; give more context or set replace_all")
        target.write_text(text.replace(old_text, new_text), encoding="utf-8")
        return f"replaced {count if replace_all else 1} occurrence(s) in {ws.rel(target)}"

    @server.tool(annotations=WRITES)
    def make_directory(
        path: Annotated[str, Field(description="Directory to create, relative to the workspace root")],
    ) -> str:
        """Create a directory (and its parents) in the workspace."""
        target = ws.resolve(path)
        if target.exists() and not target.is_dir():
            raise ToolError(f"{path!r} exists and is not a directory")
        target.mkdir(parents=True, exist_ok=True)
        return f"created {ws.rel(target)}"

    @server.tool(annotations=DESTRUCTIVE)
    def move_path(
        source: Annotated[str, Field(description="File or directory to move, relative to the root")],
        destination: Annotated[str, Field(description="New path, relative to the root; must not exist")],
    ) -> str:
        """Move or rename a file or directory inside the workspace."""
        src, dst = ws.resolve(source), ws.resolve(destination)
        if not src.exists():
            raise ToolError(f"{source!r} does not exist")
        if src == ws.root:
            raise ToolError("cannot move the workspace root")
        if dst.exists():
            raise ToolError(f"{destination!r} already exists")
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(src, dst)
        return f"moved {ws.rel(src)} to {ws.rel(dst)}"

    @server.tool(annotations=DESTRUCTIVE)
    def delete_path(
        path: Annotated[str, Field(description="File or empty directory to delete, relative to the root")],
    ) -> str:
        """Delete a file or an empty directory from the workspace."""
        target = ws.resolve(path)
        if target == ws.root:
            raise ToolError("cannot delete the workspace root")
        if target.is_dir():
            if any(target.iterdir()):
                raise ToolError(f"directory {path!r} is not empty")
            target.rmdir()
        elif target.exists():
            target.unlink()
        else:
            raise ToolError(f"{path!r} does not exist")
        return f"deleted {ws.rel(target)}"

    return server


def main(argv: list[str] | None = None) -> None:
    run_cli(__doc__, "--root", ".", "workspace directory (default: the current directory)", create_server, argv)


if __name__ == "__main__":
    main()
