"""The query language: words, "quoted phrases", a trailing ``*`` prefix, and facets.

Nothing a person types is passed to FTS5 as syntax: every word is quoted, so ``AND``, ``OR``,
``NOT``, ``NEAR``, ``:``, ``-``, ``(`` and ``^`` are searched as ordinary words. ``field:value``
and ``-field:value`` are facets only when the field is declared in the workspace's schema (or is
``tag``); otherwise they are words too.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from autodoc_core.parse import cjk
from autodoc_core.parse.frontmatter import CoercionError, FacetSchema, coerce

MAX_QUERY_CHARS = 4000
MAX_TERMS = 64
BUILTIN_FACETS = {"tag": "list", "tags": "list"}
NO_MATCH = "\x00no-match"  # the filter value of a facet whose value does not fit its type
_FIELD_LIKE = re.compile(r"[a-z][a-z0-9_-]*")  # how frontmatter fields are spelled (status, f5-product)
_VALUE_LIKE = re.compile(r"[\w][\w .-]*")


class _LeftOut:
    """A query token that is neither a filter nor words (a negated field no filter has)."""


LEFT_OUT = _LeftOut()

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t
    """.split()  # noqa: SIM905
)

_COMPOUND = re.compile(r"-{0,2}\w+(?:(?:[-_.]|::)\w+)+")
COMPOUND_MIN_PIECES = 3
_TOKEN = re.compile(r'-?[^\s":]+:"[^"]*"?|"[^"]*"?|\S+')


@dataclass(frozen=True)
class Term:
    text: str
    phrase: bool = False
    prefix: bool = False
    compound: bool = False  # the pieces of one typed identifier; may be loosened to separate words

    def loosened(self) -> list[Term]:
        if self.compound:
            return [Term(piece) for piece in self.text.split()]
        if self.loosens_cjk:
            words = [word for part, is_run in cjk.split_runs(self.text)
                     for word in (cjk.bigrams(part) if is_run else fts_tokens(part))]
            return [Term(word) for word in dict.fromkeys(words)]
        return [self]

    @property
    def loosens_cjk(self) -> bool:
        """A long CJK run typed as one word (likely several words: these scripts put no spaces between them)."""
        return not (self.phrase or self.prefix) and cjk.longest_run(self.text) >= cjk.LOOSE_RUN

    def fts(self) -> str:
        text, lone_cjk = cjk.query_text(self.text)
        literal = '"' + text.replace('"', '""') + '"'
        return literal + " *" if self.prefix or lone_cjk else literal


@dataclass
class FacetFilter:
    field: str
    value: str
    negated: bool = False


@dataclass
class ParsedQuery:
    raw: str
    terms: list[Term] = field(default_factory=list)
    facets: list[FacetFilter] = field(default_factory=list)
    dropped_stopwords: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    semantic_text: str = ""  # the query as typed, less its facet tokens: what gets embedded
    typed_text: str = ""  # the same with the typed characters between tokens kept (a pasted line as pasted)
    any_word: bool = False  # the lexical stage ORs the words at once, none pruned (a related section's words)
    terms_left_out: int = 0  # terms past MAX_TERMS, not searched (said in problems and in the picker's title)
    # An excluding filter on a field this workspace does not have ("-status:superseded"): field name -> the
    # problem that says it was left out. It excludes nothing here; a search of several workspaces where another
    # has the field does not say it (search.scope).
    excluded_unknown: dict[str, str] = field(default_factory=dict)

    @property
    def words(self) -> list[str]:
        """Lower-cased word tokens of all terms, for snippets, tag boosts and highlighting."""
        return [w for term in self.terms for w in fts_tokens(term.text)]

    @property
    def text_for_embedding(self) -> str:
        return " ".join(t.text for t in self.terms)


