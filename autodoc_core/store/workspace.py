"""Workspaces: a name, a root folder, and a validated configuration."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw

from autodoc_core.errors import UNKNOWN_WORKSPACE, AutodocError, invalid_params, number, whole_number
from autodoc_core.parse.chunk import DEFAULT_SECTION_TOKENS
from autodoc_core.providers.embedders import DEFAULT_EMBEDDER, validate_embedder
from autodoc_core.providers.rankers import validate_ranker
from autodoc_core.store import changes, chunks, documents, embeddings, facets, links, symbols

Check = Callable[[str, Any], Any]  # (setting name, value) -> the value to store, or invalid-params
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _int_range(low: int, high: int) -> Check:
    def check(key: str, value: Any) -> int:
        if not whole_number(value, low, high):
            raise invalid_params(f"'{key}' must be an integer from {low} to {high}, got {value!r}", key=key)
        return value

    return check


def _boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise invalid_params(f"'{key}' must be true or false, got {value!r}", key=key)
    return value


def _choice(*choices: str) -> Check:
    def check(key: str, value: Any) -> str:
        if value not in choices:
            raise invalid_params(f"'{key}' must be one of {', '.join(choices)}, got {value!r}", key=key)
        return value

    return check


def _number(low: float, high: float, what: str = "a number") -> Check:
    def check(key: str, value: Any) -> float:
        if not number(value, low, high):
            raise invalid_params(f"'{key}' must be {what} from {low:g} to {high:g}, got {value!r}", key=key)
        return float(value)

    return check


def _number_or_auto(low: float, high: float) -> Check:
    number = _number(low, high, 'a number (or "auto")')

    def check(key: str, value: Any) -> float | str:
        return "auto" if value == "auto" else number(key, value)

    return check


def _embedder(key: str, value: Any) -> dict[str, Any]:
    return validate_embedder(value)


def _ranker(key: str, value: Any) -> dict[str, Any]:
    return validate_ranker(value)


CONFIG_DEFAULTS: dict[str, Any] = {
    "section_tokens": DEFAULT_SECTION_TOKENS,
    "abstract_chunk": True,
    "demote_superseded": True,
    "max_file_bytes": 10_000_000,
    # The blend (fuse.linear) against RRF k=60 and the other fusions tried, on the same captured
    # candidates of every labelled set: doc/benchmarks/fusion.md.
    "fusion": "linear",
    # "auto": from the workspace's document shape (fuse.auto_weight); a number fixes it.
    "fusion_weight": "auto",
    "embedder": DEFAULT_EMBEDDER,
    "ranker": {"provider": "none"},
    # Seconds a search waits for a remote provider per stage before answering without that stage.
    "semantic_deadline": 2.0,
    "rerank_deadline": 5.0,
}
CONFIG_CHECKS = {
    "section_tokens": _int_range(32, 8192),
    "abstract_chunk": _boolean,
    "demote_superseded": _boolean,
    "max_file_bytes": _int_range(1024, 1_000_000_000),
    "fusion": _choice("rrf", "linear"),
    "fusion_weight": _number_or_auto(0.0, 1.0),
    "embedder": _embedder,
    "ranker": _ranker,
    "semantic_deadline": _number(0.05, 60.0, "a number of seconds"),
    "rerank_deadline": _number(0.05, 120.0, "a number of seconds"),
}


def median_sections_per_document(conn: apsw.Connection, ws_id: int) -> int:
    """How many chunks (its sections, long ones split) the workspace's middle document has; 0 when nothing is
    indexed."""
    counts = sorted(chunks.sections_per_document(conn, ws_id))
    return counts[len(counts) // 2] if counts else 0


@dataclass
class Workspace:
    id: int
    name: str
    root: str
    config: dict[str, Any]
    next_generation: int
    indexed_at: float | None
    active_model_fp: str | None = None
    vector_epoch: int = 0

    def option(self, key: str) -> Any:
        return self.config.get(key, CONFIG_DEFAULTS[key])

    def settings(self) -> dict[str, Any]:
        return {**CONFIG_DEFAULTS, **self.config}


def validate_config(changes: Any) -> dict[str, Any]:
    if not isinstance(changes, dict):
        raise invalid_params("configuration must be an object of settings")
    unknown = sorted(set(changes) - set(CONFIG_CHECKS))
    if unknown:
        known = ", ".join(sorted(CONFIG_CHECKS))
        raise invalid_params(f"unknown setting {', '.join(unknown)}; known settings: {known}", keys=unknown)
    return {key: CONFIG_CHECKS[key](key, value) for key, value in changes.items()}


def validate_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise invalid_params(
            "workspace name must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit; "
            f"got {name!r}"
        )
    return name


def validate_root(root: Any) -> str:
    if not isinstance(root, str) or not root:
        raise invalid_params("root must be a folder path")
    path = os.path.realpath(os.path.expanduser(root))
    if not os.path.isdir(path):
        raise invalid_params(f"root {root!r} is not a folder", root=root)
    return path


_COLUMNS = "id, name, root, config, next_generation, indexed_at, active_model_fp, vector_epoch"


def _row(row: tuple) -> Workspace:
    return Workspace(row[0], row[1], row[2], json.loads(row[3]), *row[4:])


def get(conn: apsw.Connection, name: Any) -> Workspace:
    if not isinstance(name, str):
        raise invalid_params(f"workspace name must be a string, got {json.dumps(name, default=repr)}")
    if name == "*":  # a scope, which only a search takes
        raise invalid_params("'*' (every workspace) is a search's scope (search.query, search.stream, "
                             "search.related; MCP search and related without a workspace); this call takes one "
                             "workspace: name it (a hit's 'workspace')", name=name)
    row = conn.execute(f"SELECT {_COLUMNS} FROM workspaces WHERE name = ?", (name,)).fetchone()
    if row is None:
        names = [known for (known,) in conn.execute("SELECT name FROM workspaces ORDER BY name")]
        guess = did_you_mean(name, names)
        listed = f" ({guess}this database has {', '.join(names)})" if names else ""
        # a misspelt name is not a new one to add
        raise AutodocError(UNKNOWN_WORKSPACE, f"no workspace named {name!r}{listed}"
                           + ("" if guess else "; add it with workspace.add"), name=name)
    return _row(row)


def did_you_mean(name: str, known: list[str]) -> str:
    """The known workspace name a misspelt one most likely meant, as "did you mean 'notes'? " ("" when none is
    close): one edit away for a short name, one in four characters for a longer one, two letters swapped counting
    as one (`osp`: ops), case aside; the picker guesses alike (lua/autodoc/session/scope.lua). A typo's error said
    only "add it with workspace.add", as if the name were a new one."""
    fewest, best = max(1, len(name) // 4) + 1, None
    for known_name in known:
        count = _edits(name.lower(), known_name.lower())
        if count < fewest:
            fewest, best = count, known_name
    return f"did you mean {best!r}? " if best is not None else ""


def _edits(a: str, b: str) -> int:
    """The characters added, dropped or changed, or two side by side swapped, that turn ``a`` into ``b``."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[len(a)][len(b)]


