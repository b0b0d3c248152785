"""Predictions of the current model: posted text tagged (any member), the corpus tagged (export).

Both need the project's current version (`NoModel` when there is none yet); the tagger is read
through `learning.selectors` (cached per process).
"""

from __future__ import annotations

from collections.abc import Iterator

from common.exceptions import InvalidInput, PayloadTooLarge
from learning import adapter, selectors
from learning.core.conllu import conllu_sentence
from learning.exceptions import NoModel
from learning.models import ModelVersion

MAX_TEXT_CHARS = 10_000
MAX_TOKENS = 1_000
ALTERNATIVES = 3
EXPORT_BATCH = 500  # sentences tagged in one call of the tagger


def current_version(*, project_id: int) -> ModelVersion:
    version = selectors.current_version(project_id=project_id)
    if version is None:
        raise NoModel("This project has no model yet; it is trained once annotations arrive.")
    return version


def text_tag(*, project_id: int, text: str) -> dict:
    """`text`, split on white space, tagged by the current version: each token's tag and its
    probability, and the `ALTERNATIVES` most probable tags."""
    if len(text) > MAX_TEXT_CHARS:
        raise PayloadTooLarge(f"The text is longer than {MAX_TEXT_CHARS} characters.")
    tokens = text.split()
    if not tokens:
        raise InvalidInput("Nothing to tag.", fields={"text": ["Give some words to tag."]})
    if len(tokens) > MAX_TOKENS:
        raise PayloadTooLarge(f"The text has more than {MAX_TOKENS} words.")
    version = current_version(project_id=project_id)
    tags, probabilities, probs = selectors.predict_tokens(version=version, tokens=tokens)
    tagset = selectors.tagger_of(version=version).tagset_
    top = (-probs).argsort(axis=1)[:, :ALTERNATIVES]
    return {
        "version": version.number,
        "tokens": tokens,
        "tags": tags,
        "probabilities": [round(p, 4) for p in probabilities],
        "alternatives": [
            [{"tag": tagset[k], "probability": round(float(probs[i, k]), 4)} for k in row]
            for i, row in enumerate(top)
        ],
    }


def corpus_conllu(*, project_id: int, version: ModelVersion) -> Iterator[str]:
    """Every sentence of the project tagged by `version`, as CoNLL-U: the predicted tag in the
    UPOS column, its probability (and the gold tag, if any) in MISC; tagged `EXPORT_BATCH`
    sentences at a time."""
    tagger = selectors.tagger_of(version=version)
    batch: list = []
    for row in adapter.corpus_sentences(project_id=project_id):
        batch.append(row)
        if len(batch) >= EXPORT_BATCH:
            yield _tagged(batch, tagger, version.number)
            batch = []
    if batch:
        yield _tagged(batch, tagger, version.number)


def _tagged(batch: list, tagger, number: int) -> str:
    tagset = tagger.tagset_
    probs = tagger.token_proba([tokens for _, _, tokens, _ in batch])
    best = probs.argmax(axis=1)
    out, position = [], 0
    for sentence_id, split, tokens, gold in batch:
        rows = range(position, position + len(tokens))
        position += len(tokens)
        misc = [
            f"Prob={probs[r, best[r]]:.3f}" + (f"|Gold={tagset[gold[j]]}" if gold else "")
            for j, r in enumerate(rows)
        ]
        comments = [
            ("sent_id", sentence_id),
            ("split", split),
            ("model_version", number),
            ("text", " ".join(tokens)),
        ]
        out.append(
            conllu_sentence(tokens, [tagset[best[r]] for r in rows], comments=comments, misc=misc)
        )
    return "".join(out)
