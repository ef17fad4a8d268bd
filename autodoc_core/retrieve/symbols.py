"""Identifiers in queries: recognise identifier-shaped queries, and look them up (parse.symbols collects
them from chunks; store.symbols keeps them).

Engineers paste names: ``ResiliencePipeline.AddRetry``, ``std::vector::reserve``,
``reclaim_batch()``, ``reclaimBatch``, ``--max-batch-tokens``, ``ERR_OSSL_EVP_UNSUPPORTED``,
``-32069``, a commit prefix. BM25 splits them into words and vectors blur them, so identifier-
shaped queries also run the ``symbol`` retriever: exact matches first, then case-folded, then by
suffix (``AddRetry`` finds ``ResiliencePipeline.AddRetry`` and the other way round), and a hex
prefix finds the commit hashes written in the documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import apsw

from autodoc_core.parse.symbols import identifiers, is_hex_hash, lookup_keys
from autodoc_core.retrieve.query import STOPWORDS, fts_tokens
from autodoc_core.store import chunks
from autodoc_core.store import symbols as stored
from autodoc_core.store.filters import Filters
from autodoc_core.store.symbols import Match

CANDIDATES = 50
MIN_LITERAL = 3  # shorter tokens are looked for in the symbols table only, never in the text
# A query of this many words or more may be a line pasted from somewhere (an error or log message): the pages
# holding it word for word come first in hybrid search. Chosen on the tuning sets (doc/benchmarks/fusion.md).
PHRASE_MIN_WORDS = 4
# ...of which this many are not stopwords: "what are the risks" is a question that template text holds.
PHRASE_MIN_CONTENT_WORDS = 3
# A longer paste (a stack trace) is matched by its first words: the cost stays bounded.
PHRASE_MAX_WORDS = 32
# A chunk that holds every word of the line in order is among the first lexical hits: only these are read (on
# 1,723 captured queries of four or more words, reading 50 instead changes no answer's first ten hits).
PHRASE_CANDIDATES = 10

_CODE_SPAN = re.compile(r"(?<!`)(`++)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


@dataclass
class QueryShape:
    shape: str  # "identifier" | "text"
    kinds: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    pasted: bool = False  # the query is its identifiers and nothing else: no words around them
    literal: str = ""  # a pasted token as written, without its quotes or a variable's $: what a page must hold
    phrase: str = ""  # a query of PHRASE_MIN_WORDS+ words as a page would hold it if pasted from one (pasted_phrase)

    def as_dict(self) -> dict:
        return {"shape": self.shape, "kinds": self.kinds, "identifiers": self.tokens, "pasted": self.pasted,
                "literal": self.literal, "phrase": self.phrase}


# A query that is a single token is pasted from somewhere more often than typed: then more forms count as
# identifiers than inside prose, where "built-in" or "IPv6" are words.
_LONE_FLAG = re.compile(r"-{1,2}[A-Za-z][\w.-]*")  # one dash or two: -nap-v5-agent
_PIECES = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)+")  # listen-client-http-urls
_ACRONYM_WORD = re.compile(r"[A-Z]{2,}(?!s$)[a-z][A-Za-z0-9]*")  # CSIVolumeFSGroupPolicy, SELinux; not APIs
_LETTERS_DIGITS = re.compile(r"[A-Za-z]+[0-9][A-Za-z0-9]*")  # x509, http2
# A file path, API path or prefixed key: /etc/nginx/conf.d/x.conf, /api/v1/instances, kubernetes.io/h2c, and a
# documented route's placeholders ({instanceObjectID}, <environment_id>, :id). Plain word pairs (and/or, TCP/UDP)
# are not: a path starts with / ~ or . or holds a dot, dash, underscore, digit or placeholder somewhere, and a
# letter (24/7 and 2024/01/02 are numbers).
_SEGMENT = r"(?:[\w.~@*-]|\{[\w.-]+\}|<[\w.-]+>)+|:[A-Za-z_]\w*"
_FILE_PATH = re.compile(rf"(?=.*[A-Za-z])(?=[/~.]|.*[._\d{{<:-])[\w.~@-]*(?:/(?:{_SEGMENT}))+/?")
# https://host/..., s3://bucket/key; the look-ahead keeps the match linear on a long token.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?=[^\s/])\S+")
_WHOLE_TOKEN_KINDS = ("file_path", "url")
_QUOTES = "\"'“”‘’"
_WRAPPERS = "`" + _QUOTES + "()[]{}<>"
_OPENERS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSERS = {closer: opener for opener, closer in _OPENERS.items()}


def _bare(word: str) -> str:
    """A word without the quotes, brackets and sentence punctuation around it."""
    return word.strip(_WRAPPERS).rstrip(".,;:?!").strip(_WRAPPERS)


def _bare_path(word: str) -> str:
    """A path or URL without the quotes and sentence punctuation around it, without brackets that enclose it
    whole (``<https://example.com>``) and without an end bracket that has no partner in it (``/etc/hosts)``
    copied from "(see /etc/hosts)"); a bracket pair inside stays (``/users/{id}``, ``/wiki/Foo_(bar)``)."""
    word = word.strip(_QUOTES + "`").rstrip(".,;:?!").strip(_QUOTES + "`")
    while len(word) > 1:
        if _encloses(word):
            word = word[1:-1]
        elif word[-1] in _CLOSERS and word.count(word[-1]) > word.count(_CLOSERS[word[-1]]):
            word = word[:-1].rstrip(".,;:?!")
        elif word[0] in _OPENERS and word.count(word[0]) > word.count(_OPENERS[word[0]]):
            word = word[1:]
        else:
            break
    return word


def _encloses(word: str) -> bool:
    """Whether the word's first character opens a bracket that its last character closes."""
    opener, closer = word[0], _OPENERS.get(word[0])
    if closer is None or word[-1] != closer:
        return False
    depth = 0
    for position, character in enumerate(word):
        depth += (character == opener) - (character == closer)
        if depth == 0:
            return position == len(word) - 1
    return False


