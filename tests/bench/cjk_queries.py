"""Pick the CJK benchmark's queries: words from the body text of /work/shared/data/cjk that stand in one to three
files, labelled by exact substring (so the labels are right by construction). Run once; the queries are saved in
``tests/bench/eval/cjk-{dev,heldout}.jsonl`` (never the corpus). No search runs here: the picking knows nothing
of any index.

Real words, not random pairs of characters, by how each script marks its words:
- zh: a run of Han characters cut at punctuation and at one-character function words (的, 了, 是, 在, ...):
  what stands between two of them, two to four characters long, and standing so at least twice in the corpus
  (类型转换, 生命周期; a one-off piece such as 行首需 is most often parts of two words).
- ja: a whole run of Katakana (with ー) of three to eight characters (a loanword: オンコール), or a whole run of
  two to four kanji followed by a particle (の, を, は, が, ...: a compound noun, 算出を, not 表向き's 表向).
- ko: a word (between spaces) that ends in a particle (를, 에서, 으로, ...), less the particle: two to four
  syllables, not ending like a verb form (하, 한, 된, 지, ...), and seen with two particles or alone
  (데이터베이스를, 데이터베이스의 -> 데이터베이스).

    python -m tests.bench.cjk_queries --shared ../shared
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ("zh", "ja", "ko")
PER_LANGUAGE = 40  # queries per language and set
SEEDS = {"dev": 33, "heldout": 34, "heldout2": 35}
MOST_FILES = 3
ID_PREFIX = {"dev": "d", "heldout": "h", "heldout2": "h2"}

_FRONTMATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ZH_FUNCTION = ("的了是在和与或把被对为这那有也就都而及并将从到由个中上不要会能"
                "可以用来说时它我你他们其之所如果因此但还让使给等得地着过一该每各即已")
_ZH_RUN = re.compile(r"[\u4e00-\u9fff]+")
_JA_KATAKANA = re.compile(r"(?<![\u30a1-\u30fa\u30fc])[\u30a1-\u30fa\u30fc]{3,8}(?![\u30a1-\u30fa\u30fc])")
_JA_KANJI = re.compile(r"(?<![\u4e00-\u9fff])[\u4e00-\u9fff]{2,4}(?=[のをはがにでとも])")
_KO_WORD = re.compile(r"(?<![\uac00-\ud7a3])[\uac00-\ud7a3]+(?![\uac00-\ud7a3])")
_KO_VERB_ENDS = set("하한할함했해된될됨되였었았다지고서며면게기음임는")
_KO_PARTICLES = sorted(("을 를 은 는 이 가 의 에 에서 에게 으로 로 와 과 도 만 까지 부터 처럼 보다 이나 라는 이라는 "  # noqa: SIM905
                        "에는 에도 에서는 으로는 로는 와는 과는 에게는").split(), key=len, reverse=True)


def body(text: str) -> str:
    """What a file's sections hold: no frontmatter, no HTML comments (neither is body text)."""
    return _COMMENT.sub(" ", _FRONTMATTER.sub("", text, count=1))


def zh_words(text: str) -> set[str]:
    cut = re.compile(f"[{_ZH_FUNCTION}]")
    seen = Counter(piece for run in _ZH_RUN.findall(text) for piece in cut.split(run) if 2 <= len(piece) <= 4)
    return {piece for piece, times in seen.items() if times >= 2}


def ja_words(text: str) -> set[str]:
    return set(_JA_KATAKANA.findall(text)) | set(_JA_KANJI.findall(text))


def ko_words(text: str) -> set[str]:
    forms: dict[str, set[str]] = {}
    words = _KO_WORD.findall(text)
    for word in words:
        for particle in _KO_PARTICLES:
            stem = word[: -len(particle)]
            if word.endswith(particle) and 2 <= len(stem) <= 4 and stem[-1] not in _KO_VERB_ENDS:
                forms.setdefault(stem, set()).add(particle)
                break
    alone = set(words)
    return {stem for stem, particles in forms.items() if len(particles) >= 2 or stem in alone}


EXTRACT = {"zh": zh_words, "ja": ja_words, "ko": ko_words}


def pick(folder: Path, language: str) -> dict[str, list[dict]]:
    """Each set's queries for one language: candidates in 1-3 files, sampled with the set's fixed seed, the
    sets disjoint."""
    texts = {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.md"))
             if not p.name.startswith("LICENSE")}
    candidates = sorted(EXTRACT[language]("\n".join(body(text) for text in texts.values())))
    labelled = []
    for word in candidates:
        holding = [path for path, text in texts.items() if word in text]  # the whole file: nothing left out
        if 1 <= len(holding) <= MOST_FILES:
            labelled.append((word, holding))
    taken: set[str] = set()
    sets = {}
    for name, seed in SEEDS.items():
        pool = [item for item in labelled if item[0] not in taken]
        chosen = random.Random(seed).sample(pool, PER_LANGUAGE)
        taken.update(word for word, _ in chosen)
        sets[name] = [{"id": f"cjk-{ID_PREFIX[name]}-{language}-{i:03d}", "kind": language, "query": word,
                       "relevant": holding, "section": None} for i, (word, holding) in enumerate(chosen, 1)]
    return sets


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    args = parser.parse_args()
    corpus = Path(args.shared).resolve() / "data" / "cjk"
    by_set: dict[str, list[dict]] = {name: [] for name in SEEDS}
    for language in LANGUAGES:
        for name, queries in pick(corpus / language, language).items():
            by_set[name] += queries
    for name, queries in by_set.items():
        out = ROOT / "tests" / "bench" / "eval" / f"cjk-{name}.jsonl"
        out.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8")
        print(f"{out.relative_to(ROOT)}: {len(queries)} queries")


if __name__ == "__main__":
    main()
