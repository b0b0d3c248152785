"""The one tokenizer of plain text (common/text.py): no database, no Django."""

import pytest

from common.text import LANGUAGES, MAX_PARAGRAPH_CHARS, as_sentence, text_sentences, tokenize


def test_every_language_offered_loads_without_a_download():
    for language in LANGUAGES:
        assert tokenize("Hello world!", language=language) == ["Hello", "world", "!"]


def test_unknown_language_fails_before_reading():
    with pytest.raises(ValueError, match="unknown language 'tlh'"):
        next(text_sentences(["a"], language="tlh"))


def test_lines_of_a_paragraph_are_joined_and_blank_lines_separate_paragraphs():
    lines = ["It was a dark", "and stormy night", "", "Then", "it rained."]
    sentences = list(text_sentences(lines, language="en"))
    assert [s.tokens for s in sentences] == [
        ["It", "was", "a", "dark", "and", "stormy", "night"], ["Then", "it", "rained", "."]
    ]  # fmt: skip
    assert [s.line_number for s in sentences] == [1, 4]
    assert sentences[0].text == "It was a dark and stormy night"


def test_a_long_sentence_comes_out_in_pieces():
    sentences = list(text_sentences(["w " * 1201], language="en", max_tokens=500))
    assert [len(s.tokens) for s in sentences] == [500, 500, 201]


def test_a_file_without_blank_lines_is_read_a_bounded_paragraph_at_a_time():
    line = "word " * 19 + "end."
    n_lines = 2 * MAX_PARAGRAPH_CHARS // len(line) + 10
    sentences = text_sentences((line for _ in range(n_lines)), language="xx")
    first = next(sentences)
    assert first.line_number == 1 and len(first.tokens) == 21
    assert sum(1 for _ in sentences) == n_lines - 1


def test_messages_end_in_a_full_stop():
    assert as_sentence("line 3: found 6") == "line 3: found 6."
    assert as_sentence("Is it?") == "Is it?"


def test_a_run_of_one_punctuation_character_is_one_token():
    """As in UD EWT (`!!!`, `****`, `====` whole): a licence's rule of 71 '=' was 71 tokens, so
    71 '=' to count on a phone (issue 17 walk)."""
    rule = "=" * 71
    sentences = list(text_sentences(["Hello!!! Wait...", rule], language="en"))
    assert [s.tokens for s in sentences] == [["Hello", "!!!"], ["Wait", "...", rule]]
    assert tokenize("a--b ?! ****x", language="en") == ["a", "--", "b", "?", "!", "****", "x"]
    assert tokenize("! !", language="en") == ["!", "!"]  # apart: two tokens
    assert tokenize("can't!!", language="en") == ["ca", "n't", "!!"]
