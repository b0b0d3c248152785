"""Corpus parsers: streaming, line numbers, limits. No database."""

import gzip
import io
import json
from pathlib import Path

import pytest

from annotation import importers
from tests.support.factories import gzipped

CONLLU = """# sent_id = a
# text = The dog barks.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3-4\tbarks.\t_\t_\t_\t_\t_\t_\t_\t_
3\tbarks\tbark\tVERB\tVBZ\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

1\tHi\thi\t_\t_\t_\t0\troot\t_\t_
"""


def lines(text: str):
    return importers.read_lines(io.BytesIO(text.encode()), max_bytes=10**6)


def test_conllu_reads_tags_of_the_chosen_column_and_skips_multiword_lines():
    parsed = list(importers.parse(lines(CONLLU), format="conllu", tag_column="upos"))
    assert parsed[0].tokens == ["The", "dog", "barks", "."]
    assert parsed[0].tags == ["DET", "NOUN", "VERB", "PUNCT"]
    assert parsed[1].tokens == ["Hi"] and parsed[1].tags is None  # all `_`: no gold
    xpos = list(importers.parse(lines(CONLLU), format="conllu", tag_column="xpos"))
    assert xpos[0].tags == ["DT", "NN", "VBZ", "."]


def test_conllu_error_has_the_line_number():
    broken = CONLLU.replace("2\tdog\tdog\tNOUN", "2\tdog NOUN")
    with pytest.raises(importers.CorpusError) as error:
        list(importers.parse(lines(broken), format="conllu"))
    assert error.value.line_number == 4
    assert str(error.value).startswith("line 4:")


def test_conllu_partially_tagged_sentence_is_rejected():
    broken = CONLLU.replace("\tNOUN\tNN", "\t_\tNN")
    with pytest.raises(importers.CorpusError, match="some tokens"):
        list(importers.parse(lines(broken), format="conllu"))


def test_tokenized_one_sentence_per_line():
    parsed = list(importers.parse(lines("a b  c\n\n d e\n"), format="tokenized"))
    assert [p.tokens for p in parsed] == [["a", "b", "c"], ["d", "e"]]
    assert [p.line_number for p in parsed] == [1, 3]
    assert all(p.tags is None for p in parsed)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"tokens": "a b"}', "list of strings"),
        ('{"tokens": []}', "no tokens"),
        ('{"tokens": ["a"], "tags": ["X", "Y"]}', "must align"),
        ('{"tokens": ["a\\u0000"]}', "control characters"),
        ('{"tokens": ["' + "x" * 501 + '"]}', "characters long"),
        ('{"tokens": ["evil\\u202etxt.exe"]}', "control characters"),
        ('{"tokens": ["a\\u2028b"]}', "control characters"),
    ],
)
def test_jsonl_errors_name_the_line(line, message):
    text = '{"tokens": ["ok"]}\n' + line + "\n"
    with pytest.raises(importers.CorpusError, match=message) as error:
        list(importers.parse(lines(text), format="jsonl"))
    assert error.value.line_number == 2


def test_invalid_utf8_is_reported_with_its_line():
    data = b"a b\nc \xff d\n"
    with pytest.raises(importers.CorpusError, match="UTF-8") as error:
        list(importers.parse(importers.read_lines(io.BytesIO(data), max_bytes=100), format="text"))
    assert error.value.line_number == 2


def test_gzip_is_detected_and_decompressed_size_is_limited():
    data = gzip.compress(b"a b c\n" * 1000)
    parsed = list(
        importers.parse(importers.read_lines(io.BytesIO(data), max_bytes=10**6), format="tokenized")
    )
    assert len(parsed) == 1000
    with pytest.raises(importers.CorpusTooLarge):
        list(importers.read_lines(io.BytesIO(data), max_bytes=1000))


def test_corrupt_gzip_is_a_corpus_error():
    data = gzip.compress(b"a b c\n" * 1000)[:-30]
    with pytest.raises(importers.CorpusError):
        list(importers.read_lines(io.BytesIO(data), max_bytes=10**6))


