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
points in French and Dutch (the README's table has them all).

Paragraphs are separated by blank lines; the lines inside a paragraph are joined with a space, so
text wrapped at 72 columns reads as the sentences it holds. Imports only Python, spaCy and NLTK
(no Django): `learning.core.tag` may use it outside the server.
"""

from __future__ import annotations

import functools
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

_lock = threading.Lock()  # spaCy's tokenizer caches as it goes: one thread at a time


@dataclass(frozen=True, slots=True)
class TextSentence:
    tokens: list[str]
    line_number: int  # 1-based line of the text where the sentence starts
    text: str  # the sentence as written (the lines of a paragraph joined by one space)


@functools.cache
def _tokenizer(language: str):
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}: expected one of {', '.join(LANGUAGES)}")
    import spacy  # lazily: seconds to import, and only text needs it

    return spacy.blank(language).tokenizer


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
    whole, never cut): spaCy cuts `!!!` into three and a licence's `=====...` rule into 70."""
    tokenizer = _tokenizer(language)
    tokens: list[str] = []
    glued = False  # the previous token had no space after it
    with _lock:
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
    _tokenizer(language)  # an unknown language fails before any text is read
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
    for start, end in _splitter().span_tokenize(text):
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
