"""Score sentence splitters and tokenizers on UD treebanks' raw text (how Tally's was chosen).

    python devtools/tokenizer_eval.py DIR_OR_FILE.conllu.gz... [--candidates spacy,nltk,...]

For each treebank the test text is rebuilt from its ``# text`` lines: consecutive sentences of a
paragraph (``# newpar``/``# newdoc``, or 10 sentences where the treebank marks none) joined by one
space. Each candidate splits and tokenizes that text; its tokens and sentences are compared with
the treebank's as character spans (whitespace ignored), as the CoNLL 2018 shared task's scorer
does, and precision, recall and F1 of exact span matches are printed per language.

The gold tokens are the treebank's syntactic words where a multiword token is the concatenation
of its words (English ``don't`` = ``do`` + ``n't``, what Tally tags), and the multiword token
itself where it is not (French ``du`` = ``de`` + ``le``: no tokenizer can split it into spans).

The candidates are imported here only: Tally itself uses the one it chose (common/text.py). No
candidate may download anything at run time. Needs no Django.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

_PARAGRAPH_SENTENCES = 10
_LANGS = {"en": "english", "fr": "french", "nl": "dutch"}


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as stream:
        yield from stream


def read_paragraphs(path: Path) -> list[list[tuple[str, list[str]]]]:
    """Paragraphs as lists of (sentence text, gold token forms)."""
    paragraphs: list[list[tuple[str, list[str]]]] = []
    current: list[tuple[str, list[str]]] = []
    text, tokens, new_par = None, [], False
    mwt_end, mwt_form, mwt_words = 0, "", []
    for raw in _lines(path):
        line = raw.rstrip("\n")
        if line.startswith("# newpar") or line.startswith("# newdoc"):
            new_par = True
        elif line.startswith("# text ="):
            text = line.partition("=")[2].strip()
        elif not line.strip():
            if text is not None:
                if current and (new_par or len(current) >= _PARAGRAPH_SENTENCES):
                    paragraphs.append(current)
                    current = []
                current.append((text, tokens))
            text, tokens, new_par = None, [], False
        elif not line.startswith("#"):
            cols = line.split("\t")
            ident, form = cols[0], cols[1]
            if "-" in ident:
                start, end = (int(x) for x in ident.split("-"))
                mwt_end, mwt_form, mwt_words = end, form, []
            elif "." in ident:
                continue
            elif int(ident) <= mwt_end:
                mwt_words.append(form)
                if int(ident) == mwt_end:
                    joined = "".join(mwt_words)
                    tokens.extend(mwt_words if joined == mwt_form else [mwt_form])
                    mwt_end = 0
            else:
                tokens.append(form)
    if current:
        paragraphs.append(current)
    return paragraphs


def spans_of(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Character spans of `pieces` found in order in `text` (a piece not found is dropped)."""
    spans, cursor = [], 0
    for piece in pieces:
        found = text.find(piece, cursor)
        if found < 0:
            continue
        spans.append((found, found + len(piece)))
        cursor = found + len(piece)
    return spans