def test_reading_streams_line_by_line():
    """The parser pulls lines lazily: a problem at line 1 stops reading long before the end."""
    consumed = 0

    def endless():
        nonlocal consumed
        yield "{broken\n"
        while True:
            consumed += 1
            yield '{"tokens": ["a"]}\n'

    with pytest.raises(importers.CorpusError):
        list(importers.parse(endless(), format="jsonl"))
    assert consumed == 0


def test_real_text_is_accepted_soft_hyphens_joiners_and_long_urls():
    url = "http://lllreptile.com/store/catalog/reptile-supplies/" + "x" * 90
    tokens = ["co\u00adoperate", "\U0001f469\u200d\U0001f4bb", url]
    text = json.dumps({"tokens": tokens}) + "\n"
    (parsed,) = importers.parse(lines(text), format="jsonl")
    assert parsed.tokens == tokens


@pytest.mark.slow
def test_the_whole_released_ewt_train_file_parses():
    """Regression: the importer once refused UD English EWT (a 140-character URL, a soft hyphen)."""
    path = Path(__file__).resolve().parents[2] / "data/ud-english-ewt/en_ewt-ud-train.conllu.gz"
    with path.open("rb") as corpus:
        read = importers.read_lines(corpus, max_bytes=10**8)
        n_sentences = sum(1 for _ in importers.parse(read, format="conllu"))
    assert n_sentences == 12_544


class _ReadCounter(io.BytesIO):
    """A stream that remembers the largest single read asked of it (and served)."""

    largest = 0

    def _note(self, data: bytes) -> bytes:
        self.largest = max(self.largest, len(data))
        return data

    def read(self, size=-1):
        return self._note(super().read(size))

    def read1(self, size=-1):
        return self._note(super().read1(size))

    def readline(self, size=-1):
        return self._note(super().readline(size))

    def __iter__(self):  # iteration reads a line whole, whatever its length
        while line := self.readline():
            yield line


@pytest.mark.parametrize("newline", [b"", b"\n"])
def test_a_line_longer_than_the_bound_is_refused_when_the_bound_is_crossed(newline):
    """Regression (issue 16, finding 4): a 45 MiB single line was read whole (45 s, 600 MB in a
    worker) before its token was found too long."""
    data = _ReadCounter(b"x" * (importers.MAX_LINE_BYTES * 4) + newline + b"a b\n")
    with pytest.raises(importers.CorpusError, match="longer than") as error:
        list(importers.read_lines(data, max_bytes=10**9))
    assert error.value.line_number == 1
    assert data.largest <= importers.MAX_LINE_BYTES + 1


def test_a_gzip_bomb_without_newline_is_refused_without_inflating_it():
    """Regression (issue 16, finding 4): 0.8 MB of gzip inflating to 800 MiB with no newline
    raised a worker's peak memory by 1.5 GB before the size check."""
    import tracemalloc

    bomb = gzipped(b"\0" * (1 << 20), 64)  # 64 MiB of text in about 64 KB
    tracemalloc.start()
    try:
        with pytest.raises(importers.CorpusError, match="longer than"):
            list(importers.read_lines(io.BytesIO(bomb), max_bytes=10**9))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * importers.MAX_LINE_BYTES


def test_a_gzip_bomb_with_newlines_stops_at_the_total_bound():
    bomb = gzipped(b"a " * 500 + b"\n", 100_000)  # 100 MB of valid-looking lines
    with pytest.raises(importers.CorpusTooLarge):
        for _ in importers.read_lines(io.BytesIO(bomb), max_bytes=10**6):
            pass


def test_the_longest_valid_json_line_is_within_the_line_bound():
    token = "\u4e00" * importers.MAX_TOKEN_CHARS
    record = {"tokens": [token] * importers.MAX_SENTENCE_TOKENS, "tags": ["\u4e00" * 32] * 500}
    line = json.dumps(record).encode() + b"\n"  # ensure_ascii: every character a \\u escape
    assert len(line) <= importers.MAX_LINE_BYTES
    (parsed,) = importers.parse(importers.read_lines(io.BytesIO(line), max_bytes=10**8),
                                format="jsonl")  # fmt: skip
    assert len(parsed.tokens) == importers.MAX_SENTENCE_TOKENS


