"""The KEPs cut into one file per H2 section: the same text, the same chunks (so the same vectors), documents
about 25 times shorter. Does the fusion's response to document shape (fusion_weight "auto", the lexical-leader
check) hold when only the shape changes?

    python scripts/experiments/reshape_keps.py --shared ../shared --work /tmp/reshaped \\
        --vectors-from /path/to/bench.db   # optional: a database whose "keps" workspace is embedded

Writes the cut corpus, the query sets mapped onto it and the database under --work (never into the project)
and prints the sweep. Run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import apsw

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from autodoc_core.service.engine import Engine  # noqa: E402
from tests.bench import fusion as bench  # noqa: E402

FENCE = re.compile(r"^\s*(```|~~~)")
ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")
TUNING = ("keps-dev", "keps-validation", "keps-heldout", "keps-heldout2", "keps-heldout3", "keps-heldout4")
WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, None)
AGREEMENTS = (None, 0.3, 0.4, 0.5)


def cut(text: str) -> tuple[str, str, list[list[str]]]:
    """Front matter, the H1 line, and the parts: what precedes the first H2, then each H2 with its subsections."""
    lines = text.splitlines(keepends=True)
    front, start = "", 0
    if lines and lines[0].strip() == "---":
        end = next(k for k in range(1, len(lines)) if lines[k].strip() == "---")
        front, start = "".join(lines[: end + 1]), end + 1
    title, parts, current, fenced = "", [], [], False
    for line in lines[start:]:
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("# ") and not title:
            title = line
            continue
        if not fenced and line.startswith("## "):
            parts.append(current)
            current = []
        current.append(line)
    parts.append(current)
    return front, title, [part for part in parts if any(line.strip() for line in part)]


def write_corpus(source: Path, target: Path) -> dict[str, list[tuple[str, list[str]]]]:
    """Every KEP as files ``NAME--NN.md`` beside each other, each with the KEP's front matter and title;
    returns each KEP's parts with the headings in them."""
    parts_of: dict[str, list[tuple[str, list[str]]]] = {}
    for path in sorted(source.rglob("*.md")):
        relative = path.relative_to(source)
        if relative.parts[0] == "_schema":
            continue
        front, title, parts = cut(path.read_text())
        for number, part in enumerate(parts):
            out = target / relative.parent / f"{relative.stem}--{number:02d}.md"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(f"{front}\n{title}\n{''.join(part)}")
            headings = [ANCHOR.sub("", line.lstrip("#").strip()) for line in part if line.startswith("#")]
            parts_of.setdefault(str(relative), []).append((str(out.relative_to(target)), headings))
    schema = source / "_schema"
    if schema.is_dir():
        (target / "_schema").mkdir(parents=True, exist_ok=True)
        for file in schema.iterdir():
            (target / "_schema" / file.name).write_bytes(file.read_bytes())
    return parts_of


def map_queries(queries: list[dict], parts_of: dict) -> list[dict]:
    """Queries labelled with a section, relevant = the part holding it (other relevant KEPs: their part with the
    same heading, if any). Topic and facet queries (no section) are left out."""
    def part(relative: str, section: str) -> str | None:
        return next((out for out, headings in parts_of.get(relative, []) if section in headings), None)
    mapped = []
    for query in queries:
        if not query.get("section") or not (first := part(query["relevant"][0], query["section"])):
            continue
        others = [p for r in query["relevant"][1:] if (p := part(r, query["section"]))]
        mapped.append({**query, "relevant": [first, *others]})
    return mapped


def build(db: Path, root: Path, vectors_from: Path | None) -> None:
    engine = Engine(db)
    try:
        engine.workspace_add("keps-reshaped", str(root))
        if vectors_from:  # identical chunk texts: their vectors are the ones the model would compute again
            conn = apsw.Connection(str(db))
            ws_id = conn.execute("SELECT id FROM workspaces WHERE name = 'keps-reshaped'").fetchone()[0]
            conn.execute("ATTACH ? AS source", (str(vectors_from),))
            conn.execute("INSERT OR IGNORE INTO embeddings(ws_id, model_fp, text_hash, bits_bytes, f32_bytes) "
                         "SELECT ?, e.model_fp, e.text_hash, e.bits_bytes, e.f32_bytes FROM source.embeddings e "
                         "JOIN source.workspaces w ON w.id = e.ws_id AND w.name = 'keps'", (ws_id,))
            conn.close()
        engine.workspace_index("keps-reshaped", {"wait": "semantic"})
    finally:
        engine.close()


