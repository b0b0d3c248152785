"""Predictions of the current model: posted text tagged (any member), the corpus tagged (export).

Both need the project's current version (`NoModel` when there is none yet); the tagger is read
through `learning.selectors` (cached per process).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from annotation.selectors import multiword_splits
from common.exceptions import InvalidInput, PayloadTooLarge
from common.text import TextTooSlow, text_sentences
from learning import adapter, costs, selectors
from learning.core.conllu import conllu_sentence, split_multiword
from learning.exceptions import NoModel
from learning.models import ModelVersion

MAX_TEXT_CHARS = 10_000
MAX_TOKENS = 1_000
ALTERNATIVES = 3
EXPORT_BATCH = 500  # sentences tagged in one call of the tagger


log = logging.getLogger(__name__)
_warmed: set[str] = set()  # languages whose tokenizer this process has loaded or is loading
_warm_lock = threading.Lock()


def warm_up(*, language: str) -> threading.Thread | None:
    """Load in the background what a first "try the model" waits for longest: the language's
    tokenizer and the sentence splitter (seconds: spaCy's rules, NLTK's Punkt), once per process.
    The dashboard starts it as it opens, before the manager has typed a sentence; the model
    itself loads in a fraction of that on the first call and stays loaded. Returns the thread
    (None when already done or under way)."""
    with _warm_lock:
        if language in _warmed:
            return None
        _warmed.add(language)

    def load() -> None:
        try:
            list(text_sentences(["Warm up."], language=language))
        except (OSError, ValueError, LookupError):  # left to the first call, which reports it
            log.warning("tokenizer warm-up for %r failed", language, exc_info=True)
            with _warm_lock:
                _warmed.discard(language)

    thread = threading.Thread(target=load, name=f"warm-up-{language}", daemon=True)
    thread.start()
    return thread


def current_version(*, project_id: int) -> ModelVersion:
    """The version predictions use (`selectors.current_version`), read with its project's cost
    matrix revision in the same query, so the matrix costs no query once read
    (`costs.served_costs`)."""
    version = (
        costs.with_cost_revision(ModelVersion.objects.filter(project_id=project_id))
        .order_by("-number")
        .first()
    )
    if version is None:
        raise NoModel("This project has no model yet; it is trained once annotations arrive.")
    return version


def text_tag(*, project_id: int, text: str, language: str) -> dict:
    """`text` cut into sentences and tokens by the project's tokenizer (the one its plain text
    imports used), and the written forms its corpus splits into words split the same way (French
    "au" -> "à" "le", as UD's CoNLL-U has it), each sentence tagged whole by the current
    version's live model once it has published (else the version itself): each token's tag (the
    decision of least expected cost in the project's cost matrix) and its probability, the
    `ALTERNATIVES` most probable tags, and the sentences as token ranges."""
    if len(text) > MAX_TEXT_CHARS:
        raise PayloadTooLarge(f"The text is longer than {MAX_TEXT_CHARS} characters.")
    splits = multiword_splits(project_id=project_id)
    try:
        sentences = [
            split_multiword(s.tokens, splits) if splits else s.tokens
            for s in text_sentences(text.splitlines(), language=language)
        ]
    except TextTooSlow as exc:  # NLTK's time limit, reached on a busy server: not a 500
        raise InvalidInput(
            "This text took too long to cut into sentences; try again, or try a shorter text.",
            fields={"text": ["Took too long to cut into sentences."]},
        ) from exc
    sentences = [tokens for tokens in sentences if tokens]
    tokens = [token for sentence in sentences for token in sentence]
    if not tokens:
        raise InvalidInput("Nothing to tag.", fields={"text": ["Give some words to tag."]})
    if len(tokens) > MAX_TOKENS:
        raise PayloadTooLarge(f"The text has more than {MAX_TOKENS} words.")
    version = current_version(project_id=project_id)
    tagger, live = selectors.served_tagger(version=version)
    tagset = tagger.tagset_
    probs = tagger.token_proba(sentences)
    best = costs.decide(probs, costs.served_costs(version=version), tagset)
    top = (-probs).argsort(axis=1)[:, :ALTERNATIVES]
    ranges, start = [], 0
    for sentence in sentences:
        ranges.append([start, start + len(sentence)])
        start += len(sentence)
    return {
        "version": version.number,
        "live": live,
        "tokens": tokens,
        "sentences": ranges,
        "tags": [tagset[k] for k in best],
        "probabilities": [round(float(probs[i, k]), 4) for i, k in enumerate(best)],
        "alternatives": [
            [{"tag": tagset[k], "probability": round(float(probs[i, k]), 4)} for k in row]
            for i, row in enumerate(top)
        ],
    }


def corpus_conllu(
    *, project_id: int, version: ModelVersion, source_misc: bool = False
) -> Iterator[str]:
    """Every sentence of the project tagged by `version`, as CoNLL-U, `EXPORT_BATCH` sentences
    at a time. A sentence imported from CoNLL-U is written as it was read with only its tag
    column (the import's, UPOS or XPOS) changed, so the export diffs against the source line by
    line; with `source_misc` its MISC also gets the probability, as the other sentences' do. The
    others get `# sent_id`, `# split`, `# model_version`, `# text`, the predicted tag in UPOS and
    `Prob=` (and `Gold=`, if any) in MISC. The tags are the decisions of least expected cost in
    the project's cost matrix."""
    tagger = selectors.tagger_of(version=version)
    setting = costs.served_costs(version=version)
    batch: list[adapter.CorpusRow] = []
    for row in adapter.corpus_sentences(project_id=project_id):
        batch.append(row)
        if len(batch) >= EXPORT_BATCH:
            yield _tagged(batch, tagger, setting, version.number, source_misc)
            batch = []
    if batch:
        yield _tagged(batch, tagger, setting, version.number, source_misc)


def _tagged(batch: list[adapter.CorpusRow], tagger, setting, number: int, source_misc) -> str:
    """The batch tagged with the decisions of least cost in `setting` (`costs.decide`: the
    stored matrix, or None)."""
    tagset = tagger.tagset_
    probs = tagger.token_proba([row.tokens for row in batch])
    best = costs.decide(probs, setting, tagset)
    out, position = [], 0
    for row in batch:
        rows = range(position, position + len(row.tokens))
        position += len(row.tokens)
        tags = [tagset[best[r]] for r in rows]
        misc = [
            f"Prob={probs[r, best[r]]:.3f}" + (f"|Gold={tagset[row.gold[j]]}" if row.gold else "")
            for j, r in enumerate(rows)
        ]
        if row.source:
            out.append(
                conllu_sentence(
                    row.tokens,
                    tags,
                    source=row.source.split("\n"),
                    column=row.tag_column,
                    misc=[m.partition("|Gold=")[0] for m in misc] if source_misc else None,
                )
            )
            continue
        comments = [
            ("sent_id", row.id),
            ("split", row.split),
            ("model_version", number),
            ("text", row.text or " ".join(row.tokens)),
        ]
        out.append(conllu_sentence(row.tokens, tags, comments=comments, misc=misc))
    return "".join(out)