def test_an_endless_conllu_sentence_is_refused_at_its_token_past_the_limit():
    """Regression (issue 16, finding 4): the reader gathered a sentence's tokens until its blank
    line, so one sentence of millions of short token lines was held whole before it was checked."""
    consumed = 0

    def endless():
        nonlocal consumed
        for number in range(1, 100_001):
            consumed += 1
            yield f"{number}\tw\tw\tNOUN\tNN\t_\t0\troot\t_\t_\n"

    with pytest.raises(importers.CorpusError, match="more than 500 tokens") as error:
        list(importers.parse(endless(), format="conllu"))
    assert error.value.line_number == importers.MAX_SENTENCE_TOKENS + 1
    assert consumed == importers.MAX_SENTENCE_TOKENS + 1


LICENCE = """Permission is hereby granted, free of charge, to any person obtaining a copy
of this software. The above copyright notice shall be included in all copies;
3, 4 or 5 copies are allowed.

THE SOFTWARE IS PROVIDED "AS IS". You can't sue us: go back!
"""


def test_plain_text_is_cut_into_sentences_and_tokens():
    """Issue 17: wrapped lines were sentences, punctuation stuck to words ("allowed.", "3,")."""
    parsed = list(importers.parse(lines(LICENCE), format="text", language="en"))
    assert [p.tokens[-3:] for p in parsed] == [
        ["this", "software", "."],
        ["are", "allowed", "."],
        ["IS", '"', "."],
        ["go", "back", "!"],
    ]
    assert parsed[1].tokens[:2] == ["The", "above"] and "3" in parsed[1].tokens
    assert parsed[1].tokens[parsed[1].tokens.index("3") + 1] == ","
    assert parsed[3].tokens[1:3] == ["ca", "n't"]
    assert [p.line_number for p in parsed] == [1, 2, 5, 5]
    assert parsed[1].text.endswith("3, 4 or 5 copies are allowed.")


def test_plain_text_uses_the_projects_language():
    text = "Je pense que l'UE l'a vu. Aux États-Unis, non.\n"
    french = list(importers.parse(lines(text), format="text", language="fr"))
    assert [p.tokens for p in french] == [
        ["Je", "pense", "que", "l'", "UE", "l'", "a", "vu", "."],
        ["Aux", "États-Unis", ",", "non", "."],
    ]


def test_preview_shows_the_first_sentences_as_the_import_reads_them():
    head = LICENCE.encode()
    shown = importers.preview(
        io.BytesIO(head), format="text", tag_column="upos", language="en", partial=False,
        max_bytes=10**6, n_sentences=2,
    )  # fmt: skip
    assert [s["tokens"][-2:] for s in shown] == [["software", "."], ["allowed", "."]]
    assert shown[0]["line"] == 1 and shown[0]["tags"] is None


@pytest.mark.parametrize("compress", [False, True])
def test_preview_of_a_files_head_is_no_error_where_the_head_is_cut(compress):
    data = ((CONLLU + "\n") * 3).encode()
    head = gzip.compress(data)[:-6] if compress else data[:-12]  # cut: trailer, last sentence
    shown = importers.preview(
        io.BytesIO(head), format="conllu", tag_column="upos", language="en", partial=True,
        max_bytes=10**6,
    )  # fmt: skip
    first = {"tokens": ["The", "dog", "barks", "."], "tags": ["DET", "NOUN", "VERB", "PUNCT"],
             "line": 3}  # fmt: skip
    assert shown[0] == first
    assert all(s["tokens"] in (first["tokens"], ["Hi"]) for s in shown)


def test_preview_of_a_files_head_leaves_out_the_sentence_the_cut_may_have_shortened():
    def shown(partial):
        return [s["tokens"] for s in importers.preview(
            io.BytesIO(b"The dog barks. The cat sl"), format="text", tag_column="upos",
            language="en", partial=partial, max_bytes=10**6,
        )]  # fmt: skip

    assert shown(partial=True) == [["The", "dog", "barks", "."]]
    assert shown(partial=False) == [["The", "dog", "barks", "."], ["The", "cat", "sl"]]


def test_preview_of_a_malformed_file_is_the_imports_error():
    with pytest.raises(importers.CorpusError, match="line 2: expected 10"):
        importers.preview(
            io.BytesIO(b"# x\n1\tA\n"), format="conllu", tag_column="upos", language="en",
            partial=False, max_bytes=10**6,
        )  # fmt: skip
