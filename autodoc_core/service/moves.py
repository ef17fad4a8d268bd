"""Moving a workspace to another folder (``workspace.add`` with ``{"move": true}``; the editor's setup() asks it).

A moved root means every document is read again from the new folder: the old folder's documents are forgotten in
the same transaction that changes the root, so no search answers from them afterwards, and none answers from a
mix of the two. The workspace keeps its settings, its change log (each forgotten document is logged as deleted)
and its vectors, which are keyed by chunk text: the next index run re-reads the folder, and sections whose text
did not change find their vectors and are not embedded again.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autodoc_core.errors import invalid_params
from autodoc_core.store import workspace as wsmod
from autodoc_core.store.database import Store

ADD_OPTIONS = ("move",)


def validate_add_options(opts: Any) -> bool:
    """Whether ``workspace.add``'s options ask to move a workspace that exists at another folder."""
    if opts is None:
        return False
    if not isinstance(opts, dict):
        raise invalid_params('workspace.add options must be an object, e.g. {"move": true}')
    unknown = sorted(set(opts) - set(ADD_OPTIONS))
    if unknown:
        raise invalid_params(f"unknown workspace.add option {', '.join(unknown)}; known: {', '.join(ADD_OPTIONS)}",
                             keys=unknown)
    move = opts.get("move", False)
    if not isinstance(move, bool):
        raise invalid_params(f"'move' must be true or false, got {move!r}", key="move")
    return move


def refusal(name: str, stored_root: str, root: str, db_path: Path) -> Exception:
    """The error for a name already at another folder, saying how to move it (the command names this database:
    an editor's setup({ db }) is not the command line's default)."""
    example = json.dumps([name, root, {"move": True}])
    return invalid_params(
        f"workspace {name!r} already exists with root {stored_root}; to move it to {root} (its documents are "
        f"indexed again from there), add it with {{\"move\": true}}: autodoc --db {shlex.quote(str(db_path))} "
        f"--call workspace.add '{example}' "
        "(in Neovim, name the folder in setup()), or remove it first (workspace.remove)",
        name=name, root=stored_root, requested_root=root)


def move_workspace(store: Store, index_lock: Callable[[int], Any], name: str, root: str) -> dict[str, Any] | None:
    """Point ``name`` at ``root`` and forget its documents, waiting for an index run under way (here or in another
    process) to end first: a run that read the old folder must not write its documents after the move. None when
    the workspace is at ``root`` already (another process moved it meanwhile)."""
    with store.snapshot() as conn:
        ws_id = wsmod.get(conn, name).id
    with index_lock(ws_id), store.exclusive(), store.write() as conn:
        ws = wsmod.get(conn, name)
        if ws.root == root:
            return None
        forgotten = wsmod.move(conn, ws.id, root)
    return {"moved_from": ws.root, "documents_forgotten": forgotten}