def _is_token_char(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in "LN" or category == "Co"


def fts_tokens(text: str) -> list[str]:
    """Split text the way FTS5's unicode61 tokenizer does (letters, numbers, private use)."""
    tokens, current = [], []
    for char in text:
        if _is_token_char(char):
            current.append(char)
        elif current:
            tokens.append("".join(current).lower())
            current = []
    if current:
        tokens.append("".join(current).lower())
    return tokens


def parse_query(raw: str, schema: FacetSchema) -> ParsedQuery:
    typed_chars = len(raw)
    raw = raw[:MAX_QUERY_CHARS].replace("\x00", " ")
    query = ParsedQuery(raw)
    if typed_chars > MAX_QUERY_CHARS:
        query.problems.append(f"the query has {typed_chars:,} characters: only the first {MAX_QUERY_CHARS:,} "
                              "were read")
    matches = list(_TOKEN.finditer(raw))
    tokens = [match.group(0) for match in matches]
    kept_tokens = []
    typed, typed_from = [], 0
    facets = [_facet(token, schema, query) for token in tokens]
    last_word = max((i for i, facet in enumerate(facets) if facet is None), default=-1)  # `kube* tag:k8s`
    for position, token in enumerate(tokens):
        facet = facets[position]
        if facet is not None:
            if isinstance(facet, FacetFilter):
                query.facets.append(facet)
            typed.append(raw[typed_from : matches[position].start()])
            typed_from = matches[position].end()
            continue
        kept_tokens.append(token)
        if token.startswith('"'):
            text = cjk.fold_width(token.strip('"'))
            if fts_tokens(text):
                query.terms.append(Term(text, phrase=len(fts_tokens(text)) > 1 or cjk.longest_run(text) > 1))
            continue
        prefix = position == last_word and token.endswith("*") and len(token.rstrip("*")) > 0
        pieces = fts_tokens(cjk.fold_width(token.rstrip("*") if prefix else token))
        if not prefix and _is_compound_identifier(token, pieces):
            # --usage-report-enforce-initial-report, proxy_busy_buffers_size: the pieces in order
            query.terms.append(Term(" ".join(pieces), phrase=True, compound=True))
            continue
        # otherwise one term per FTS token, so punctuation never joins typed words into a phrase
        for piece in pieces:
            query.terms.append(Term(piece))
        if prefix and query.terms and pieces:
            last = query.terms.pop()
            query.terms.append(Term(last.text, prefix=True))
    _drop_stopwords(query)
    _keep_first_terms(query)
    query.semantic_text = " ".join(kept_tokens)
    query.typed_text = "".join([*typed, raw[typed_from:]]).strip()
    return query


def _keep_first_terms(query: ParsedQuery) -> None:
    """At most MAX_TERMS terms are searched (FTS5's cost grows with each); the rest is said, not dropped silently."""
    typed = len(query.terms)
    if typed > MAX_TERMS:
        query.terms = query.terms[:MAX_TERMS]
        query.terms_left_out = typed - MAX_TERMS
        query.problems.append(f"the query has {typed} terms (words and phrases): only the first {MAX_TERMS} "
                              f"were searched (at most {MAX_TERMS})")


def _is_compound_identifier(token: str, pieces: list[str]) -> bool:
    """Three or more word pieces joined only by identifier punctuation (- _ . :), e.g. a CLI flag
    or a snake_case name. Two-piece words (built-in, IL-6) stay separate terms."""
    return len(pieces) >= COMPOUND_MIN_PIECES and bool(_COMPOUND.fullmatch(token))


def tag_key(tag: str) -> str:
    """Tags are stored lower-case without their '#': `tag:ADR`, `#adr` and `adr` are one tag."""
    return tag.lstrip("#").lower()


def _facet(token: str, schema: FacetSchema, query: ParsedQuery) -> FacetFilter | None | _LeftOut:
    negated = token.startswith("-")
    body = token[1:] if negated else token
    if ":" not in body:
        return None
    name, _, value = body.partition(":")
    if value.startswith("//"):  # a URL (https://...): words, whatever fields there are
        return None
    value = value.strip('"')
    name = name if name.lower() in BUILTIN_FACETS else schema.spelled(name)
    kind = BUILTIN_FACETS.get(name.lower()) or schema.declared(name)
    near = schema.closest(name) if not kind and value else None
    hint = f" (did you mean {near}:?)" if near else ""
    if not kind and negated and _FIELD_LIKE.fullmatch(name) and _VALUE_LIKE.fullmatch(value):
        # As words, "-status:superseded" would search for "status superseded", what it excludes. A pasted
        # flag (-XX:+UseG1GC, -std::move, -Dkey.name:true) or a time (-05:00) does not look like a field.
        problem = f"{name!r} is not a filter field{_where_fields_come_from(schema)}, so {token!r} was left out{hint}"
        query.problems.append(problem)
        query.excluded_unknown[name.lower()] = problem
        return LEFT_OUT
    if not kind and near:
        query.problems.append(f"{name!r} is not a filter field, so {token!r} was searched as words{hint}")
    if not kind or not value:
        return None
    field_name = "tag" if name.lower() in BUILTIN_FACETS else name
    if field_name == "tag":
        value = tag_key(value)
    try:
        values = coerce(value.lstrip("#"), kind) if kind != "list" else [value.lstrip("#")]
    except CoercionError as exc:
        effect = "excludes nothing" if negated else "matches nothing"
        query.problems.append(f"{'-' if negated else ''}{name}:{value}: {exc}; the filter {effect}")
        values = [NO_MATCH]
    return FacetFilter(field_name, values[0], negated)


def _where_fields_come_from(schema: FacetSchema) -> str:
    return " (no document's frontmatter has it)" if schema.inferred else " (declared in _schema/frontmatter.yaml)"


def _drop_stopwords(query: ParsedQuery) -> None:
    keep = [t for t in query.terms if t.phrase or t.prefix or t.text.lower() not in STOPWORDS]
    if keep:
        query.dropped_stopwords = [t.text for t in query.terms if t not in keep]
        query.terms = keep
