"""Who may tag text with a project's model (`POST predict/`), and on which text.

The model's tags for a task's words are the answer to the task as the model would give it, and
an annotator's reliability is judged (among others) against the model: an annotator who can ask
the model answers "reliably" without reading (issue 44). So the project's managers may tag any
text; an annotator only where a manager opted in (`Project.annotators_may_predict`), and even
then not text from the project's own sentences while the project serves them as tasks (any run
of `RUN` consecutive words of one of them, compared case-folded after the project's own
tokenizer has cut the text). What that leaves an annotator is the model on a word or two at a
time, out of context: what the opt-in accepts (learning/API.md says so).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np
from django.db.models import Count, Max

from annotation.models import Project, Sentence
from annotation.selectors import multiword_splits
from common.exceptions import InvalidInput, NotAllowed
from common.text import TextTooSlow, text_sentences
from learning.core.conllu import split_multiword

RUN = 3  # consecutive words shared with a project sentence that refuse the text
_BITS = 21  # a word's number in a run's key: 3 x 21 bits fit an int64

_lock = threading.Lock()
# project id -> ((sentence count, last sentence id), word numbers, sorted run keys)
_runs: dict[int, tuple[tuple[int, int], dict[str, int], np.ndarray]] = {}
_CACHED_PROJECTS = 8


def _keys(numbers: Sequence[int]) -> np.ndarray:
    """The key of each run of `RUN` consecutive word numbers."""
    ids = np.asarray(numbers, dtype=np.int64)
    if len(ids) < RUN:
        return np.empty(0, dtype=np.int64)
    key = np.zeros(len(ids) - RUN + 1, dtype=np.int64)
    for offset in range(RUN):
        key = (key << _BITS) | ids[offset : offset + len(key)]
    return key


def _project_runs(project_id: int) -> tuple[dict[str, int], np.ndarray]:
    """The words of the project's sentences (numbered) and the keys of their runs, built once
    per process and again when sentences were added or removed."""
    row = Sentence.objects.filter(project_id=project_id).aggregate(n=Count("id"), last=Max("id"))
    stamp = (row["n"], row["last"] or 0)
    with _lock:
        cached = _runs.get(project_id)
        if cached is not None and cached[0] == stamp:
            return cached[1], cached[2]
    words: dict[str, int] = {}
    keys = []
    rows = Sentence.objects.filter(project_id=project_id).values_list("tokens", flat=True)
    for tokens in rows.iterator(chunk_size=2000):
        numbers = [words.setdefault(token.casefold(), len(words) + 1) for token in tokens]
        keys.append(_keys(numbers))
    if len(words) >= 2**_BITS:  # more words than a key holds: compare runs of their hashes
        words = {word: (hash(word) & (2**_BITS - 1)) or 1 for word in words}
        keys = [_keys([words[t.casefold()] for t in tokens]) for tokens in rows.iterator()]
    runs = np.unique(np.concatenate(keys)) if keys else np.empty(0, dtype=np.int64)
    with _lock:
        if len(_runs) >= _CACHED_PROJECTS:
            _runs.pop(next(iter(_runs)))
        _runs[project_id] = (stamp, words, runs)
    return words, runs


def _shares_a_run(project_id: int, sentences: Iterable[list[str]]) -> bool:
    words, runs = _project_runs(project_id)
    for tokens in sentences:
        numbers = [words.get(token.casefold(), 0) for token in tokens]
        # A word the project does not have is 0: no run of the project has it.
        if np.isin(_keys(numbers), runs).any():
            return True
    return False


def predict_allowed(*, project: Project, is_manager: bool) -> None:
    """Refuse (`NotAllowed`, 403) an annotator of a project whose managers did not let
    annotators tag text with the model."""
    if not is_manager and not project.annotators_may_predict:
        raise NotAllowed(
            "Only the project's managers may tag text with its model: the model's tags would "
            "answer your tasks for you. A manager can let annotators try it "
            "(the project's `annotators_may_predict`)."
        )


def predict_check(*, project: Project, is_manager: bool, text: str, max_chars: int) -> None:
    """Refuse (`NotAllowed`, 403) a caller who may not tag `text` with the project's model:
    an annotator where `predict_allowed` refuses, or text that shares a run of `RUN` words
    with one of the project's sentences while it serves tasks. Managers may tag anything; a
    text over `max_chars` is left to the tagger's own refusal."""
    predict_allowed(project=project, is_manager=is_manager)
    if is_manager or project.status == Project.Status.ARCHIVED or len(text) > max_chars:
        return
    splits = multiword_splits(project_id=project.pk)
    try:
        sentences = [
            split_multiword(s.tokens, splits) if splits else s.tokens
            for s in text_sentences(text.splitlines(), language=project.language)
        ]
    except TextTooSlow as exc:
        raise InvalidInput(
            "This text took too long to cut into sentences; try again, or try a shorter text.",
            fields={"text": ["Took too long to cut into sentences."]},
        ) from exc
    if _shares_a_run(project.pk, sentences):
        raise NotAllowed(
            f"This text has {RUN} words in a row from this project's own sentences, which are "
            "its tasks: the model does not tag them for annotators. Try it on other text.",
            fields={"text": ["Words from the project's own sentences."]},
        )
