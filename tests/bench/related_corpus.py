"""Ground truth nobody here wrote, for ``tests/bench/related.py``: documents citing other documents of the
same corpus (KEPs cite KEPs, Rust RFCs cite RFCs), and a rewritten copy of the corpus in which every
citation is gone, with the links that carried them, so neither the words nor the link graph give a pair away.

The copy keeps each document's first ``KEEP_CHARS`` characters (after the KEPs' table of contents and sign-off
checklist, which are boilerplate), cut at a line end: embedding whole corpora on two shared cores takes hours,
and a document's opening (summary, motivation) says what it is about. Citations are found in the whole text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

KEEP_CHARS = 6000
# A document cited by more than this share of the citing documents is cited by a template, not by an author:
# the KEP template links the production-readiness KEP from its questionnaire (152 of 291 citing KEPs). Left out.
TEMPLATE_SHARE = 0.1

# A Markdown link [text](target) or a bare URL, and the reference-style definition "[label]: target".
_LINK = re.compile(r"!?\[([^\]\n]*)\]\(([^)\s]*)[^)\n]*\)")
_DEFINITION = re.compile(r"^\s*\[[^\]\n]+\]:\s*\S+.*$", re.MULTILINE)
_URL = re.compile(r"https?://[^\s)>\]]+")


@dataclass
class Corpus:
    """How one corpus names its documents and cites them."""

    name: str
    folder: str  # under the shared data folder
    glob: str
    # Patterns whose group 1 is a cited number, each with how the number is resolved: "doc" (the document
    # number in the file name) or "pr" (a pull request number, mapped through the documents' own headers).
    patterns: list[tuple[re.Pattern[str], str]]
    own_pr: re.Pattern[str] | None = None
    strip: list[re.Pattern[str]] = field(default_factory=list)  # boilerplate removed before the cut

    def number(self, path: Path) -> str | None:
        found = re.match(r"(\d+)-", path.name)
        return str(int(found.group(1))) if found else None


KEPS = Corpus(
    "keps", "keps/docs", "**/*.md",
    patterns=[
        (re.compile(r"\bKEP[- ]?#?(\d{2,})", re.IGNORECASE), "doc"),
        (re.compile(r"keps/[a-z0-9-]+/(\d+)-[a-z0-9-]"), "doc"),
        (re.compile(r"\.\./(\d+)-[a-z0-9-]"), "doc"),
        (re.compile(r"enhancements/issues/(\d+)"), "doc"),
        (re.compile(r"enhancements#(\d+)"), "doc"),
    ],
    strip=[re.compile(r"<!-- toc -->.*?<!-- /toc -->", re.DOTALL),
           re.compile(r"^## Release Signoff Checklist\n.*?(?=^## )", re.DOTALL | re.MULTILINE)],
)

RUST_RFCS = Corpus(
    "rust-rfcs", "rust-rfcs/text", "*.md",
    patterns=[
        (re.compile(r"\bRFCs? ?#?(\d{1,4})\b"), "doc"),
        (re.compile(r"text/(\d{4})-[a-z0-9_-]"), "doc"),
        (re.compile(r"(?<![\w/])(\d{4})-[a-z0-9_-]+\.md"), "doc"),
        (re.compile(r"rfcs/pull/(\d+)"), "pr"),
        (re.compile(r"rfcs/issues/(\d+)"), "pr"),
        (re.compile(r"rfcs#(\d+)"), "pr"),
    ],
    own_pr=re.compile(r"^- RFC PR:.*?(?:rfcs#|rfcs/pull/)(\d+)", re.MULTILINE),
)

CORPORA = {corpus.name: corpus for corpus in (KEPS, RUST_RFCS)}


@dataclass
class Rewritten:
    root: Path
    cited: dict[str, list[str]]  # citing path -> cited paths (relative to the root), each another document
    documents: int


def _numbered(corpus: Corpus, source: Path) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Texts by relative path, document number -> path, pull request number -> path."""
    texts: dict[str, str] = {}
    by_number: dict[str, str] = {}
    by_pr: dict[str, str] = {}
    for path in sorted(source.glob(corpus.glob)):
        if path.name.startswith("_") or "/_" in str(path.relative_to(source)):
            continue
        relpath = str(path.relative_to(source))
        text = path.read_text(encoding="utf-8", errors="replace")
        texts[relpath] = text
        number = corpus.number(path)
        if number:
            by_number.setdefault(number, relpath)
        if corpus.own_pr and (own := corpus.own_pr.search(text)):
            by_pr.setdefault(str(int(own.group(1))), relpath)
    return texts, by_number, by_pr