def _squeeze(text: str, spans: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Spans in coordinates that ignore whitespace, so that spaces around a token do not count."""
    index = [0] * (len(text) + 1)
    n = 0
    for i, char in enumerate(text):
        index[i] = n
        if not char.isspace():
            n += 1
    index[len(text)] = n
    out = set()
    for start, end in spans:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            out.add((index[start], index[end - 1] + 1))
    return out


class Score:
    def __init__(self) -> None:
        self.gold = self.system = self.correct = 0

    def add(self, gold: set, system: set) -> None:
        self.gold += len(gold)
        self.system += len(system)
        self.correct += len(gold & system)

    def f1(self) -> float:
        if not self.gold or not self.system:
            return 0.0
        p, r = self.correct / self.system, self.correct / self.gold
        return 0.0 if not p + r else 2 * p * r / (p + r)


# A candidate: text -> (sentence spans, token spans)
Candidate = Callable[[str], tuple[list[tuple[int, int]], list[tuple[int, int]]]]


def make_spacy(lang: str) -> Candidate:
    import spacy

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")

    def run(text):
        doc = nlp(text)
        sentences = [(s.start_char, s.end_char) for s in doc.sents]
        tokens = [(t.idx, t.idx + len(t.text)) for t in doc if not t.is_space]
        return sentences, tokens

    return run


def make_nltk(lang: str) -> Candidate:
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    splitter, words = PunktSentenceTokenizer(), NLTKWordTokenizer()

    def run(text):
        sentences = list(splitter.span_tokenize(text))
        tokens = []
        for start, end in sentences:
            tokens += [(start + a, start + b) for a, b in words.span_tokenize(text[start:end])]
        return sentences, tokens

    return run


def make_moses(lang: str) -> Candidate:
    from sacremoses import MosesTokenizer
    from sentencex import segment

    moses = MosesTokenizer(lang=lang)

    def run(text):
        sentences = spans_of(text, [s.strip() for s in segment(lang, text) if s.strip()])
        tokens = []
        for start, end in sentences:
            pieces = moses.tokenize(text[start:end], escape=False, aggressive_dash_splits=True)
            tokens += [(start + a, start + b) for a, b in spans_of(text[start:end], pieces)]
        return sentences, tokens

    return run


def make_syntok(lang: str) -> Candidate:
    import syntok.segmenter as segmenter

    def run(text):
        sentences, tokens = [], []
        for paragraph in segmenter.analyze(text):
            for sentence in paragraph:
                spans = [(t.offset, t.offset + len(t.value)) for t in sentence]
                if spans:
                    sentences.append((spans[0][0], spans[-1][1]))
                    tokens += spans
        return sentences, tokens

    return run


def make_blingfire(lang: str) -> Candidate:
    import blingfire

    def run(text):
        _, sentence_offsets = blingfire.text_to_sentences_and_offsets(text)
        tokens = []
        for start, end in sentence_offsets:
            _, offsets = blingfire.text_to_words_with_offsets(text[start:end])
            tokens += [(start + a, start + b) for a, b in offsets]
        return list(sentence_offsets), tokens

    return run


def _spacy_within(lang: str, split: Callable[[str], list[tuple[int, int]]]) -> Candidate:
    """spaCy's tokenizer inside the sentences of another splitter."""
    import spacy

    nlp = spacy.blank(lang)

    def run(text):
        sentences, tokens = split(text), []
        for start, end in sentences:
            tokens += [(start + t.idx, start + t.idx + len(t.text)) for t in nlp(text[start:end])]
        return sentences, [span for span in tokens if text[span[0] : span[1]].strip()]

    return run


def make_spacy_sentencex(lang: str) -> Candidate:
    from sentencex import segment

    return _spacy_within(
        lang, lambda text: spans_of(text, [s.strip() for s in segment(lang, text) if s.strip()])
    )


def make_spacy_pysbd(lang: str) -> Candidate:
    import pysbd

    segmenter = pysbd.Segmenter(language=lang, clean=False, char_span=True)
    return _spacy_within(lang, lambda text: [(s.start, s.end) for s in segmenter.segment(text)])


def make_spacy_punkt(lang: str) -> Candidate:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    splitter = PunktSentenceTokenizer()
    return _spacy_within(lang, lambda text: list(splitter.span_tokenize(text)))


def make_whitespace(lang: str) -> Candidate:
    """Tally before: one sentence per line, tokens split on white space."""

    def run(text):
        tokens = [m.span() for m in re.finditer(r"\S+", text)]
        return [(0, len(text))], tokens

    return run


CANDIDATES = {
    "spacy": make_spacy,
    "nltk": make_nltk,
    "moses": make_moses,
    "syntok": make_syntok,
    "blingfire": make_blingfire,
    "spacy+sentencex": make_spacy_sentencex,
    "spacy+pysbd": make_spacy_pysbd,
    "spacy+punkt": make_spacy_punkt,
    "whitespace": make_whitespace,
}


def evaluate(paragraphs, candidate: Candidate) -> dict:
    tokens, sentences = Score(), Score()
    started = time.perf_counter()
    n_chars = 0
    for paragraph in paragraphs:
        text, gold_tokens, gold_sentences, cursor = "", [], [], 0
        for sentence_text, forms in paragraph:
            if text:
                text += " "
            start = len(text)
            text += sentence_text
            gold_sentences.append((start, len(text)))
            gold_tokens += [(start + a, start + b) for a, b in spans_of(sentence_text, forms)]
            cursor = len(text)
        del cursor
        n_chars += len(text)
        system_sentences, system_tokens = candidate(text)
        tokens.add(_squeeze(text, gold_tokens), _squeeze(text, system_tokens))
        sentences.add(_squeeze(text, gold_sentences), _squeeze(text, system_sentences))
    seconds = time.perf_counter() - started
    return {
        "token_f1": round(100 * tokens.f1(), 2),
        "sentence_f1": round(100 * sentences.f1(), 2),
        "kchars_per_s": round(n_chars / seconds / 1000, 1),
    }


def _lang_of(path: Path) -> str:
    return path.name.split("_")[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    args = parser.parse_args(argv)
    for path in args.files:
        lang = _lang_of(path)
        paragraphs = read_paragraphs(path)
        for name in args.candidates.split(","):
            try:
                candidate = CANDIDATES[name](lang)
            except (ImportError, OSError, ValueError, KeyError) as exc:
                print(json.dumps({"file": path.name, "candidate": name, "error": str(exc)}))
                continue
            result = evaluate(paragraphs, candidate)
            print(json.dumps({"file": path.name, "lang": lang, "candidate": name, **result}))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
