"""Whether a workspace's folder is there to be read, and what to tell the user when it is not.

A root that vanished (deleted, renamed, a drive not mounted) keeps its index: scans leave it unchanged (the
indexer refuses to read a root it cannot list, or an empty one where documents were), searches keep answering
from it, and status, health and the picker say so (``root_problem``) instead of reading as healthy. ``folder``
says the same in one word without the path ("ok", "gone", "not a folder", "unreadable", "empty"), for pages that
show no paths (the MCP server's /health).
"""

from __future__ import annotations

import os

MOVE_HINT = 'workspace.add with {"move": true}'


def root_state(root: str, documents: int) -> tuple[str, str | None]:
    """``root``'s state in one word, and None when it is "ok" (a folder this process can list, or an empty one
    with nothing indexed from it); else one sentence: what is wrong and what happens to the ``documents``
    indexed from it."""
    found = _fault(root, documents)
    if found is None:
        return "ok", None
    state, fault = found
    kept = (f"its {documents:,} indexed document{'s are' if documents != 1 else ' is'} kept (and still searched)"
            if documents else "nothing is indexed from it")
    return state, (f"{fault}; {kept} until it is back, or until the workspace is moved to another folder "
                   f"(setup() or {MOVE_HINT}) or removed (workspace.remove)")


def _fault(root: str, documents: int) -> tuple[str, str] | None:
    try:
        with os.scandir(root) as entries:
            empty = next(entries, None) is None
    except FileNotFoundError:
        return "gone", f"the folder {root} no longer exists"
    except NotADirectoryError:
        return "not a folder", f"{root} is no longer a folder"
    except OSError as exc:
        return "unreadable", f"the folder {root} cannot be read ({exc.strerror or exc})"
    if empty and documents:
        return "empty", f"the folder {root} is empty (a drive not mounted?)"
    return None
