import gzip

import pytest

from learning.core.conllu import (
    ConlluError,
    conllu_head,
    iter_conllu,
    multiword_tokens,
    read_conllu,
    split_multiword,
)
from tests.support.ewt import EWT_DIR

SAMPLE = """# newdoc id = d1
# sent_id = s1
# text = I can't go.
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_
2\tca\tcan\tAUX\tMD\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_
4.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t0:root\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = s2
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_
"""


def test_reads_sentences_skipping_ranges_and_empty_nodes():
    sentences = list(iter_conllu(SAMPLE.splitlines(keepends=True)))
    assert [s.sent_id for s in sentences] == ["s1", "s2"]
    first = sentences[0]
    assert first.tokens == ["I", "ca", "n't", "go", "."]
    assert first.upos == ["PRON", "AUX", "PART", "VERB", "PUNCT"]
    assert first.xpos == ["PRP", "MD", "RB", "VB", "."]
    assert first.text == "I can't go."
    assert first.tags("upos") == first.upos
    assert sentences[1].tokens == ["Yes"]  # last sentence without a trailing blank line


def test_wrong_column_count_names_the_line():
    lines = SAMPLE.splitlines(keepends=True)
    lines[4] = "2\tca\tcan\tAUX\tMD\t_\t4\n"
    with pytest.raises(ConlluError) as info:
        list(iter_conllu(lines))
    assert info.value.line_number == 5
    assert str(info.value) == "line 5: expected 10 tab-separated columns, found 7"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("x\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_", "token id must be a positive integer"),
        ("2\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_", "expected token id 1, found 2"),
        ("1-x\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_", "malformed token id"),
    ],
)
def test_malformed_ids(line, message):
    with pytest.raises(ConlluError, match=message):
        list(iter_conllu([line + "\n"]))


def test_reads_plain_and_gzip_files(tmp_path):
    plain = tmp_path / "a.conllu"
    plain.write_text(SAMPLE, encoding="utf-8")
    packed = tmp_path / "a.conllu.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write(SAMPLE)
    assert [s.tokens for s in read_conllu(plain)] == [s.tokens for s in read_conllu(packed)]


def test_invalid_utf8_is_a_conllu_error(tmp_path):
    path = tmp_path / "bad.conllu"
    path.write_bytes(SAMPLE.encode("utf-8") + b"1\t\xff\t_\tX\tX\t_\t0\troot\t_\t_\n")
    with pytest.raises(ConlluError, match="UTF-8"):
        list(read_conllu(path))


def test_reader_is_streaming():
    def lines():
        yield from SAMPLE.splitlines(keepends=True)[:11]
        raise AssertionError("read past the first sentence")

    first = next(iter(iter_conllu(lines())))
    assert first.sent_id == "s1"


def test_conllu_head_is_a_valid_slice_of_plain_and_gzipped_files(tmp_path):
    gzipped = EWT_DIR / "en_ewt-ud-dev.conllu.gz"
    head = conllu_head(gzipped, 7)
    sentences = list(iter_conllu(head.splitlines(keepends=True)))
    assert len(sentences) == 7 and head.endswith("\n\n")
    plain = tmp_path / "dev.conllu"
    plain.write_text(head, encoding="utf-8")
    assert conllu_head(plain, 3) == "\n\n".join(head.split("\n\n")[:3]) + "\n\n"
    assert conllu_head(plain, 100) == head  # asking for more than there is gives the whole file


# Round trip: every line of the source, only the tag column changed -------------------------------


def _written(sentences, tags=None, **kwargs):
    from learning.core.conllu import conllu_sentence

    return "".join(
        conllu_sentence(s.tokens, tags(s) if tags else s.upos, source=s.lines, **kwargs)
        for s in sentences
    )


def test_sentence_written_back_from_its_source_lines_as_read():
    text = SAMPLE + "\n"
    assert _written(iter_conllu(text.splitlines(keepends=True))) == text


