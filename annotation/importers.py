"""Parse uploaded corpora into sentences, streaming, with the line number of the first problem.

Nothing here touches the database: `services.corpus_import` stores what these parsers yield,
inside one transaction, so a file that fails half-way imports nothing. CoNLL-U is read by
`learning.core.conllu` (the one CoNLL-U reader of the code base).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import unicodedata
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from common.text import TextTooSlow, text_sentences
from learning.core.conllu import ConlluError, is_word_id, iter_conllu

MAX_SENTENCE_TOKENS = 500
MAX_TOKEN_CHARS = 500  # real corpora have long URLs (EWT: 140 characters)
# The longest line a valid corpus can have: a JSON line of 500 tokens of 500 characters, each
# written as a `\uXXXX` escape (6 bytes), with 500 tags of 32 such characters is about 1.6 MB.
# Reading stops at this bound, so a line without end (a gzip bomb, a file with no newline) never
# sits whole in memory.
MAX_LINE_BYTES = 2 * 1024 * 1024
# Refused inside tokens: control characters, surrogates, line/paragraph separators, and the
# bidirectional overrides that can make shown text differ from stored text. Other format
# characters (soft hyphens, zero-width joiners in emoji and Indic scripts) are ordinary text.
_REFUSED_CATEGORIES = {"Cc", "Cs", "Zl", "Zp"}
_BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_GZIP_MAGIC = b"\x1f\x8b"


class CorpusError(ValueError):
    """A malformed corpus. `line_number` is 1-based; `str(error)` starts with `line N:`."""

    def __init__(self, line_number: int, message: str) -> None:
        self.line_number = line_number
        self.message = message
        super().__init__(f"line {line_number}: {message}")


class CorpusTooLarge(ValueError):
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        super().__init__(f"the corpus is larger than {max_bytes} bytes")


@dataclass(frozen=True, slots=True)
class ParsedSentence:
    tokens: list[str]
    tags: list[str] | None  # gold tag names aligned with tokens, or None
    line_number: int
    text: str = ""  # the sentence as written, where the format has it
    source: str = ""  # CoNLL-U: the sentence's lines as read


def read_lines(
    binary: BinaryIO, *, max_bytes: int, digest: hashlib._Hash | None = None
) -> Iterator[str]:
    """Decode a binary stream (plain or gzip, detected by content) into text lines.

    At most `max_bytes` of (decompressed) text are read; beyond that `CorpusTooLarge`. A line
    longer than `MAX_LINE_BYTES` raises `CorpusError` as soon as that many bytes are read, so
    memory stays bounded whatever the content. Bytes that are not UTF-8 raise `CorpusError`
    with their line number. Lines end at `\n` (a `\r` before it is the parsers' to strip).
    `digest` (a `hashlib` object), when given, is fed every (decompressed) byte read.
    """
    head = binary.read(2)
    binary.seek(0)
    stream: BinaryIO = gzip.GzipFile(fileobj=binary) if head == _GZIP_MAGIC else binary
    total = 0
    line_number = 0
    try:
        # `readline(size)` reads at most `size` bytes; iterating a file (Django's `File` above
        # all, which joins 64 KB chunks until it sees a newline) would read a line whole.
        while raw := stream.readline(MAX_LINE_BYTES + 1):
            line_number += 1
            total += len(raw)
            if total > max_bytes:
                raise CorpusTooLarge(max_bytes)
            if len(raw) > MAX_LINE_BYTES:
                raise CorpusError(line_number, f"line is longer than {MAX_LINE_BYTES} bytes")
            if digest is not None:
                digest.update(raw)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusError(line_number, "not valid UTF-8 text") from exc
    except (OSError, EOFError, zlib.error) as exc:  # corrupt or truncated gzip stream
        raise CorpusError(line_number + 1, f"cannot decompress: {exc}") from exc


def _check_tokens(tokens: list[str], line_number: int) -> None:
    if not tokens:
        raise CorpusError(line_number, "sentence has no tokens")
    if len(tokens) > MAX_SENTENCE_TOKENS:
        raise CorpusError(
            line_number, f"sentence has {len(tokens)} tokens, more than {MAX_SENTENCE_TOKENS}"
        )
    for token in tokens:
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise CorpusError(line_number, f"tokens must be 1 to {MAX_TOKEN_CHARS} characters long")
        if not token.isprintable() and any(_refused(char) for char in token):
            raise CorpusError(line_number, f"token {token[:20]!r} contains control characters")


def _refused(char: str) -> bool:
    return unicodedata.category(char) in _REFUSED_CATEGORIES or char in _BIDI_CONTROLS


def parse_conllu(lines: Iterable[str], *, tag_column: str = "upos") -> Iterator[ParsedSentence]:
    """CoNLL-U; gold tags from `tag_column`; a sentence whose tags are all `_` has none."""
    try:
        for sentence in iter_conllu(_conllu_sentences_bounded(lines)):
            _check_tokens(sentence.tokens, sentence.line_number)
            tags = sentence.tags(tag_column)
            missing = sum(tag == "_" for tag in tags)
            if missing and missing != len(tags):
                raise CorpusError(
                    sentence.line_number,
                    f"sentence has {tag_column.upper()} tags on some tokens and `_` on others",
                )
            yield ParsedSentence(
                sentence.tokens,
                None if missing else tags,
                sentence.line_number,
                text=sentence.text or "",
                source="\n".join(sentence.lines),
            )
    except ConlluError as exc:
        raise CorpusError(exc.line_number, exc.message) from exc


# Refused anywhere in a CoNLL-U line, not only in FORM (`_refused`): control characters but the
# tab (NUL cannot be stored; CR, VT, FF, NEL end a line for some readers, so the export would
# not read back), surrogates, line and paragraph separators, and the bidirectional controls.
_REFUSED_IN_CONLLU = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _conllu_refused(char: str) -> str:
    if char == "\x00":
        return "a NUL character, which is not text"
    if char == "\r":
        return "a carriage return inside the line (lines end with a line feed, or CR LF)"
    if char in _BIDI_CONTROLS:
        return (
            f"a bidirectional control character (U+{ord(char):04X}), which can make the text "
            "shown differ from the text stored"
        )
    return f"a control character (U+{ord(char):04X}), which would break the file's lines"


def _conllu_sentences_bounded(lines: Iterable[str]) -> Iterator[str]:
    """Pass CoNLL-U lines through, refusing a line that holds a character Tally cannot store or
    write back (`_REFUSED_IN_CONLLU`), and a sentence at its token line past the limit.

    The CoNLL-U reader gathers a sentence's tokens until its blank line: without this, a file of
    one endless sentence (millions of short token lines) would be held whole before the token
    count is checked. Token lines are the ones whose id is a plain integer.
    """
    n_tokens = 0
    for line_number, line in enumerate(lines, start=1):
        found = _REFUSED_IN_CONLLU.search(line.rstrip("\r\n"))
        if found:
            column = _column_name(line, found.start())
            raise CorpusError(line_number, f"{column} contains {_conllu_refused(found.group())}")
        if not line.strip():
            n_tokens = 0
        elif is_word_id(line.partition("\t")[0]):
            n_tokens += 1
            if n_tokens > MAX_SENTENCE_TOKENS:
                raise CorpusError(
                    line_number, f"sentence has more than {MAX_SENTENCE_TOKENS} tokens"
                )
        yield line


_CONLLU_COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")


def _column_name(line: str, position: int) -> str:
    """Where in a CoNLL-U line `position` is, for an error message: "the comment", "MISC"."""
    if line.startswith("#"):
        return "the comment"
    index = line.count("\t", 0, position)
    return _CONLLU_COLUMNS[index] if index < len(_CONLLU_COLUMNS) else "the line"


def parse_text(lines: Iterable[str], *, language: str) -> Iterator[ParsedSentence]:
    """Running text: paragraphs (separated by blank lines) cut into sentences and tokens by the
    tokenizer of `language` (`common.text`); a sentence of more than `MAX_SENTENCE_TOKENS`
    tokens is cut into pieces of that many."""
    try:
        for sentence in text_sentences(lines, language=language, max_tokens=MAX_SENTENCE_TOKENS):
            _check_tokens(sentence.tokens, sentence.line_number)
            yield ParsedSentence(sentence.tokens, None, sentence.line_number, text=sentence.text)
    except TextTooSlow as exc:
        raise CorpusError(exc.line_number, exc.message) from exc


def parse_tokenized(lines: Iterable[str]) -> Iterator[ParsedSentence]:
    """One sentence per line, tokens separated by whitespace; blank lines are skipped."""
    for line_number, line in enumerate(lines, start=1):
        tokens = line.removeprefix("\ufeff").split()
        if tokens:
            _check_tokens(tokens, line_number)
            yield ParsedSentence(tokens, None, line_number)


def parse_jsonl(lines: Iterable[str]) -> Iterator[ParsedSentence]:
    """One JSON object per line: `{"tokens": [...], "tags": [...] | null}`; blank lines skipped."""
    for line_number, line in enumerate(lines, start=1):
        text = line.removeprefix("\ufeff").strip()
        if not text:
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorpusError(line_number, f"not valid JSON ({exc.msg})") from exc
        except RecursionError as exc:
            raise CorpusError(line_number, "not valid JSON (nested too deeply)") from exc
        if not isinstance(record, dict):
            raise CorpusError(line_number, "expected a JSON object")
        tokens = record.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise CorpusError(line_number, '"tokens" must be a list of strings')
        _check_tokens(tokens, line_number)
        tags = record.get("tags")
        if tags is not None:
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise CorpusError(line_number, '"tags" must be a list of strings or null')
            if len(tags) != len(tokens):
                raise CorpusError(
                    line_number, f"{len(tags)} tags for {len(tokens)} tokens; they must align"
                )
        yield ParsedSentence(tokens, tags, line_number)


def parse(
    lines: Iterable[str], *, format: str, tag_column: str = "upos", language: str = "en"
) -> Iterator[ParsedSentence]:
    if format == "conllu":
        return parse_conllu(lines, tag_column=tag_column)
    if format == "text":
        return parse_text(lines, language=language)
    if format == "tokenized":
        return parse_tokenized(lines)
    if format == "jsonl":
        return parse_jsonl(lines)
    raise ValueError(f"unknown corpus format {format!r}")


PREVIEW_SENTENCES = 5


def preview(
    binary: BinaryIO,
    *,
    format: str,
    tag_column: str,
    language: str,
    partial: bool,
    max_bytes: int,
    n_sentences: int = PREVIEW_SENTENCES,
) -> list[dict]:
    """The first `n_sentences` of a file as the import reads them: `{"tokens", "tags", "line"}`.

    With `partial` the file is the head of a larger one: a sentence that the cut may have
    shortened (the last one read before the end) is left out, and so is an error past the
    sentences already read (a gzip stream cut short, a line cut in two). Otherwise a malformed
    file raises `CorpusError` as the import would.
    """
    shown: list[ParsedSentence] = []
    reached_end = True
    try:
        lines = read_lines(binary, max_bytes=max_bytes)
        for sentence in parse(lines, format=format, tag_column=tag_column, language=language):
            shown.append(sentence)
            if len(shown) > n_sentences:
                reached_end = False
                break
    except (CorpusError, CorpusTooLarge):
        if not (partial and shown):
            raise
    if partial and reached_end:
        shown = shown[:-1]
    return [
        {"tokens": s.tokens, "tags": s.tags, "line": s.line_number} for s in shown[:n_sentences]
    ]


class CorpusTooManySentences(ValueError):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the corpus has more than {limit} sentences")


@dataclass(frozen=True, slots=True)
class Scan:
    """What a quick pass over a file tells before it is parsed."""

    size: int  # bytes of text (after gzip)
    content_hash: str  # SHA-256 of those bytes, as `read_lines(digest=...)` computes it
    sentences: int  # an estimate: exact but for a line cut by the reading (tokenized, JSONL,
    # CoNLL-U), an upper bound for plain text (sentence ends and paragraph breaks)


_SCAN_CHUNK = 1024 * 1024
_SPACES_BUT_NEWLINE = b" \t\r\x0b\x0c"


def _sentence_marks(format: str, chunk: bytes) -> int:
    """About how many sentences start in `chunk`, counted by C loops (a regular expression
    took seconds on 50 MB of blank lines)."""
    if format == "conllu":  # the first token line of each sentence
        return chunk.count(b"\n1\t") + chunk.startswith(b"1\t")
    if format == "text":  # sentence ends and paragraph breaks: a bound, not a count
        return sum(chunk.count(end) for end in (b".", b"!", b"?")) + chunk.count(b"\n\n")
    # tokenized, JSON lines: the lines with something on them
    return len(chunk.translate(None, _SPACES_BUT_NEWLINE).split())


def scan(binary: BinaryIO, *, format: str, max_bytes: int, max_sentences: int) -> Scan:
    """Read a file once, fast (in C, a megabyte at a time): its size, content hash and about how
    many sentences it holds, so that a file too large is refused before any is parsed.

    Raises `CorpusTooLarge` past `max_bytes`, `CorpusError` at a line longer than
    `MAX_LINE_BYTES` (as `read_lines` would), and `CorpusTooManySentences` as soon as the file
    surely holds more than `max_sentences` (not for plain text, whose count is only a bound).
    The stream is left at its start."""
    head = binary.read(2)
    binary.seek(0)
    stream: BinaryIO = gzip.GzipFile(fileobj=binary) if head == _GZIP_MAGIC else binary
    digest = hashlib.sha256()
    size = sentences = chunks = newlines = line_length = 0
    try:
        while chunk := stream.read(_SCAN_CHUNK):
            size += len(chunk)
            chunks += 1
            if size > max_bytes:
                raise CorpusTooLarge(max_bytes)
            digest.update(chunk)
            first = chunk.find(b"\n")
            if first < 0:
                line_length += len(chunk)
            else:
                line_length += first + 1
                if line_length > MAX_LINE_BYTES:
                    break
                newlines += chunk.count(b"\n")
                line_length = len(chunk) - chunk.rfind(b"\n") - 1
            if line_length > MAX_LINE_BYTES:
                break
            # A mark cut by a chunk's end may count twice: at most once per chunk.
            sentences += _sentence_marks(format, chunk)
            if format != "text" and sentences - chunks > max_sentences:
                raise CorpusTooManySentences(max_sentences)
    except (OSError, EOFError, zlib.error) as exc:
        raise CorpusError(newlines + 1, f"cannot decompress: {exc}") from exc
    finally:
        binary.seek(0)
    if line_length > MAX_LINE_BYTES:
        raise CorpusError(newlines + 1, f"line is longer than {MAX_LINE_BYTES} bytes")
    return Scan(size=size, content_hash=digest.hexdigest(), sentences=sentences)