def all_workspaces(conn: apsw.Connection) -> list[Workspace]:
    return [_row(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM workspaces ORDER BY name")]


facet_fields = facets.fields


# -- the workspaces table ------------------------------------------------------------------


def root_of(conn: apsw.Connection, name: str) -> str | None:
    row = conn.execute("SELECT root FROM workspaces WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def create(conn: apsw.Connection, name: str, root: str, vector_epoch: int) -> int:
    """A new workspace with its (empty) word index; its id."""
    ws_id = conn.execute("INSERT INTO workspaces(name, root, vector_epoch) VALUES (?, ?, ?) RETURNING id",
                         (name, root, vector_epoch)).fetchone()[0]
    chunks.create_fts_table(conn, ws_id)
    return ws_id


def exists(conn: apsw.Connection, ws_id: int) -> bool:
    return conn.execute("SELECT 1 FROM workspaces WHERE id = ?", (ws_id,)).fetchone() is not None


def stored_config(conn: apsw.Connection, ws_id: int) -> dict[str, Any] | None:
    """The workspace's settings as stored (only those set), or None when it is gone."""
    row = conn.execute("SELECT config FROM workspaces WHERE id = ?", (ws_id,)).fetchone()
    return json.loads(row[0]) if row is not None else None


def set_config(conn: apsw.Connection, ws_id: int, config: dict[str, Any]) -> None:
    conn.execute("UPDATE workspaces SET config = ? WHERE id = ?", (json.dumps(config, sort_keys=True), ws_id))


def next_generation(conn: apsw.Connection, ws_id: int) -> int:
    """Take the workspace's next generation number."""
    return conn.execute(
        "UPDATE workspaces SET next_generation = next_generation + 1 WHERE id = ? RETURNING next_generation - 1",
        (ws_id,),
    ).fetchone()[0]


def bump_epoch(conn: apsw.Connection, ws_id: int) -> None:
    """Chunks or vectors changed: every process's vector index reads them again."""
    conn.execute("UPDATE workspaces SET vector_epoch = vector_epoch + 1 WHERE id = ?", (ws_id,))


def links_dirty(conn: apsw.Connection, ws_id: int) -> bool:
    return bool(conn.execute("SELECT links_dirty FROM workspaces WHERE id = ?", (ws_id,)).fetchone()[0])


def set_links_dirty(conn: apsw.Connection, ws_id: int, dirty: bool) -> None:
    conn.execute("UPDATE workspaces SET links_dirty = ? WHERE id = ?", (int(dirty), ws_id))


def set_indexed_at(conn: apsw.Connection, ws_id: int, at: float) -> None:
    conn.execute("UPDATE workspaces SET indexed_at = ? WHERE id = ?", (at, ws_id))


def active_model(conn: apsw.Connection, ws_id: int) -> str | None:
    return conn.execute("SELECT active_model_fp FROM workspaces WHERE id = ?", (ws_id,)).fetchone()[0]


def set_active_model(conn: apsw.Connection, ws_id: int, model_fp: str) -> None:
    conn.execute("UPDATE workspaces SET active_model_fp = ? WHERE id = ?", (model_fp, ws_id))


# Each family of tables deletes its own rows of a removed workspace (and the chunks its word index).
_FAMILIES = (chunks, symbols, embeddings, facets, links, changes, documents)
# What a moved workspace forgets: what was read from the old folder. Its settings, its change log (followers
# are told each document went) and its vectors (keyed by chunk text: unchanged sections keep theirs) stay.
_DOCUMENT_FAMILIES = (chunks, symbols, facets, links, documents)


def remove(conn: apsw.Connection, ws_id: int) -> None:
    for family in _FAMILIES:
        family.remove_workspace(conn, ws_id)
    conn.execute("DELETE FROM workspaces WHERE id = ?", (ws_id,))


def move(conn: apsw.Connection, ws_id: int, root: str) -> int:
    """Point the workspace at another folder and forget every document read from the old one, in the caller's
    one transaction: a search sees the old folder's documents or none of them, never a mix. The next index run
    reads the new folder. The number of documents forgotten."""
    generation = next_generation(conn, ws_id)
    paths = [path for (path,) in conn.execute("SELECT path FROM documents WHERE ws_id = ?", (ws_id,))]
    for path in paths:
        changes.log(conn, ws_id, "deleted", path, generation, {"workspace_moved_to": root})
    for family in _DOCUMENT_FAMILIES:
        family.remove_workspace(conn, ws_id)
    chunks.create_fts_table(conn, ws_id)
    conn.execute("UPDATE workspaces SET root = ?, indexed_at = NULL, links_dirty = 0 WHERE id = ?", (root, ws_id))
    bump_epoch(conn, ws_id)
    return len(paths)