def test_source_tags_replaced_in_the_chosen_column_only():
    sentences = list(iter_conllu(SAMPLE.splitlines(keepends=True)))
    out = _written(sentences[:1], tags=lambda s: ["X"] * len(s.tokens), column="xpos")
    lines = out.splitlines()
    assert lines[:3] == SAMPLE.splitlines()[:3]  # comments as read
    assert lines[4] == "2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_"  # the multiword token as read
    assert lines[3].split("\t")[3:5] == ["PRON", "X"]
    assert lines[8].split("\t")[4] == "VBN"  # an empty node is no word: not tagged
    misc = _written(sentences[1:], misc=["Prob=0.9"]).splitlines()
    assert misc[1].split("\t")[9] == "Prob=0.9"


def test_source_and_tags_of_different_lengths_refused():
    from learning.core.conllu import conllu_sentence

    sentence = next(iter_conllu(SAMPLE.splitlines(keepends=True)))
    with pytest.raises(ValueError, match="4 tags for a source sentence of 5 words"):
        conllu_sentence(sentence.tokens, ["X"] * 4, source=sentence.lines)


@pytest.mark.parametrize(
    "name",
    [
        "en_ewt-ud-dev.conllu.gz",
        "en_ewt-ud-test.conllu.gz",
        pytest.param("en_ewt-ud-train.conllu.gz", marks=pytest.mark.slow),
    ],
)
def test_ewt_round_trips_line_by_line(name):
    """Issue 17: sent_ids, comments, multiword tokens and `# text` kept; tags replaced in place."""
    path = EWT_DIR / name
    with gzip.open(path, "rt", encoding="utf-8") as source:
        original = source.read()
    assert _written(read_conllu(path)) == original
    retagged = _written(read_conllu(path), tags=lambda s: ["X"] * len(s.tokens)).splitlines()
    lines = original.splitlines()
    assert len(retagged) == len(lines)
    for old, new in zip(lines, retagged, strict=True):
        if old.partition("\t")[0].isdigit():
            old_columns, new_columns = old.split("\t"), new.split("\t")
            assert new_columns[3] == "X"
            assert old_columns[:3] + old_columns[4:] == new_columns[:3] + new_columns[4:]
        else:
            assert new == old


def test_multiword_tokens_are_read_with_their_first_word_and_length():
    lines = [
        "# text = Il va au marché des fleurs.",
        "1\tIl\t_\tPRON\t_\t_\t0\t_\t_\t_",
        "2\tva\t_\tVERB\t_\t_\t0\t_\t_\t_",
        "3-4\tau\t_\t_\t_\t_\t_\t_\t_\t_",
        "3\tà\t_\tADP\t_\t_\t0\t_\t_\t_",
        "4\tle\t_\tDET\t_\t_\t0\t_\t_\t_",
        "5\tmarché\t_\tNOUN\t_\t_\t0\t_\t_\t_",
        "5.1\tvide\t_\t_\t_\t_\t_\t_\t_\t_",
        "6-7\tdes\t_\t_\t_\t_\t_\t_\t_\t_",
        "6\tde\t_\tADP\t_\t_\t0\t_\t_\t_",
        "7\tles\t_\tDET\t_\t_\t0\t_\t_\t_",
    ]
    assert multiword_tokens(lines) == [[2, 2, "au"], [5, 2, "des"]]
    assert multiword_tokens(lines[:3]) == []


def test_split_multiword_cuts_text_as_the_corpus_did():
    splits = {"au": ["à", "le"], "des": ["de", "les"], "Au": ["À", "le"]}
    assert split_multiword(["Il", "va", "au", "marché"], splits) == [
        "Il",
        "va",
        "à",
        "le",
        "marché",
    ]
    assert split_multiword(["Au", "DES"], splits) == ["À", "le", "de", "les"]
    assert split_multiword(["rien"], {}) == ["rien"]
