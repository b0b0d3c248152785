"""Running text into sentences of tokens, per language: the one tokenizer of Tally.

Corpus import (plain text), predictions (`POST predict/`, "try the model") and the upload form's
preview all go through `text_sentences`, so a word is cut the same way when it is annotated and
when it is tagged.

- Sentences: NLTK's Punkt (Kiss and Strunk 2006) with its language-independent rules, no trained
  parameters to download. It keeps closing quotes and brackets with their sentence.
- Tokens: spaCy's rule-based tokenizer of the language (`spacy.blank(language)`: prefix, suffix
  and infix rules plus the language's exceptions, `don't` -> `do` `n't`, `l'UE` -> `l'` `UE`),
  no statistical model.

Chosen by `devtools/tokenizer_eval.py` on UD test sets (token F1 / sentence F1): English EWT
97.5 / 82.2, French Sequoia 98.7 / 71.6, Dutch Alpino 99.8 / 91.1; the best tokens of the six
candidates tried in every language, and Punkt's sentences beat spaCy's own sentencizer by 7-10
points in French and Dutch (docs/decisions/022-plain-text-tokenizer.md has them all).

Paragraphs are separated by blank lines; the lines inside a paragraph are joined with a space, so
text wrapped at 72 columns reads as the sentences it holds. Imports only Python, spaCy and NLTK
(no Django): `learning.core.tag` may use it outside the server.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

# Languages a project may choose: spaCy's rule sets for these are tried on UD data (en, fr, nl)
# or are the same kind of rules; `xx` is spaCy's language-neutral set, for any other language.
LANGUAGES = {
    "en": "English",
    "fr": "French",
    "nl": "Dutch",
    "de": "German",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "xx": "Other (language-neutral rules)",
}
DEFAULT_LANGUAGE = "en"
# A paragraph longer than this is cut at a line end, so memory stays bounded on a file without
# blank lines (a sentence that spans the cut is split there).
MAX_PARAGRAPH_CHARS = 100_000

# spaCy's tokenizer caches as it goes, so one is used by one thread at a time: a thread borrows
# one from its language's pool (or makes one, 0.2 s, when all are out) and gives it back. A
# process-wide lock made every request wait for the slowest text being cut.
_pools: dict[str, queue.SimpleQueue] = {}
_pools_lock = threading.Lock()  # held only to find or add a pool
# spaCy's prefix and suffix loops are quadratic in a run of symbols (2,000 / 4,000 / 8,000 `!`
# took 1.3 / 5.9 / 25.2 s): a run longer than this is cut here, into runs of one character,
# which is what spaCy and the gluing in `tokenize` make of it. Shorter runs stay spaCy's, so its
# emoticons and `--` keep their rules.
_LONG_SYMBOL_RUN = re.compile(r"([^\w\s]{17,})")
_SAME_CHARACTER = re.compile(r"(.)\1*", re.DOTALL)
_WORD_CHARACTER = re.compile(r"[^\W_]")  # a letter or a digit


class TextTooSlow(ValueError):
    """NLTK gave up on a paragraph: its regular expressions run under a time limit (5 s), which
    a busy server can reach. `line_number` is the paragraph's first line."""

    def __init__(self, line_number: int) -> None:
        self.line_number = line_number
        self.message = "this text took too long to cut into sentences; try a shorter one"
        super().__init__(f"line {line_number}: {self.message}")


@dataclass(frozen=True, slots=True)
class TextSentence:
    tokens: list[str]
    line_number: int  # 1-based line of the text where the sentence starts
    text: str  # the sentence as written (the lines of a paragraph joined by one space)


def _check_language(language: str) -> None:
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}: expected one of {', '.join(LANGUAGES)}")


@contextlib.contextmanager
def _tokenizer(language: str) -> Iterator:
    """A spaCy tokenizer of `language` for this thread's use until the block ends."""
    with _pools_lock:
        pool = _pools.get(language)
        if pool is None:
            _check_language(language)
            pool = _pools[language] = queue.SimpleQueue()
    try:
        tokenizer = pool.get_nowait()
    except queue.Empty:
        import spacy  # lazily: seconds to import, and only text needs it

        tokenizer = spacy.blank(language).tokenizer
    try:
        yield tokenizer
    finally:
        pool.put(tokenizer)


@functools.cache
def _splitter():
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer()


def as_sentence(message: str) -> str:
    """`message` ending in a full stop (or ? or !), so that another sentence can follow it."""
    message = message.rstrip()
    return message if message.endswith((".", "!", "?")) else message + "."


