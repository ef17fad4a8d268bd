"""What every hit must satisfy, as SQL clauses over ``d`` (documents) and ``c`` (chunks), each clause with
its own parameters: a query over documents alone takes ``document`` and leaves ``chunk`` out."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Clause:
    sql: str
    params: tuple = ()


@dataclass
class Filters:
    document: list[Clause] = field(default_factory=list)
    chunk: list[Clause] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.document or self.chunk)

    def all(self) -> list[Clause]:
        return [*self.document, *self.chunk]


def where(clauses: list[Clause]) -> tuple[str, tuple]:
    """`` AND ...`` for each clause, and their parameters in the same order."""
    return "".join(f" AND {c.sql}" for c in clauses), tuple(p for c in clauses for p in c.params)


def facet_clause(ws_id: int, name: str, values: list, negated: bool) -> Clause:
    marks = ", ".join("?" * len(values))
    return Clause(f"d.id {'NOT ' if negated else ''}IN (SELECT doc_id FROM facets WHERE ws_id = ? AND field = ? "
                  f"AND value IN ({marks}))", (ws_id, name, *values))


def path_clause(prefixes: list[str]) -> Clause:
    """Documents at one of these paths or inside one of these folders."""
    sql = "(" + " OR ".join("d.path = ? OR substr(d.path, 1, ?) = ?" for _ in prefixes) + ")"
    return Clause(sql, tuple(p for prefix in prefixes for p in (prefix, len(prefix) + 1, prefix + "/")))


NOT_ABSTRACT = Clause("c.kind <> 'abstract'")
