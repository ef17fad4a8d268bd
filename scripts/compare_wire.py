"""Compare the wire answers of two commits: the same requests over ``autodoc serve --stdio``, each commit on a
database it indexed and embedded itself from the same folder. A refactor that changes no behaviour answers the
same; a feature may add keys (``--additions-allowed``) but change none.

    .venv/bin/python scripts/compare_wire.py --before main --after HEAD --out doc/wire-compare.md

Each side runs from a ``git worktree`` of its commit (the working tree itself for ``--after WORKTREE``), with
this venv's Python and the side's own ``autodoc_core`` first on ``PYTHONPATH``. Timings are left out of the
comparison: they are the one part of an answer that differs between two runs of one commit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORKTREE = "WORKTREE"
VOLATILE = {"timing", "seconds", "ms", "took_ms", "rate", "eta_seconds", "updated_at", "indexed_at"}

QUERIES = [
    "why did we pick an embedded relational store", "embedded relational store", "crash safety",
    "how are documents split into sections", "section", "chunk size", "BM25 field weights", "reclaimBatch",
    "-32069", "superseded", "type:adr", "type:adr -status:superseded", "status:accepted store",
    "\"writer lease\"", "lease", "what happens when two editors open one database", "semantic search",
    "Hamming", "cosine rescore", "rerank cross-encoder", "facets", "tags:search", "picker keys", "???", "-",
    "the", "a b c", "SQLite WAL mode", "where are vectors stored", "embedding model", "onnx", "MiniLM",
    "索引", "検索", "stage badges", "json rpc error codes", "mcp tools", "token budget", "related sections",
    "frontmatter yaml", "links between documents",
]
OPTIONS: list[dict[str, Any]] = [
    {}, {"stages": ["lexical"]}, {"stages": ["semantic"]}, {"limit": 3}, {"limit": 50},
]


def requests(kb: Path) -> list[tuple[str, list[Any]]]:
    asked: list[tuple[str, list[Any]]] = [("workspace.list", []), ("doc.list", ["kb", "", {"limit": 50}])]
    for query in QUERIES:
        for opts in OPTIONS:
            asked.append(("search.query", ["kb", query, opts]))
    documents = sorted(str(p.relative_to(kb)) for p in kb.rglob("*.md"))
    for relpath in documents:
        asked.append(("doc.read", ["kb", relpath]))
        asked.append(("search.related", ["kb", relpath, {}]))
        asked.append(("search.related", ["kb", relpath, {"line": 5}]))
    asked += [("search.query", ["nosuch", "store"]), ("search.query", ["kb", 42]),
              ("doc.read", ["kb", "../../etc/passwd"]), ("search.related", ["kb", "nosuch.md"])]
    return asked


@contextmanager
def checkout(rev: str) -> Iterator[Path]:
    if rev == WORKTREE:
        yield ROOT
        return
    with tempfile.TemporaryDirectory(prefix="wire-") as tmp:
        where = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev], check=True,
                       capture_output=True)
        try:
            yield where
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], check=False,
                           capture_output=True)


def answers(tree: Path, kb: Path, db: Path) -> list[Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    base = [sys.executable, "-m", "autodoc_core", "--db", str(db)]

    def call(method: str, params: list[Any]) -> None:
        subprocess.run([*base, "--call", method, json.dumps(params)], cwd=tree, env=env, check=True,
                       capture_output=True)

    call("workspace.add", ["kb", str(kb)])
    call("workspace.index", ["kb", {"wait": "semantic"}])
    asked = requests(kb)
    lines = "".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": m, "params": p}) + "\n"
                    for n, (m, p) in enumerate(asked))
    done = subprocess.run([*base, "serve", "--stdio"], cwd=tree, env=env, input=lines.encode(), capture_output=True,
                          timeout=900, check=True)
    by_id = {a["id"]: a for a in map(json.loads, done.stdout.decode().splitlines()) if a.get("id") is not None}
    return [without_volatile(by_id.get(n)) for n in range(len(asked))]


def without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [without_volatile(v) for v in value]
    return value


def difference(before: Any, after: Any, path: str = "") -> tuple[list[str], list[str]]:
    """(changes, additions): paths whose values differ, and keys only the after side has."""
    if isinstance(before, dict) and isinstance(after, dict):
        changes, additions = [], []
        for key in before:
            if key not in after:
                changes.append(f"{path}.{key} removed")
            else:
                c, a = difference(before[key], after[key], f"{path}.{key}")
                changes += c
                additions += a
        additions += [f"{path}.{key}" for key in after if key not in before]
        return changes, additions
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        changes, additions = [], []
        for n, (b, a) in enumerate(zip(before, after, strict=True)):
            c, ad = difference(b, a, f"{path}[{n}]")
            changes += c
            additions += ad
        return changes, additions
    return ([] if before == after else [f"{path}: {json.dumps(before)[:120]} -> {json.dumps(after)[:120]}"]), []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main")
    parser.add_argument("--after", default=WORKTREE, help=f"a commit, or {WORKTREE} (this checkout as it is)")
    parser.add_argument("--kb", type=Path, default=ROOT / "doc" / "kb")
    parser.add_argument("--additions-allowed", action="store_true", help="keys only the after side has are fine")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    kb = args.kb.resolve()
    sides = []
    for rev in (args.before, args.after):
        with checkout(rev) as tree, tempfile.TemporaryDirectory() as tmp:
            sides.append(answers(tree, kb, Path(tmp) / "autodoc.db"))
    asked = requests(kb)
    same, added_only, changed = 0, [], []
    for (method, params), before, after in zip(asked, *sides, strict=True):
        changes, additions = difference(before, after)
        label = f"{method} {json.dumps(params, ensure_ascii=False)}"
        if changes:
            changed.append((label, changes))
        elif additions:
            added_only.append((label, sorted({re.sub(r"\[\d+\]", "[]", a) for a in additions})))
        else:
            same += 1
    report = [f"# Wire answers: {args.before} against {args.after}", "",
              f"Made by `scripts/compare_wire.py --before {args.before} --after {args.after}"
              f"{' --additions-allowed' if args.additions_allowed else ''}` on `{args.kb}`: {len(asked)} requests "
              "over `serve --stdio`, each side on a database it indexed and embedded itself; timings left out.", "",
              f"- identical: {same}", f"- only added keys: {len(added_only)}", f"- changed: {len(changed)}", ""]
    if added_only:
        keys = sorted({key.lstrip(".") for _, additions in added_only for key in additions})
        report += ["Keys added: " + ", ".join(f"`{k}`" for k in keys[:20]), ""]
    for label, changes in changed[:30]:
        report += [f"- `{label}`", *[f"  - {c}" for c in changes[:5]]]
    text = "\n".join(report) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    failed = changed or (added_only and not args.additions_allowed)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
