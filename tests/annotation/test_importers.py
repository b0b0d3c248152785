"""Corpus parsers: streaming, line numbers, limits. No database."""

import gzip
import io
import json
from pathlib import Path

import pytest

from annotation import importers

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


def test_text_one_sentence_per_line():
    parsed = list(importers.parse(lines("a b  c\n\n d e\n"), format="text"))
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
        importers.parse(importers.read_lines(io.BytesIO(data), max_bytes=10**6), format="text")
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