def _lone_identifier(token: str) -> bool:
    """Whether a query that is this one token is an identifier: a flag; three or more pieces, or two with a
    digit (``e-mail`` and ``built-in`` are words); an acronym then a word (not a plural: ``APIs``); letters
    then digits."""
    if token.startswith("-"):
        return bool(_LONE_FLAG.fullmatch(token))
    if _PIECES.fullmatch(token):
        return len(re.split(r"[-_.]", token)) >= 3 or any(c.isdigit() for c in token)
    return bool(_ACRONYM_WORD.fullmatch(token) or _LETTERS_DIGITS.fullmatch(token))


def classify(query: str, typed: str | None = None) -> QueryShape:
    """Identifier-shaped when the query holds a token of an identifier form (plain words never are), or is a
    single token of a looser one (``_lone_identifier``). ``typed``: the query with the characters between its
    tokens as typed (``ParsedQuery.typed_text``), for the pasted phrase; by default the query itself."""
    pairs = [(t, k) for t, k in identifiers(query.strip().strip('"'))]
    for token in query.split():
        bare = token.strip("`'\",;")
        if bare and _CODE_SPAN.fullmatch(token.strip(",;")):
            pairs.append((bare, "code_span"))
    lone, path = _bare(query.strip()), _bare_path(query.strip())
    one_token = " " not in query.strip()
    if one_token and _URL.fullmatch(path):
        lone = path
        pairs.append((lone, "url"))
    elif one_token and _FILE_PATH.fullmatch(path):
        lone = path
        pairs.append((lone, "file_path"))
    elif not pairs and one_token and _lone_identifier(lone):
        pairs.append((lone, "lone_token"))
    phrase = pasted_phrase(query if typed is None else typed)
    if not pairs:
        return QueryShape("text", phrase=phrase)
    named = [(_name(t, k), k) for t, k in pairs]
    found = list(dict.fromkeys(t for t, _ in named))
    # A part of a longer identifier (AddRetry in ResiliencePipeline.AddRetry) is the suffix tier's job.
    tokens = [t for t in found if not any(t != other and t in other for other in found)]
    kinds = sorted({k for t, k in named if t in tokens})
    whole = {t for t, k in named if k in _WHOLE_TOKEN_KINDS}
    # A variable's sigil is pasted with it ($request_id) but is not part of the name.
    pasted = all(_bare(word) in found or _bare(word).lstrip("$") in found or _bare_path(word) in whole
                 for word in query.split() if _bare(word))
    return QueryShape("identifier", kinds, tokens, pasted, _literal(lone, found) if pasted else "", phrase)


def held_nowhere(literal: str, filtered: bool = False) -> str:
    """What an answer says when no candidate holds a pasted identifier as written (a typo, or a name the notes
    never use): its hits are guesses by its pieces and meaning. ``filtered``: the search's filters may have left
    out the sections that hold it."""
    sections = "section the filters let through" if filtered else "section"
    return f"no {sections} holds `{literal}` as written: these hits only share its words or meaning"