def tokenize(text: str, *, language: str) -> list[str]:
    """The tokens of `text` (one sentence or a piece of one), white space dropped.

    A run of one punctuation character is one token, as in UD (EWT has `!!!`, `====`, `****`
    whole, never cut): spaCy cuts `!!!` into three and a licence's `=====...` rule into 70.
    Time is linear in the length of `text` (long symbol runs are cut before spaCy sees them)."""
    tokens: list[str] = []
    for index, piece in enumerate(_LONG_SYMBOL_RUN.split(text)):
        if index % 2:  # a long run of symbols: a word or a space is on each side of it
            tokens.extend(match.group() for match in _SAME_CHARACTER.finditer(piece))
        elif piece:
            tokens.extend(_spacy_tokens(piece, language))
    return tokens


def _spacy_tokens(text: str, language: str) -> list[str]:
    tokens: list[str] = []
    glued = False  # the previous token had no space after it
    with _tokenizer(language) as tokenizer:  # its strings are read before it goes back
        for token in tokenizer(text):
            if token.is_space:
                glued = False
                continue
            word = token.text
            if glued and _one_symbol(tokens[-1]) and _one_symbol(word) and word[0] == tokens[-1][0]:
                tokens[-1] += word
            else:
                tokens.append(word)
            glued = not token.whitespace_
    return tokens


def _one_symbol(word: str) -> bool:
    """`word` is one punctuation or symbol character, maybe repeated."""
    return not word[0].isalnum() and word.count(word[0]) == len(word)


def text_sentences(
    lines: Iterable[str], *, language: str, max_tokens: int | None = None
) -> Iterator[TextSentence]:
    """The sentences of running text given line by line, tokenized; a sentence longer than
    `max_tokens` comes out in pieces of at most that many tokens."""
    _check_language(language)  # an unknown language fails before any text is read
    paragraph: list[str] = []
    starts: list[int] = []  # character offset in the paragraph of each of its lines
    first_line = size = 0
    for line_number, raw in enumerate(lines, start=1):
        line = raw.removeprefix("\ufeff") if line_number == 1 else raw
        line = line.strip()
        if line:
            if not paragraph:
                first_line = line_number
            starts.append(size)
            paragraph.append(line)
            size += len(line) + 1
        if paragraph and (not line or size > MAX_PARAGRAPH_CHARS):
            yield from _paragraph(paragraph, starts, first_line, language, max_tokens)
            paragraph, starts, size = [], [], 0
    if paragraph:
        yield from _paragraph(paragraph, starts, first_line, language, max_tokens)


def _paragraph(
    lines: list[str], starts: list[int], first_line: int, language: str, max_tokens: int | None
) -> Iterator[TextSentence]:
    text = " ".join(lines)
    line_index = 0
    for start, end in sentence_spans(text, first_line):
        while line_index + 1 < len(starts) and starts[line_index + 1] <= start:
            line_index += 1
        sentence = text[start:end]
        tokens = tokenize(sentence, language=language)
        if max_tokens is None or len(tokens) <= max_tokens:
            yield TextSentence(tokens, first_line + line_index, sentence)
            continue
        for piece in range(0, len(tokens), max_tokens):
            words = tokens[piece : piece + max_tokens]
            yield TextSentence(words, first_line + line_index, " ".join(words))


def sentence_spans(text: str, first_line: int) -> list[tuple[int, int]]:
    """Punkt's sentences of `text`, where a piece without a letter or a digit belongs to the
    sentence before it: Punkt cuts `We won the cup!!!` at the end of a text into `...cup!!` and
    `!`, and punctuation alone is nothing to annotate. (On EWT's test text this raises sentence
    F1 from 82.2 to 83.7; also joining a piece that goes on in lower case after `!` or `?`
    lowered it to 82.0: web text starts sentences in lower case.)"""
    # Punkt weighs every `.?!` of a run as a possible end; it is the run's last character
    # that ends a sentence, so a long run is shown to it as `____!` (same length, same offsets).
    masked = _LONG_SYMBOL_RUN.sub(lambda run: "_" * (len(run.group()) - 1) + run.group()[-1], text)
    try:
        spans = list(_splitter().span_tokenize(masked))
    except TimeoutError as exc:  # NLTK's guard against slow regular expressions
        raise TextTooSlow(first_line) from exc
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and not _WORD_CHARACTER.search(text, start, end):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged
