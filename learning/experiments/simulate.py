"""A seeded simulated crowd answering region-count tasks on a gold-tagged corpus.

Tasks follow the paper's supervision ``S(o | y)``: for each sentence, ``obs_per_sentence`` windows
of ``window`` tokens with a uniformly random start (the whole sentence when it is shorter), and a
uniformly random subset ``B`` of ``tags_per_task`` tags (or all tags). Each task goes to an
annotator drawn uniformly from the crowd, whose kind decides the answer:

* ``exact``   — the true counts ``N[b] = #{j ∈ r : y_j = b}``;
* ``noisy``   — the true counts, but with probability ``noise_rate`` one asked count is off by one
  (direction random, kept valid: ``0 ≤ N[b]`` and ``Σ N ≤ w``);
* ``spammer`` — a count vector drawn uniformly from all valid answers (a uniform composition of
  ``w`` into the asked tags plus "other"), independent of the sentence;
* ``yes-sayer`` — counts like ``exact``, but answers Yes to every verification question;
* ``copier``  — gives back the served model's expected counts, rounded, without reading the
  words (:func:`answers_copied`: someone who reads them off predict); until a model is served,
  their rows hold the true counts and a simulation leaves them out.

A fractional ``obs_per_sentence`` gives that share of the sentences, drawn at random, one more
task (0.1: a tenth of the sentences get one task each, a small budget).
:func:`simulate_verifications` asks the same crowd verification questions ("are all of these tags
right?", :mod:`.verification`) about a model's predicted tags: an exact annotator answers
truthfully and, after a No, taps the first wrong word; a noisy one gives the wrong answer with
probability ``noise_rate``; a spammer answers Yes or No at random (and taps a random word after a
No); a yes-sayer always answers Yes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from learning.core.observations import Observations
from learning.core.verification import VerificationAnswers, log_sure_by_start

__all__ = [
    "ANNOTATOR_KINDS",
    "SimulatedCrowd",
    "answers_copied",
    "simulate_crowd",
    "simulate_verifications",
    "simulated_answer",
]

ANNOTATOR_KINDS = ("exact", "noisy", "spammer", "yes-sayer", "copier")


@dataclass(frozen=True)
class SimulatedCrowd:
    """The observations and the hidden kind of every annotator (``annotator_kind[a]`` for id
    ``a`` in ``0..n_annotators-1``)."""

    observations: Observations
    annotator_kind: np.ndarray

    def annotators_of_kind(self, kind: str) -> np.ndarray:
        return np.flatnonzero(self.annotator_kind == kind)


def simulate_crowd(
    gold_tags: Sequence[Sequence[int]],
    n_tags: int,
    *,
    window: int,
    obs_per_sentence: float = 1,
    tags_per_task: int | None = None,
    n_annotators: int = 20,
    spam_fraction: float = 0.0,
    noisy_fraction: float = 0.0,
    yes_sayer_fraction: float = 0.0,
    copier_fraction: float = 0.0,
    noise_rate: float = 0.2,
    kinds: np.ndarray | None = None,
    random_state: int | np.random.Generator | None = None,
) -> SimulatedCrowd:
    """Simulate answers. ``gold_tags[s]`` are the tag indices (0..n_tags-1) of sentence ``s``;
    ``tags_per_task=None`` asks all tags. Annotator kinds are assigned at random with
    ``round(spam_fraction · n_annotators)`` spammers, ``round(noisy_fraction · n_annotators)``
    noisy annotators, ``round(yes_sayer_fraction · n_annotators)`` yes-sayers and
    ``round(copier_fraction · n_annotators)`` copiers; ``kinds`` gives them instead (another
    round of the same crowd: ``crowd.annotator_kind``).
    ``obs_per_sentence``: tasks per sentence; its fractional part is the share of the sentences,
    drawn at random, that get one more (0.1: one task on a tenth of the sentences)."""
    if window < 1:
        raise ValueError("window must be at least 1")
    if not obs_per_sentence > 0:
        raise ValueError("obs_per_sentence must be positive")
    if tags_per_task is not None and not 1 <= tags_per_task <= n_tags:
        raise ValueError(f"tags_per_task must be between 1 and {n_tags}")
    if n_annotators < 1:
        raise ValueError("n_annotators must be at least 1")
    fractions = (spam_fraction, noisy_fraction, yes_sayer_fraction, copier_fraction)
    if not all(0 <= f <= 1 for f in fractions):
        raise ValueError("the fractions of spammers, noisy annotators, yes-sayers and copiers "
                         "must be in [0, 1]")  # fmt: skip
    if sum(fractions) > 1:
        raise ValueError("the fractions of spammers, noisy annotators, yes-sayers and copiers "
                         "must not add up to more than 1")  # fmt: skip
    rng = np.random.default_rng(random_state)

    lengths = np.array([len(t) for t in gold_tags], dtype=np.int64)
    usable = np.flatnonzero(lengths > 0)
    flat = np.concatenate([np.asarray(t, dtype=np.int64) for t in gold_tags] + [np.zeros(0, int)])
    if flat.size and (flat.min() < 0 or flat.max() >= n_tags):
        raise ValueError("gold tag index outside 0..n_tags-1")

    whole, share = divmod(float(obs_per_sentence), 1.0)
    sentence = np.repeat(usable, int(whole))
    if share > 0:
        extra = usable[rng.random(usable.shape[0]) < share]
        sentence = np.sort(np.concatenate([sentence, extra]), kind="stable")
    n = sentence.shape[0]
    sentence_length = lengths[sentence]
    length = np.minimum(window, sentence_length)
    start = (rng.random(n) * (sentence_length - length + 1)).astype(np.int64)
    true_counts = _window_counts(gold_tags, n_tags, sentence, start, length)

    if tags_per_task is None:
        mask = np.ones((n, n_tags), dtype=bool)
    else:
        chosen = np.argsort(rng.random((n, n_tags)), axis=1)[:, :tags_per_task]
        mask = np.zeros((n, n_tags), dtype=bool)
        np.put_along_axis(mask, chosen, True, axis=1)

    n_spam = int(round(spam_fraction * n_annotators))
    n_noisy = int(round(noisy_fraction * n_annotators))
    n_yes = int(round(yes_sayer_fraction * n_annotators))
    n_copy = int(round(copier_fraction * n_annotators))
    drawn = np.array(
        ["spammer"] * n_spam
        + ["noisy"] * n_noisy
        + ["yes-sayer"] * n_yes
        + ["exact"] * (n_annotators - n_spam - n_noisy - n_yes - n_copy)
        + ["copier"] * n_copy
    )
    drawn = drawn[rng.permutation(n_annotators)]
    if kinds is None:
        kinds = drawn
    elif len(kinds) != n_annotators or not np.isin(kinds, ANNOTATOR_KINDS).all():
        raise ValueError(f"kinds must give one of {ANNOTATOR_KINDS} to each of the annotators")
    annotator, counts = _answered(kinds, true_counts, mask, length, rng, noise_rate)

    observations = Observations.create(
        sentence=sentence,
        start=start,
        length=length,
        tag_mask=mask,
        counts=counts,
        annotator=annotator,
        sentence_lengths=lengths,
        allow_empty=True,
    )
    return SimulatedCrowd(observations=observations, annotator_kind=kinds)


def answers_copied(
    crowd: SimulatedCrowd, token_proba: np.ndarray, sentence_lengths: np.ndarray
) -> SimulatedCrowd:
    """``crowd`` with every copier's answer replaced by the served model's expected counts,
    rounded (``token_proba``: that model's (tokens, K) probabilities of the sentences of
    ``sentence_lengths`` tokens, in order), kept valid (at most the window's length in all)."""
    obs = crowd.observations
    copies = np.isin(obs.annotator, crowd.annotators_of_kind("copier"))
    offsets = np.concatenate([[0], np.cumsum(sentence_lengths)])
    counts = obs.counts.copy()
    for i in np.flatnonzero(copies):
        begin = offsets[obs.sentence[i]] + obs.start[i]
        expected = token_proba[begin : begin + obs.length[i]].sum(axis=0)
        answer = np.where(obs.tag_mask[i], np.rint(expected), 0).astype(np.int64)
        while answer.sum() > obs.length[i]:  # rounded up past the window: lower the least sure
            over = np.where(answer > 0, answer - expected, -np.inf)
            answer[np.argmax(over)] -= 1
        counts[i] = answer
    return replace(crowd, observations=replace(obs, counts=counts))


def _window_counts(gold_tags, n_tags, sentence, start, length) -> np.ndarray:
    """The true count of every tag in each window, (n, n_tags)."""
    lengths = np.array([len(t) for t in gold_tags], dtype=np.int64)
    flat = np.concatenate([np.asarray(t, dtype=np.int64) for t in gold_tags] + [np.zeros(0, int)])
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    cumulative = np.zeros((flat.shape[0] + 1, n_tags), dtype=np.int32)
    np.cumsum(np.eye(n_tags, dtype=np.int32)[flat], axis=0, out=cumulative[1:])
    first = offsets[sentence] + start
    return (cumulative[first + length] - cumulative[first]).astype(np.int64)


def _drawn(n_annotators: int, serving: np.ndarray | None, size: int, rng) -> np.ndarray:
    """``size`` annotators drawn uniformly among those the platform serves tasks to
    (``serving``; None: the whole crowd)."""
    if serving is None:
        return rng.integers(0, n_annotators, size=size)
    if serving.size == 0:
        raise ValueError("every annotator is flagged: the platform serves no one these tasks")
    return np.asarray(serving)[rng.integers(0, serving.size, size=size)]


def _answered(kinds, true_counts, mask, length, rng, noise_rate, serving=None):
    """Each task's annotator, drawn uniformly from those served, and their answer."""
    annotator = _drawn(kinds.shape[0], serving, mask.shape[0], rng)
    counts = np.where(mask, true_counts, 0)
    kind_of = kinds[annotator]
    # Spammers first, then noisy annotators: the order the random draws are made in.
    for kind in ("spammer", "noisy"):
        for i in np.flatnonzero(kind_of == kind):
            counts[i] = simulated_answer(
                kind, counts[i], mask[i], int(length[i]), rng, noise_rate=noise_rate
            )
    return annotator, counts


def answer_counts(
    crowd: SimulatedCrowd,
    gold_tags: Sequence[Sequence[int]],
    sentence: np.ndarray,
    start: np.ndarray,
    length: np.ndarray,
    tag_mask: np.ndarray,
    rng: np.random.Generator,
    *,
    noise_rate: float = 0.2,
    serving: np.ndarray | None = None,
) -> Observations:
    """``crowd``'s answers to given count tasks (a round chosen by a policy), each by an
    annotator drawn uniformly among ``serving`` (default: all; the platform serves a flagged
    annotator gold checks only), who answers as their kind does (module docstring)."""
    lengths = np.array([len(t) for t in gold_tags], dtype=np.int64)
    true_counts = _window_counts(gold_tags, tag_mask.shape[1], sentence, start, length)
    annotator, counts = _answered(crowd.annotator_kind, true_counts, tag_mask, length, rng,
                                  noise_rate, serving)  # fmt: skip
    return Observations.create(
        sentence=sentence,
        start=start,
        length=length,
        tag_mask=tag_mask,
        counts=counts,
        annotator=annotator,
        sentence_lengths=lengths,
        allow_empty=True,
    )


def simulated_answer(
    kind: str,
    true_counts: np.ndarray,
    mask: np.ndarray,
    window: int,
    rng: np.random.Generator,
    *,
    noise_rate: float = 0.2,
) -> np.ndarray:
    """The answer an annotator of ``kind`` gives to one task whose true counts over all tags are
    ``true_counts`` (entries outside ``mask`` are ignored and come back as 0)."""
    if kind not in ANNOTATOR_KINDS:
        raise ValueError(f"unknown annotator kind {kind!r}; expected one of {ANNOTATOR_KINDS}")
    counts = np.where(mask, true_counts, 0)
    if kind == "spammer":
        return _uniform_answer(mask, window, rng)
    if kind == "noisy" and rng.random() < noise_rate:
        return _off_by_one(counts, mask, window, rng)
    return counts


def _uniform_answer(mask: np.ndarray, w: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random composition of ``w`` into the asked tags (+ "other" unless all)."""
    asked = np.flatnonzero(mask)
    m = asked.shape[0] + (0 if mask.all() else 1)
    bars = np.sort(rng.choice(w + m - 1, size=m - 1, replace=False))
    parts = np.diff(np.concatenate([[-1], bars, [w + m - 1]])) - 1
    answer = np.zeros(mask.shape[0], dtype=np.int64)
    answer[asked] = parts[: asked.shape[0]]
    return answer


def _off_by_one(counts: np.ndarray, mask: np.ndarray, w: int, rng: np.random.Generator):
    answer = counts.copy()
    b = rng.choice(np.flatnonzero(mask))
    step = int(rng.choice((-1, 1)))
    for delta in (step, -step):
        if answer[b] + delta >= 0 and answer.sum() + delta <= w:
            answer[b] += delta
            break
    return answer


def simulate_verifications(
    crowd: SimulatedCrowd,
    gold_tags: Sequence[Sequence[int]],
    token_probs: np.ndarray,
    *,
    window: int,
    per_sentence: int = 1,
    choice: str = "uncertain",
    tap: bool = True,
    noise_rate: float = 0.2,
    random_state: int | np.random.Generator | None = None,
) -> VerificationAnswers:
    """Verification questions about a model's guesses, answered by ``crowd``'s annotators.

    ``token_probs`` (n_tokens, K): the model's tag probabilities of every token of the corpus (in
    sentence order); each question shows the most probable tag of each word of a window.
    ``choice``: ``"uncertain"`` asks, in each sentence, about the ``per_sentence`` windows whose
    shown tags the model is least sure of (lowest ``P(all right)``; they do not overlap), which
    depends on the text and the model only, so the E-step stays exact; ``"random"`` draws window
    starts uniformly. ``tap``: a No comes with the first wrong word (else none)."""
    if choice not in ("uncertain", "random"):
        raise ValueError("choice must be 'uncertain' or 'random'")
    if per_sentence < 1:
        raise ValueError("per_sentence must be at least 1")
    rng = np.random.default_rng(random_state)
    lengths = np.array([len(t) for t in gold_tags], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    sentences, starts = [], []
    for s in np.flatnonzero(lengths > 0):
        w = min(window, int(lengths[s]))
        n_starts = int(lengths[s]) - w + 1
        if choice == "random":
            chosen = rng.integers(0, n_starts, size=per_sentence)
        else:
            sure = log_sure_by_start(token_probs[offsets[s] : offsets[s] + lengths[s]], w)
            chosen = []
            for start in np.argsort(sure, kind="stable"):
                if all(abs(int(start) - c) >= w for c in chosen):
                    chosen.append(int(start))
                if len(chosen) == per_sentence:
                    break
        for start in chosen:
            sentences.append(s)
            starts.append(int(start))
    return answer_verifications(
        crowd,
        gold_tags,
        token_probs,
        np.asarray(sentences, dtype=np.int64),
        np.asarray(starts, dtype=np.int64),
        window,
        rng,
        tap=tap,
        noise_rate=noise_rate,
    )


def answer_verifications(
    crowd: SimulatedCrowd,
    gold_tags: Sequence[Sequence[int]],
    token_probs: np.ndarray,
    sentence: np.ndarray,
    start: np.ndarray,
    window: int,
    rng: np.random.Generator,
    *,
    tap: bool = True,
    noise_rate: float = 0.2,
    serving: np.ndarray | None = None,
) -> VerificationAnswers:
    """``crowd``'s answers to verification questions on given windows (``sentence``, ``start``;
    ``window`` tokens or the whole sentence), each showing the model's most likely tags, by
    annotators drawn among ``serving`` (default: all)."""
    lengths = np.array([len(t) for t in gold_tags], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    flat_gold = np.concatenate(
        [np.asarray(t, dtype=np.int64) for t in gold_tags] + [np.zeros(0, int)]
    )
    guess = token_probs.argmax(axis=1)
    n = sentence.shape[0]
    length = np.minimum(window, lengths[sentence])
    w_max = int(length.max()) if n else 0
    position = np.arange(w_max)[None, :]
    inside = position < length[:, None]
    index = np.where(inside, offsets[sentence][:, None] + start[:, None] + position, 0)
    shown = np.where(inside, guess[index], -1)
    right = np.where(inside, guess[index] == flat_gold[index], True)
    truthful = right.all(axis=1)
    first_wrong = np.where(truthful, -1, np.argmax(~right, axis=1))

    annotator = _drawn(crowd.annotator_kind.shape[0], serving, n, rng)
    kind = crowd.annotator_kind[annotator]
    answer = truthful.copy()
    wrong = first_wrong.copy()
    flip = (kind == "noisy") & (rng.random(n) < noise_rate)
    answer[flip] = ~answer[flip]
    wrong[flip & ~answer] = (
        rng.random(int((flip & ~answer).sum())) * length[flip & ~answer]
    ).astype(np.int64)
    spam = kind == "spammer"
    answer[spam] = rng.random(int(spam.sum())) < 0.5
    wrong[spam & ~answer] = (
        rng.random(int((spam & ~answer).sum())) * length[spam & ~answer]
    ).astype(np.int64)
    answer[kind == "yes-sayer"] = True
    wrong[answer] = -1
    if not tap:
        wrong[:] = -1
    return VerificationAnswers.create(
        sentence=sentence,
        start=start,
        shown=shown,
        answer=answer,
        wrong=wrong,
        annotator=annotator,
        sentence_lengths=lengths,
        n_tags=token_probs.shape[1],
    )