def _name(token: str, kind: str) -> str:
    """The identifier a token names: a call without its parentheses (``reclaim_batch()``); a path or URL as it
    is (``/wiki/Foo_(bar)``)."""
    return token if kind in _WHOLE_TOKEN_KINDS else token.rstrip("()")


def _literal(lone: str, found: list[str]) -> str:
    """What a page must hold for a pasted query of one token: the token as written, without the sigil of a
    variable ($request_id) unless the sigil is part of the name ($scope.$apply). Several tokens, or one too
    short to look for in text: none."""
    literal = lone if lone in found else lone.lstrip("$")
    return "" if " " in lone or len(literal) < MIN_LITERAL else literal


_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def pasted_phrase(typed: str) -> str:
    """The query as a page would hold it if it was pasted from one: case-folded, without Markdown's backticks
    and asterisks, runs of white space as one space, outer quotes and closing punctuation dropped; a final
    ``*`` (the query language's prefix) kept. "" for fewer than ``PHRASE_MIN_WORDS`` words (tokens with a
    letter or digit) or ``PHRASE_MIN_CONTENT_WORDS`` that are not stopwords: short word runs ("watch bookmark
    events") name a subject that many pages mention in passing, and questions share template text."""
    text = typed.casefold().strip()
    prefix = text.endswith("*") and not text.endswith("**")
    phrase = _one_line(text).strip(_QUOTES + " ").rstrip(_QUOTES + " .,:;!?")
    words = [word for word in phrase.split(" ") if any(c.isalnum() for c in word)]
    content = [word for word in words if not set(fts_tokens(word)) <= STOPWORDS]
    if len(words) < PHRASE_MIN_WORDS or len(content) < PHRASE_MIN_CONTENT_WORDS:
        return ""
    return phrase + "*" if prefix else phrase


def _one_line(text: str) -> str:
    return " ".join(_no_markup(text).split())


# Match tiers, best first: exact, case-folded, suffix (either way round), hex prefix; last, the text of a
# lexical candidate holding the identifier where no symbol was collected (bold, a shell line, a table cell):
# below any symbol-table match of the same identifier.
_TIER_SCORE = {0: 8.0, 1: 4.0, 2: 2.0, 3: 3.0}
LITERAL_SCORE = 1.0


def search(conn: apsw.Connection, ws_id: int, tokens: list[str], filters: Filters | None = None,
           limit: int = CANDIDATES, lexical: list[int] | None = None,
           folded: dict[int, tuple[str, str]] | None = None) -> list[int]:
    """Chunks whose symbols match the query's identifiers, then the ``lexical`` candidates whose text holds
    one literally (case-folded); best first, ties in the lexical order. ``folded``: the search's texts read
    so far (see ``holding``)."""
    filters = filters or Filters()
    scores: dict[int, float] = {}
    texts = _folded_texts(conn, lexical or [], folded)
    for token in tokens:
        best: dict[int, float] = {}
        for tier, match, args in _lookups(token):
            for chunk_id, weight in stored.weights(conn, ws_id, match, args, filters):
                best[chunk_id] = max(best.get(chunk_id, 0.0), _TIER_SCORE[tier] * weight)
        for chunk_id in _holding(token, texts):
            best.setdefault(chunk_id, LITERAL_SCORE)
        for chunk_id, score in best.items():
            scores[chunk_id] = scores.get(chunk_id, 0.0) + score
    order = {chunk_id: rank for rank, chunk_id in enumerate(lexical or [])}
    return sorted(scores, key=lambda c: (-scores[c], order.get(c, len(order)), c))[:limit]


def _folded_texts(conn: apsw.Connection, chunk_ids: list[int],
                  folded: dict[int, tuple[str, str]] | None = None) -> dict[int, tuple[str, str]]:
    """Each chunk's heading and text, case-folded in Python (SQLite's lower() folds ASCII only); read once
    for all of a query's identifiers. Chunks already in ``folded`` are not read again; those read are added."""
    folded = {} if folded is None else folded
    missing = [chunk_id for chunk_id in chunk_ids if chunk_id not in folded]
    if missing:
        rows = chunks.texts(conn, missing)
        folded.update({chunk_id: (breadcrumb.casefold(), body.casefold()) for chunk_id, breadcrumb, body in rows})
    return {chunk_id: folded[chunk_id] for chunk_id in chunk_ids if chunk_id in folded}


