"""JSON-RPC error codes and the one exception type the engine raises for callers to see.

Standard JSON-RPC codes come first; the project's own codes live in -32060..-32069 and are
documented in ``doc/autodoc.txt`` (section autodoc-errors).
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

UNKNOWN_WORKSPACE = -32060
OUTSIDE_ROOT = -32061
NOT_FOUND = -32062
SCHEMA_TOO_NEW = -32063
IO_ERROR = -32064
UNSUPPORTED = -32065
BUSY = -32066
EMBED_FAILED = -32067
SWITCHING = -32069

CODE_NAMES = {
    PARSE_ERROR: "rpc.parse_error",
    INVALID_REQUEST: "rpc.invalid_request",
    METHOD_NOT_FOUND: "rpc.method_not_found",
    INVALID_PARAMS: "rpc.invalid_params",
    INTERNAL_ERROR: "rpc.internal",
    UNKNOWN_WORKSPACE: "rpc.unknown_workspace",
    OUTSIDE_ROOT: "rpc.outside_root",
    NOT_FOUND: "rpc.not_found",
    SCHEMA_TOO_NEW: "rpc.schema_too_new",
    IO_ERROR: "rpc.io_error",
    UNSUPPORTED: "rpc.unsupported",
    BUSY: "rpc.busy",
    EMBED_FAILED: "rpc.embed_failed",
    SWITCHING: "rpc.switching",
}


class AutodocError(Exception):
    """An error with a JSON-RPC code and a reason a person can act on."""

    def __init__(self, code: int, reason: str, **data: Any) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.data = data

    def to_rpc(self) -> dict[str, Any]:
        name = CODE_NAMES.get(self.code, "rpc.error")
        return {"code": self.code, "message": name, "data": {"reason": self.reason, **self.data}}


def invalid_params(reason: str, **data: Any) -> AutodocError:
    return AutodocError(INVALID_PARAMS, reason, **data)


def whole_number(value: Any, low: float | None = None, high: float | None = None) -> bool:
    """An int within low..high (an open end when None). Never a bool: JSON's true is not 1."""
    return isinstance(value, int) and not isinstance(value, bool) and _within(value, low, high)


def number(value: Any, low: float | None = None, high: float | None = None) -> bool:
    """An int or a float within low..high (an open end when None); never a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool) and _within(value, low, high)


def _within(value: float, low: float | None, high: float | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def from_sqlite(exc: BaseException) -> AutodocError | None:
    """What SQLite's own failures mean to a user, or None for anything else (a bug). A full disk, a read-only
    folder or a lock another process keeps (a writer stopped mid-transaction) were reported as bugs."""
    import apsw

    detail = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, apsw.FullError):
        return AutodocError(IO_ERROR, f"the disk that holds the database is full ({detail}); free some space and "
                            "try again: nothing was half-written")
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return AutodocError(BUSY, f"another process holds the database's lock ({detail}): one that is writing, "
                            "or that stopped or hung while writing; try again, and if it stays, find it "
                            "(workspace.status: writer_lease)")
    if isinstance(exc, apsw.ReadOnlyError | apsw.CantOpenError | apsw.IOError | apsw.PermissionsError):
        return AutodocError(IO_ERROR, f"the database cannot be opened or written ({detail}): is its folder or "
                            "file system read-only, or was the file moved away?")
    return None

