"""Chinese, Japanese and Korean text for the word index: overlapping bigrams of each CJK run.

FTS5's ``unicode61`` keeps a run of CJK characters (a whole clause: these scripts put no spaces
between words) as one token, so a word inside it never matched. The text FTS5 is given is
rewritten instead (the table and its tokenizer stay as they are): each run of Han, Hiragana,
Katakana and Hangul letters becomes its overlapping bigrams and then its last character, the way
Lucene's CJKAnalyzer and Elasticsearch's ``cjk_bigram`` index it, with the unigram added so that
every character starts a token. ``数据库`` is indexed as ``数据 据库 库``; a query's ``据库`` is the
token ``据库``, its ``数据库`` the phrase ``"数据 据库"`` (so any substring of two or more characters
of a run matches, as the phrase of its bigrams), and a single character ``库`` is the prefix
``"库" *`` (every position starts a token). Full-width forms (ＡＢＣ, １２３) and half-width
katakana are folded to their usual twins, in the index and in queries alike.

Text with none of these characters is given to FTS5 unchanged: Latin-script tokenizing is the same
as before. The cost, measured in doc/benchmarks/cjk.md: a run of n characters is n tokens.
"""

from __future__ import annotations

import re
import unicodedata

# Letters only (so 、。「」・゛ stay separators): Hangul jamo, 々〆〇, kana with their combining voiced
# marks (composed below), the prolonged-sound mark ー, Katakana and Hangul compatibility letters, Han
# (with the extension planes), Hangul syllables.
_CJK_LETTER = (
    "\u1100-\u11ff\u3005-\u3007\u3041-\u3096\u3099\u309a\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff"
    "\u3131-\u318e\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff"
    "\uf900-\ufaff\U00020000-\U0003134f"
)
_RUN = re.compile(f"[{_CJK_LETTER}]+")
_WIDE = re.compile("[\uff01-\uffef]+")  # the Halfwidth and Fullwidth Forms block (not U+FF00)
_ANY = re.compile(f"[{_CJK_LETTER}\uff01-\uffef]")
# More than this share of a query's letters and digits in CJK runs makes it a CJK query (see ``mostly_cjk``).
MOSTLY = 0.5
# A CJK run this long in a query is likely several words (a clause typed without spaces): when the whole of
# it matches too few sections, its bigrams are searched as separate words, like a question's words.
LOOSE_RUN = 3


def has_cjk(text: str) -> bool:
    """Whether the text holds a CJK letter or a full- or half-width form (else it is indexed as it is)."""
    return _ANY.search(text) is not None


def fold_width(text: str) -> str:
    """ＡＢＣ１２３ -> ABC123, ｶﾞ -> ガ: NFKC over the Halfwidth and Fullwidth Forms block only (NFKC over
    all of it would change Latin text too: ﬁ, ², ½)."""
    return _WIDE.sub(lambda wide: unicodedata.normalize("NFKC", wide.group(0)), text)


def _run_tokens(run: str) -> list[str]:
    if "\u3099" in run or "\u309a" in run:  # a decomposed voiced kana: one letter, as its composed form
        run = unicodedata.normalize("NFC", run)
    return [run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]]


def _indexed_run(match: re.Match[str]) -> str:
    run = match.group(0)
    if "\u3099" in run or "\u309a" in run:
        run = unicodedata.normalize("NFC", run)
    return f" {' '.join(map(str.__add__, run, run[1:]))} {run[-1]} "  # the bigrams, then the last character


def index_text(text: str) -> str:
    """The text FTS5 indexes: CJK runs as bigrams and their last character, full-width forms folded."""
    if not has_cjk(text):
        return text
    return _RUN.sub(_indexed_run, fold_width(text))


def query_text(text: str) -> tuple[str, bool]:
    """A query word or phrase as the index has it, and whether it ends in a lone CJK character (then
    matched as a prefix). A run that ends the text loses its last character: the run in a document may
    go on (``数据`` is in ``数据库``). One that does not end it keeps it: the document's run must end there too,
    as in the index."""
    text = fold_width(text)
    runs = list(_RUN.finditer(text))
    if not runs:
        return text, False
    last = runs[-1]
    ends_text = not any(char.isalnum() for char in text[last.end():])
    pieces, start = [], 0
    for run in runs:
        tokens = _run_tokens(run.group(0))
        if run is last and ends_text and len(tokens) > 1:
            tokens = tokens[:-1]
        pieces += [text[start : run.start()], " ", " ".join(tokens), " "]
        start = run.end()
    pieces.append(text[start:])
    return "".join(pieces), ends_text and len(_run_tokens(last.group(0))) == 1


def split_runs(text: str) -> list[tuple[str, bool]]:
    """The text in pieces, each a CJK run (True) or what stands between runs (False)."""
    pieces, start = [], 0
    for run in _RUN.finditer(text):
        pieces += [(text[start : run.start()], False), (run.group(0), True)]
        start = run.end()
    return [(piece, is_run) for piece, is_run in [*pieces, (text[start:], False)] if piece]


def bigrams(run: str) -> list[str]:
    """The words a long CJK run is loosened into: its bigrams (a lone character is its own)."""
    tokens = _run_tokens(run)
    return tokens[:-1] or tokens


def longest_run(text: str) -> int:
    return max((len(run) for run in _RUN.findall(text)), default=0)


def mostly_cjk(text: str) -> bool:
    """More than half of the text's letters and digits are CJK letters."""
    letters = sum(1 for char in text if char.isalnum())
    in_runs = sum(len(run) for run in _RUN.findall(text))
    return letters > 0 and in_runs > MOSTLY * letters