def holding(conn: apsw.Connection, literal: str, chunk_ids: list[int],
            folded: dict[int, tuple[str, str]] | None = None) -> set[int]:
    """The chunks among ``chunk_ids`` whose heading or text holds ``literal`` (case-folded, not inside a
    longer word): for a pasted identifier, the pages that really carry it. ``folded`` as for ``search``: the
    symbol retriever has already read the lexical candidates' texts."""
    return set(_holding(literal, _folded_texts(conn, chunk_ids, folded)))


def holding_phrase(conn: apsw.Connection, phrase: str, chunk_ids: list[int],
                   folded: dict[int, tuple[str, str]] | None = None) -> set[int]:
    """The chunks among ``chunk_ids`` whose heading or text holds ``phrase`` (see ``pasted_phrase``; its first
    ``PHRASE_MAX_WORDS`` words) word for word: across line breaks and inline markup (backticks, asterisks),
    not across a blank line, not inside longer words (a final ``*``: the last word may go on)."""
    words = tuple(phrase.rstrip("*").split(" ")[:PHRASE_MAX_WORDS])
    if not chunk_ids or not any(words):
        return set()
    prefix = phrase.endswith("*") and len(words) == len(phrase.split(" "))
    # Every word of a held line is in the text as it is: a cheap test that spares most texts the pattern.
    maybe = [(chunk_id, text) for chunk_id, texts in _folded_texts(conn, chunk_ids, folded).items()
             for text in map(_no_markup, texts) if all(word in text for word in words)]
    return {chunk_id for chunk_id, text in maybe if _holds(words, prefix, text)}


def _no_markup(text: str) -> str:
    """Without backticks and asterisks, typographic quotes as straight ones: a line copied from a rendered page
    (can’t) matches the Markdown that wrote it (can't), and the other way round."""
    return (text.replace("`", "").replace("*", "").replace("’", "'").replace("‘", "'")  # far faster than translate
            .replace("“", '"').replace("”", '"'))


@lru_cache(maxsize=64)
def _phrase_pattern(words: tuple[str, ...], prefix: bool) -> re.Pattern[str]:
    # No look-behind in front: a pattern that opens with a plain word is searched for far faster; _holds
    # checks the word edge before it.
    end = "" if prefix or not _is_word(words[-1][-1]) else r"(?!\w)"
    return re.compile(r"\s+".join(map(re.escape, words)) + end)


def _holds(words: tuple[str, ...], prefix: bool, text: str) -> bool:
    pattern = _phrase_pattern(words, prefix)
    starts_a_word = _is_word(words[0][0])
    position = 0
    while (match := pattern.search(text, position)) is not None:
        start = match.start()
        edge = not starts_a_word or start == 0 or not _is_word(text[start - 1])
        if edge and not _BLANK_LINE.search(match.group()):
            return True
        position = start + 1
    return False


def _holding(token: str, texts: dict[int, tuple[str, str]]) -> list[int]:
    """The chunks of ``texts`` (the lexical retriever's, already filtered) whose heading or text holds the
    token, case-folded and not inside a longer word (x509 is not in x5090)."""
    if not texts or len(token) < MIN_LITERAL:
        return []
    word = (token.casefold(),)  # a phrase of one word: the same edges
    # A plain substring test first: most candidates lack the token, and it is far cheaper than the pattern.
    return [chunk_id for chunk_id, (heading, body) in texts.items()
            if (word[0] in heading and _holds(word, False, heading)) or (word[0] in body and _holds(word, False, body))]


def _is_word(character: str) -> bool:
    return character.isalnum() or character == "_"


def _lookups(token: str) -> list[tuple[int, Match, tuple]]:
    folded = token.casefold()
    lookups = [(0, Match.EXACT, (token,)), (1, Match.OTHER_CASE, (folded, token)), (2, Match.SUFFIX, (folded,))]
    keys = lookup_keys(token)
    for key, is_suffix in keys[1:]:
        if is_suffix and len(key) >= 3:
            lookups.append((2, Match.WHOLE_FOLDED, (key.casefold(),)))
            break
    bare = folded.lstrip("-")
    if "-" in folded and re.fullmatch(r"[a-z][\w-]*", bare):  # a flag's other spellings: --name, -name, name
        others = [form for form in (bare if "-" in bare else None, "-" + bare, "--" + bare) if form and form != folded]
        lookups.append((2, Match.ANY_OF, tuple(others)))
    if re.fullmatch(r"[0-9a-fA-F]{7,40}", token) and is_hex_hash(folded):
        lookups.append((3, Match.HEX_PREFIX, (folded, token)))
    return lookups
