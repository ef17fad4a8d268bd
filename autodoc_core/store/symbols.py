"""The ``symbols`` table: the identifiers each chunk holds (parse.symbols), every qualified name also under
its shorter suffixes (``suffix`` = 1), exact and case-folded."""

from __future__ import annotations

from enum import StrEnum

import apsw

from autodoc_core.store.filters import Filters, where


class Match(StrEnum):
    """How a lookup compares a key with the stored symbols."""

    EXACT = "exact"  # the symbol as written, whole
    OTHER_CASE = "other_case"  # the same case-folded, in another case (args: folded, as written)
    SUFFIX = "suffix"  # a stored suffix of a longer symbol, case-folded
    WHOLE_FOLDED = "whole_folded"  # a whole symbol, case-folded
    ANY_OF = "any_of"  # a whole symbol, case-folded, one of several spellings
    HEX_PREFIX = "hex_prefix"  # symbols starting with it (args: folded prefix, as written)


_CONDITIONS = {
    Match.EXACT: "s.symbol = ? AND s.suffix = 0",
    Match.OTHER_CASE: "s.folded = ? AND s.suffix = 0 AND s.symbol <> ?",
    Match.SUFFIX: "s.folded = ? AND s.suffix = 1",
    Match.WHOLE_FOLDED: "s.folded = ? AND s.suffix = 0",
    Match.ANY_OF: "s.folded IN ({marks}) AND s.suffix = 0",
    Match.HEX_PREFIX: "s.folded >= ? AND s.folded < ? AND s.symbol <> ?",
}


def _condition(match: Match, args: tuple) -> tuple[str, tuple]:
    if match is Match.HEX_PREFIX:
        prefix, written = args
        return _CONDITIONS[match], (prefix, prefix + "\uffff", written)
    return _CONDITIONS[match].format(marks=",".join("?" * len(args))), args


def insert(conn: apsw.Connection, ws_id: int, chunk_id: int, keys: list[tuple[str, bool, int]]) -> None:
    """The chunk's symbols as (key, is a suffix, weight) (see parse.symbols.symbol_keys)."""
    conn.executemany(
        "INSERT INTO symbols(ws_id, symbol, folded, suffix, weight, chunk_id) VALUES (?,?,?,?,?,?)",
        [(ws_id, key, key.casefold(), int(is_suffix), weight, chunk_id) for key, is_suffix, weight in keys],
    )


def delete(conn: apsw.Connection, chunk_id: int) -> None:
    conn.execute("DELETE FROM symbols WHERE chunk_id = ?", (chunk_id,))


def remove_workspace(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute("DELETE FROM symbols WHERE ws_id = ?", (ws_id,))


def weights(conn: apsw.Connection, ws_id: int, match: Match, args: tuple, filters: Filters) -> list[tuple[int, int]]:
    """(chunk id, its best weight) of the chunks the filters let through with a symbol matching ``args``."""
    condition, values = _condition(match, args)
    clauses, params = where(filters.all())
    return conn.execute(
        "SELECT s.chunk_id, MAX(s.weight) FROM symbols s JOIN chunks c ON c.id = s.chunk_id "
        f"JOIN documents d ON d.id = c.doc_id WHERE s.ws_id = ? AND {condition}{clauses} GROUP BY s.chunk_id",
        (ws_id, *values, *params),
    ).fetchall()
