"""Tag a CoNLL-U file with a Tally model, outside the server.

    python -m learning.core.tag MODEL.npz < in.conllu > out.conllu
    python -m learning.core.tag MODEL.npz in.conllu.gz -o out.conllu --column xpos --probabilities
    python -m learning.core.tag MODEL.npz --text en < story.txt > story.conllu

``MODEL.npz`` is a model file as the dashboard's *Model versions* or
``GET /api/projects/{id}/models/{v}/download`` gives it, of either kind (contextual or node-only).
Every line of the input is written back unchanged but for the tag column (UPOS by default) of
each word line, which gets the model's tag: comments, sentence ids, multiword-token lines, empty
nodes and the other columns stay as they were, so ``diff in.conllu out.conllu`` lists what the
model tags differently. Each sentence is tagged whole, as the server tags it. ``--probabilities``
adds ``Prob=0.93`` to each word's MISC column.

The tags are the decisions of least expected cost (:mod:`.cost`) in the project's cost matrix,
which a model file downloaded from the dashboard carries (the project's matrix at the download;
the server itself keeps it in its database, not in the file), or in ``--cost-matrix
NAME|FILE`` (a preset: ``zero-one``, ``near-classes``, ``ordinal``, or a CSV file as the
dashboard exports it); with the 0/1 matrix, the most probable tags.

``--text LANG`` reads running text instead, cut into sentences and words as Tally cuts a plain
text import in that language (`common.text`, which needs spaCy and NLTK), and writes each
sentence with ``# sent_id``, ``# text`` and its words.

Needs numpy and scipy only (the learning core: no Django, no database, no server); reads and
writes with `learning.core.conllu` and loads the model with `learning.core.load_tagger`. In Python:

    from learning.core import load_tagger, read_conllu
    tagger, metadata = load_tagger("project-3-model-v4.npz")
    probs = tagger.token_proba([["The", "old", "dog", "barked", "."]])   # one row per token
    tags = [tagger.tagset_[k] for k in probs.argmax(axis=1)]
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

import numpy as np

from .conllu import ConlluError, ConlluSentence, conllu_sentence, iter_conllu, read_conllu
from .cost import PRESETS, CostMatrixError, TagCosts, bayes_decision, cost_matrix_named
from .modelfile import ModelFileError, load_tagger

BATCH = 500  # sentences tagged in one call of the tagger


def tag_sentences(
    tagger,
    sentences: Iterable[ConlluSentence],
    *,
    column: str = "upos",
    probabilities=False,
    cost: np.ndarray | None = None,
) -> Iterator[str]:
    """Each sentence as CoNLL-U text, its lines as read with the ``column`` tags predicted by
    ``tagger`` (of least expected ``cost``, K × K over its tags; None: the most probable);
    tagged ``BATCH`` sentences at a time, so a corpus of any size streams."""
    batch: list[ConlluSentence] = []
    for sentence in sentences:
        batch.append(sentence)
        if len(batch) >= BATCH:
            yield from _tagged(tagger, batch, column, probabilities, cost)
            batch = []
    if batch:
        yield from _tagged(tagger, batch, column, probabilities, cost)


def model_cost_matrix(tagger, metadata: dict) -> np.ndarray | None:
    """The cost matrix a model file carries (written when the dashboard exports it, the
    project's matrix at that moment), in the order of the tagger's tags (None: none)."""
    carried = metadata.get("cost_matrix")
    if not isinstance(carried, dict):
        return None
    try:
        costs = TagCosts.table(
            carried.get("matrix"), rows=carried.get("tags"), tagset=tagger.tagset_,
            where="the model file's cost matrix tags",
        )  # fmt: skip
    except CostMatrixError as exc:
        raise ModelFileError(f"malformed cost matrix: {exc}") from exc
    return costs.over(tagger.tagset_)


def _tagged(tagger, batch, column, probabilities, cost) -> Iterator[str]:
    probs = tagger.token_proba([sentence.tokens for sentence in batch])
    best = bayes_decision(probs, cost)
    start = 0
    for sentence in batch:
        rows = range(start, start + len(sentence.tokens))
        start += len(sentence.tokens)
        misc = [f"Prob={probs[r, best[r]]:.3f}" for r in rows] if probabilities else None
        tags = [tagger.tagset_[best[r]] for r in rows]
        yield conllu_sentence(
            sentence.tokens, tags, source=sentence.lines, column=column, misc=misc
        )


def main(argv: list[str] | None = None, stdin: TextIO | None = None, stdout=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m learning.core.tag",
        description="Tag a CoNLL-U file with a Tally model file (.npz); every other line kept.",
    )
    parser.add_argument("model", help="the model file (.npz) downloaded from Tally")
    parser.add_argument("input", nargs="?", help="CoNLL-U file, plain or .gz (default: stdin)")
    parser.add_argument("-o", "--output", help="where to write (default: stdout)")
    parser.add_argument("--column", choices=("upos", "xpos"), default="upos")
    parser.add_argument("--probabilities", action="store_true", help="add Prob= to MISC")
    parser.add_argument(
        "--text", metavar="LANG", help="the input is running text in LANG (en, fr, nl, ...)"
    )
    parser.add_argument(
        "--cost-matrix",
        metavar="NAME|FILE",
        help=f"choose tags for this cost matrix: {', '.join(PRESETS)} or a CSV file "
        "(default: the project's, carried by the model file)",
    )
    args = parser.parse_args(argv)
    try:
        tagger, metadata = load_tagger(args.model)
        cost = model_cost_matrix(tagger, metadata)
    except (ModelFileError, FileNotFoundError) as exc:
        print(f"tag: {args.model}: {exc}", file=sys.stderr)
        return 2
    if args.cost_matrix:
        try:
            cost = cost_matrix_named(args.cost_matrix, tagger.tagset_)
        except ValueError as exc:
            print(f"tag: --cost-matrix: {exc}", file=sys.stderr)
            return 2
    if args.text:
        try:
            sentences = _text_sentences(args.input, stdin, args.text)
        except (ImportError, ValueError, FileNotFoundError) as exc:
            print(f"tag: --text: {exc}", file=sys.stderr)
            return 2
    elif args.input:
        sentences = read_conllu(args.input)
    else:
        stream = stdin or io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline="")
        sentences = iter_conllu(stream)
    out = open(args.output, "w", encoding="utf-8") if args.output else stdout or sys.stdout  # noqa: SIM115
    try:
        for text in tag_sentences(
            tagger, sentences, column=args.column, probabilities=args.probabilities, cost=cost
        ):
            out.write(text)
    except (ConlluError, FileNotFoundError) as exc:
        print(f"tag: {args.input or '<stdin>'}: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.output:
            out.close()
    return 0


def _text_sentences(path: str | None, stdin: TextIO | None, language: str):
    """Running text as sentences with CoNLL-U lines of their own (id, text, words)."""
    from common.text import LANGUAGES, text_sentences  # spaCy and NLTK: only for --text

    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}: one of {', '.join(LANGUAGES)}")
    return _text_lines(path, stdin, language, text_sentences)


def _text_lines(path, stdin, language, text_sentences) -> Iterator[ConlluSentence]:
    stream = (
        open(path, encoding="utf-8")  # noqa: SIM115 (read lazily, closed at exit)
        if path
        else stdin or io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    )
    for n, sentence in enumerate(text_sentences(stream, language=language), start=1):
        text = " ".join(sentence.text.split())
        comments = [("sent_id", n), ("text", text)]
        lines = conllu_sentence(sentence.tokens, ["_"] * len(sentence.tokens), comments=comments)
        yield ConlluSentence(tokens=sentence.tokens, lines=lines.rstrip("\n").split("\n"))


if __name__ == "__main__":
    raise SystemExit(main())