def whole_kep(path: str) -> str:
    """The KEP a part file was cut from."""
    return re.sub(r"--\d+\.md$", ".md", path)


def as_whole_keps(ranked: list[str]) -> list[str]:
    return list(dict.fromkeys(whole_kep(path) for path in ranked))


def sweep(records: list[dict], kep_level: bool) -> list[str]:
    """The product's blend at each weight and leader check; ``kep_level`` scores whole KEPs (a KEP ranks by its
    best part), the task the uncut corpus poses, instead of the part that holds the section."""
    scored = [{**r, "relevant": sorted({whole_kep(p) for p in r["relevant"]})} if kep_level else r for r in records]
    shape = as_whole_keps if kep_level else list
    engine = {label: bench.by_kind([shape(r["runs"][label]["docs"]) for r in records], scored)["all"]
              for label in ("lexical", "semantic", "hybrid")}
    lines = [f"{'whole KEPs' if kep_level else 'parts'}: queries {len(records)}; engine: " + ", ".join(
        f"{label} {engine[label]['r3']:.3f}/{engine[label]['ndcg10']:.3f}" for label in engine)]
    for agreement in AGREEMENTS:
        cells = []
        for weight in WEIGHTS:
            fusion = bench.LeaderCheck(bench.product(weight), agreement)
            result = bench.by_kind([shape(bench.replay(r, fusion)) for r in records], scored)["all"]
            cells.append(f"w={weight or 'auto'} {result['r3']:.3f}/{result['ndcg10']:.3f}")
        check = "off (every leader kept)" if agreement is None else agreement
        lines.append(f"leader check {check}: " + "  ".join(cells))
    return lines


def shape_counts(db: Path, source: Path | None) -> str:
    """The reshaped workspace's size and, with ``source``, how many of its chunk texts the uncut KEPs have."""
    conn = apsw.Connection(str(db))
    shared = ""
    if source:
        conn.execute("ATTACH ? AS source", (str(source),))
        same, total = conn.execute(
            "SELECT COUNT(*) FILTER (WHERE text_hash IN (SELECT c.text_hash FROM source.chunks c JOIN "
            "source.workspaces w ON w.id = c.ws_id AND w.name = 'keps')), COUNT(*) FROM "
            "(SELECT DISTINCT text_hash FROM chunks)").fetchone()
        conn.execute("DETACH source")
        shared = f"; {same} of {total} distinct chunk texts are the uncut KEPs' own"
    chunks, documents, vectors = conn.execute(
        "SELECT (SELECT COUNT(*) FROM chunks), (SELECT COUNT(*) FROM documents), (SELECT COUNT(*) FROM embeddings)"
    ).fetchone()
    per_document = sorted(n for (n,) in conn.execute("SELECT COUNT(*) FROM chunks GROUP BY doc_id"))
    conn.close()
    return (f"{documents} documents, {chunks} chunks, {vectors} vectors, median "
            f"{per_document[len(per_document) // 2]} chunks per document{shared}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--work", required=True, help="a folder outside the project for the corpus and database")
    parser.add_argument("--vectors-from", type=Path, help="a database whose 'keps' workspace is embedded")
    args = parser.parse_args()
    work = Path(args.work).resolve()
    root, db = work / "docs", work / "reshaped.db"
    if not db.exists():
        parts_of = write_corpus(Path(args.shared).resolve() / "data" / "keps" / "docs", root)
        (work / "parts.json").write_text(json.dumps(parts_of))
        build(db, root, args.vectors_from)
    parts_of = json.loads((work / "parts.json").read_text())
    engine = Engine(db)
    pooled = []
    try:
        for name in TUNING:
            queries = map_queries(bench.load_queries(ROOT / "tests" / "bench" / "eval" / f"{name}.jsonl"), parts_of)
            pooled += bench.capture(engine, "keps-reshaped", [{**q, "kind": q.get("kind") or "claim"} for q in queries])
    finally:
        engine.close()
    used = sorted({r["fuse_inputs"]["weight"] for r in pooled if (r["fuse_inputs"] or {}).get("weight")})
    print(shape_counts(db, args.vectors_from), f"; auto weight {used}")
    print("\n".join(sweep(pooled, kep_level=False) + sweep(pooled, kep_level=True)))


if __name__ == "__main__":
    main()