def citations(corpus: Corpus, text: str, relpath: str, by_number: dict[str, str],
              by_pr: dict[str, str]) -> set[str]:
    """The other documents of the corpus this text cites."""
    own = corpus.own_pr.search(text) if corpus.own_pr else None
    body = text.replace(own.group(0), "") if own else text
    cited: set[str] = set()
    for pattern, kind in corpus.patterns:
        for found in pattern.finditer(body):
            number = str(int(found.group(1)))
            first, second = (by_number, by_pr) if kind == "doc" else (by_pr, by_number)
            target = first.get(number) or second.get(number)
            if target and target != relpath:
                cited.add(target)
    return cited


def without_citations(corpus: Corpus, text: str) -> str:
    """The text with every citation gone: a link whose text or target cites (or any link to another document
    of the corpus) is removed whole, then bare URLs and the citing words themselves."""
    def cites(fragment: str) -> bool:
        return any(pattern.search(fragment) for pattern, _ in corpus.patterns)

    def link(match: re.Match[str]) -> str:
        label, target = match.group(1), match.group(2)
        if cites(label) or cites(target) or target.endswith(".md") or "/keps/" in target or "rfcs" in target:
            return ""
        return label if target.startswith(("http", "/", ".")) else match.group(0)

    text = _LINK.sub(link, text)
    text = _DEFINITION.sub("", text)
    text = _URL.sub("", text)
    for pattern, _ in corpus.patterns:
        text = pattern.sub("", text)
    return text


def opening(corpus: Corpus, text: str) -> str:
    """The first ``KEEP_CHARS`` characters after the boilerplate, cut at a line end (the frontmatter kept)."""
    for pattern in corpus.strip:
        text = pattern.sub("", text)
    if len(text) <= KEEP_CHARS:
        return text
    cut = text.rfind("\n", 0, KEEP_CHARS)
    return text[: cut if cut > 0 else KEEP_CHARS] + "\n"


def rewrite(corpus: Corpus, shared: Path, target: Path) -> Rewritten:
    """Write the corpus without citations under ``target`` (once: an existing copy is reused) and return who
    cites whom."""
    source = shared / "data" / corpus.folder
    texts, by_number, by_pr = _numbered(corpus, source)
    found = {relpath: citations(corpus, text, relpath, by_number, by_pr) for relpath, text in texts.items()}
    citing = [targets for targets in found.values() if targets]
    templated = {target for target in set().union(*citing)
                 if sum(target in targets for targets in citing) > TEMPLATE_SHARE * len(citing)}
    cited = {relpath: sorted(targets - templated) for relpath, targets in found.items() if targets - templated}
    marker = target / ".complete"
    if not marker.exists():
        for relpath, text in texts.items():
            path = target / relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(without_citations(corpus, opening(corpus, text)), encoding="utf-8")
        (target / "_cited.json").write_text(json.dumps(cited, indent=1))
        marker.write_text("")
    return Rewritten(target, cited, len(texts))


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="write the citation-free copies and print who cites whom")
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--work", default="/tmp/related-bench")
    args = parser.parse_args()
    for corpus in CORPORA.values():
        done = rewrite(corpus, Path(args.shared), Path(args.work) / corpus.name)
        pairs = sum(len(v) for v in done.cited.values())
        print(f"{corpus.name}: {done.documents} documents, {len(done.cited)} citing, {pairs} pairs -> {done.root}")


if __name__ == "__main__":
    main()
