"""Streaming reader for CoNLL-U files (Universal Dependencies).

A CoNLL-U file is a sequence of sentences separated by blank lines. Each token line has ten
tab-separated columns ``ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC``; lines starting with
``#`` are comments (``# sent_id = ...`` and ``# text = ...`` are read). Multiword-token ranges
(``ID`` like ``1-2``) and empty nodes (``ID`` like ``1.1``) carry no tag: the tokens that carry the
part-of-speech tags are the plain integer ids, which must run ``1, 2, 3, ...`` in each sentence.
Every sentence also keeps its lines as read (``ConlluSentence.lines``: comments, multiword-token
lines, empty nodes, all ten columns), and `conllu_sentence` writes them back with only the tag
column changed, so a corpus tagged by a model diffs against its source line by line.

Both the crowd simulation and the platform's corpus import read corpora through this module, so it
never loads a whole file into memory and reports malformed input with the line number; the
platform's CoNLL-U exports are written by `conllu_sentence`.
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ConlluError",
    "ConlluSentence",
    "comment_value",
    "conllu_head",
    "conllu_sentence",
    "is_word_id",
    "iter_conllu",
    "read_conllu",
]

_N_COLUMNS = 10


class ConlluError(ValueError):
    """Malformed CoNLL-U input. ``line_number`` is 1-based; ``str(error)`` starts with it."""

    def __init__(self, line_number: int, message: str) -> None:
        self.line_number = line_number
        self.message = message
        super().__init__(f"line {line_number}: {message}")


@dataclass
class ConlluSentence:
    """One sentence: parallel lists of word forms and their universal and language-specific tags."""

    tokens: list[str] = field(default_factory=list)
    upos: list[str] = field(default_factory=list)
    xpos: list[str] = field(default_factory=list)
    sent_id: str | None = None
    text: str | None = None
    line_number: int = 0  # line of the sentence's first token, for error messages downstream
    lines: list[str] = field(default_factory=list)  # as read, without line ends
    # The last multiword token's range (its line, its last word id): later words must reach it.
    _open_range: tuple[int, int] = field(default=(0, 0), repr=False)

    def tags(self, tagset: str) -> list[str]:
        """The tag column named ``"upos"`` or ``"xpos"``."""
        if tagset == "upos":
            return self.upos
        if tagset == "xpos":
            return self.xpos
        raise ValueError(f"unknown tag column {tagset!r}: expected 'upos' or 'xpos'")


def iter_conllu(lines: Iterable[str]) -> Iterator[ConlluSentence]:
    """Yield the sentences of CoNLL-U text given line by line (a text file object works).

    Raises :class:`ConlluError` at the first malformed line, e.g.
    ``line 17: expected 10 tab-separated columns, found 7``.
    """
    sentence = ConlluSentence()
    line_number = 0
    for line_number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if line_number == 1:
            line = line.removeprefix("\ufeff")
        if not line.strip():
            if sentence.tokens:
                _check_ranges_closed(sentence)
                yield sentence
            elif sentence.sent_id is not None or sentence.text is not None:
                raise ConlluError(line_number, "sentence has comments but no tokens")
            sentence = ConlluSentence()
            continue
        sentence.lines.append(line)
        if line.startswith("#"):
            _read_comment(line, sentence)
            continue
        _read_token(line, line_number, sentence)
    if sentence.tokens:
        _check_ranges_closed(sentence)
        yield sentence
    elif sentence.sent_id is not None or sentence.text is not None:
        raise ConlluError(line_number, "sentence has comments but no tokens")


_TAG_COLUMNS = {"upos": 3, "xpos": 4}


def conllu_sentence(
    tokens: Sequence[str],
    tags: Sequence[str],
    *,
    comments: Sequence[tuple[str, object]] = (),
    misc: Sequence[str] | None = None,
    source: Sequence[str] | None = None,
    column: str = "upos",
) -> str:
    """One sentence as CoNLL-U text, with the blank line that ends it.

    Without ``source``: ``comments`` become ``# key = value`` lines; each token gets a line with
    its ``ID``, ``FORM``, ``UPOS`` (``tags[i]``, ``_`` for none) and ``MISC`` (``misc[i]``), the
    other columns ``_``.

    With ``source`` (a sentence's lines as read, `ConlluSentence.lines`): those lines, unchanged
    but for the tag ``column`` (``"upos"`` or ``"xpos"``) of the i-th word line, which becomes
    ``tags[i]``, and its MISC, to which ``misc[i]`` is added (``|``-joined) when given. Comments,
    multiword-token lines, empty nodes and the other columns are written as they were read;
    ``comments`` and ``tokens`` are not used (the source has its own).
    """
    if source is None:
        lines = [f"# {key} = {comment_value(value)}" for key, value in comments]
        for i, token in enumerate(tokens):
            extra = misc[i] if misc is not None else "_"
            lines.append(f"{i + 1}\t{token}\t_\t{tags[i]}\t_\t_\t_\t_\t_\t{extra}")
        return "\n".join(lines) + "\n\n"
    index = _TAG_COLUMNS[column]
    words = [not line.startswith("#") and is_word_id(line.partition("\t")[0]) for line in source]
    if sum(words) != len(tags):
        raise ValueError(f"{len(tags)} tags for a source sentence of {sum(words)} words")
    out, word = [], 0
    for line, is_word in zip(source, words, strict=True):
        if not is_word:
            out.append(line)
            continue
        columns = line.split("\t")
        columns[index] = tags[word]
        if misc is not None:
            columns[9] = misc[word] if columns[9] == "_" else f"{columns[9]}|{misc[word]}"
        out.append("\t".join(columns))
        word += 1
    return "\n".join(out) + "\n\n"


@contextmanager
def _open_text(path: str | Path) -> Iterator[io.TextIOWrapper]:
    """A CoNLL-U file as UTF-8 text, plain or gzip-compressed (detected by content)."""
    with Path(path).open("rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        binary = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw
        yield io.TextIOWrapper(binary, encoding="utf-8", newline="")


def conllu_head(path: str | Path, n_sentences: int) -> str:
    """The first ``n_sentences`` sentences of a CoNLL-U file, verbatim (comments included), each
    ending in its blank line: a slice of a treebank that is itself a valid CoNLL-U file."""
    kept: list[str] = []
    n_kept = 0
    with _open_text(path) as text:
        for line in text:
            kept.append(line)
            if not line.strip():
                n_kept += 1
                if n_kept == n_sentences:
                    break
    return "".join(kept)


def read_conllu(path: str | Path) -> Iterator[ConlluSentence]:
    """Stream the sentences of a CoNLL-U file, plain or gzip-compressed (detected by content).

    The file is opened when iteration starts and closed when it ends. Missing files raise
    ``FileNotFoundError``; undecodable bytes raise :class:`ConlluError` (UTF-8 is required).
    """
    with _open_text(path) as text:
        counted = _CountingLines(text)
        try:
            yield from iter_conllu(counted)
        except UnicodeDecodeError as exc:
            raise ConlluError(counted.line_number + 1, "not valid UTF-8 text") from exc
        except (OSError, EOFError) as exc:  # truncated or corrupt gzip stream
            raise ConlluError(counted.line_number + 1, f"cannot read file: {exc}") from exc


class _CountingLines:
    """Iterate a text stream's lines, remembering how many were read (for decode errors)."""

    def __init__(self, stream: io.TextIOBase) -> None:
        self._stream = stream
        self.line_number = 0

    def __iter__(self) -> Iterator[str]:
        for line in self._stream:
            self.line_number += 1
            yield line


def _read_comment(line: str, sentence: ConlluSentence) -> None:
    key, sep, value = line[1:].partition("=")
    if not sep:
        return
    key = key.strip()
    if key == "sent_id":
        sentence.sent_id = value.strip()
    elif key == "text":
        sentence.text = value.strip()


# The longest id read: a sentence of a billion words is beyond any corpus, and Python refuses to
# convert integers of more than 4,300 digits.
_MAX_ID_DIGITS = 9
# What a comment's value may not hold: characters that some line reader takes for the end of a
# line (Python's str.splitlines: CR, VT, FF, the file/group/record separators, NEL, U+2028 and
# U+2029) and the other control characters. Tab is kept.
_NOT_IN_COMMENTS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def is_word_id(token_id: str) -> bool:
    """Whether a line's ID column is a word's (a plain integer, in ASCII digits: ``str.isdigit``
    alone also takes ``²`` and other digits ``int`` cannot read)."""
    return token_id.isascii() and token_id.isdigit()


def comment_value(value: object) -> str:
    """``value`` as one line of a ``# key = value`` comment: anything that could end the line
    early, or is not text, becomes a space, so the sentence reads back as written."""
    return _NOT_IN_COMMENTS.sub(" ", str(value))


def _id_number(text: str, token_id: str, line_number: int) -> int:
    if not is_word_id(text) or len(text) > _MAX_ID_DIGITS:
        raise ConlluError(line_number, f"malformed token id {token_id[:40]!r}")
    return int(text)


def _read_token(line: str, line_number: int, sentence: ConlluSentence) -> None:
    columns = line.split("\t")
    if len(columns) != _N_COLUMNS:
        raise ConlluError(
            line_number,
            f"expected {_N_COLUMNS} tab-separated columns, found {len(columns)}",
        )
    token_id, form, _lemma, upos, xpos = columns[:5]
    if "-" in token_id or "." in token_id:
        _check_special_id(token_id, line_number, sentence)
        return
    if not is_word_id(token_id):
        raise ConlluError(
            line_number, f"token id must be a positive integer, found {token_id[:40]!r}"
        )
    expected = len(sentence.tokens) + 1
    if _id_number(token_id, token_id, line_number) != expected:
        raise ConlluError(line_number, f"expected token id {expected}, found {token_id[:40]}")
    if not form:
        raise ConlluError(line_number, "empty FORM column")
    if not upos:
        raise ConlluError(line_number, "empty UPOS column")
    if not sentence.tokens:
        sentence.line_number = line_number
    sentence.tokens.append(form)
    sentence.upos.append(upos)
    sentence.xpos.append(xpos)


def _check_special_id(token_id: str, line_number: int, sentence: ConlluSentence) -> None:
    """A multiword token ``a-b`` names the next words ``a`` to ``b`` (``a < b``, after the last
    range); an empty node ``i.j`` comes after word ``i`` (``0`` before the first word)."""
    separator = "-" if "-" in token_id else "."
    parts = token_id.split(separator)
    if len(parts) != 2:
        raise ConlluError(line_number, f"malformed token id {token_id[:40]!r}")
    first, second = (_id_number(part, token_id, line_number) for part in parts)
    words = len(sentence.tokens)
    if separator == ".":
        if first != words or second < 1:
            raise ConlluError(
                line_number, f"empty node {token_id} must follow word {first}, found after {words}"
            )
        return
    if first != words + 1 or second <= first:
        raise ConlluError(
            line_number,
            f"multiword token {token_id} must span the next words, from {words + 1} on "
            "(start below end)",
        )
    if first <= sentence._open_range[1]:
        raise ConlluError(line_number, f"multiword token {token_id} overlaps the one before")
    sentence._open_range = (line_number, second)


def _check_ranges_closed(sentence: ConlluSentence) -> None:
    range_line, range_end = sentence._open_range
    if range_end > len(sentence.tokens):
        raise ConlluError(
            range_line,
            f"multiword token ends at word {range_end}, but the sentence has "
            f"{len(sentence.tokens)} words",
        )
