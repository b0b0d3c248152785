"""``manage.py learning_curves``: docs/benchmarks.md's studies, run point by point with
simulate_crowd's pipeline, printed as one JSON object and drawn as an SVG chart.

    python manage.py learning_curves verification --train T --test S --svg docs/verification.svg
    python manage.py learning_curves privacy --train T --test S --svg docs/privacy.svg
    python manage.py learning_curves campaign --train T --test S --svg docs/adaptive-curve.svg
    python manage.py learning_curves online --train T --test S --svg docs/online-curve.svg

- ``verification``: accuracy against the number of answers, count tasks only and count tasks plus
  one verification task per sentence, at 0.1, 0.25, 0.5 and 1 count task per sentence (each run
  also scores the count-only model given the verification answers' number as more count tasks).
- ``privacy``: accuracy of the moments and of the refined model against the privacy level α per
  answer (1, 3, 8; ∞ is the same tasks answered without privacy), 10 tasks per sentence of one tag,
  and the share of a count's information a release keeps at each α (for the training corpus'
  counts: :meth:`.privacy.Mechanism.information_share`).
- ``campaign``: accuracy against answers of two simulated campaigns (``simulate_campaign``: window
  5, 2 tags per task, 1 uniform task per sentence, then 3 rounds up to 3 tasks per sentence), tasks
  drawn uniformly against tasks chosen where the model learns most.
- ``online``: the online learner's accuracy along a stream of 100 blocks (``simulate_crowd
  --online 100``) against batch fits on the answers so far, at 10, 25, 50 and 100 % of the stream,
  for 1 task per sentence asking all tags and for 3 tasks per sentence asking 2 tags each.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from devtools.svgchart import Series, line_chart
from learning.core.counts import count_distribution
from learning.core.privacy import DEFAULT_MECHANISM, MECHANISMS, Mechanism
from learning.experiments.campaign import campaign_rounds
from learning.experiments.crowd_report import simulation_report
from learning.management.commands.simulate_crowd import read_corpus

COUNT_SHARES = (0.1, 0.25, 0.5, 1.0)
ALPHAS = (1.0, 3.0, 8.0)


class Command(BaseCommand):
    help = (
        "Run the verification, privacy or campaign study point by point; print JSON, draw an "
        "SVG chart."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", choices=["verification", "privacy", "campaign", "online"])
        parser.add_argument("--train", required=True, help="gold CoNLL-U (plain or .gz)")
        parser.add_argument("--test", required=True, help="gold CoNLL-U for evaluation")
        parser.add_argument("--svg", help="write the chart here")
        parser.add_argument("--annotators", type=int, default=50)
        parser.add_argument("--mechanism", choices=MECHANISMS, default=DEFAULT_MECHANISM)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options) -> None:
        train = read_corpus(options["train"], "train")
        test = read_corpus(options["test"], "test")
        common = {"n_annotators": options["annotators"], "seed": options["seed"], "window": 5}
        if options["study"] == "verification":
            result = _verification(train, test, common, self.stderr)
        elif options["study"] == "campaign":
            result = _campaign(train, test, common, self.stderr)
        elif options["study"] == "online":
            result = _online(train, test, common, self.stderr)
        else:
            result = _privacy(train, test, common, options["mechanism"], self.stderr)
        if options["svg"]:
            Path(options["svg"]).write_text(result.pop("svg"))
        else:
            result.pop("svg")
        self.stdout.write(json.dumps(result))


def _verification(train, test, common: dict, log) -> dict:
    points = []
    for share in COUNT_SHARES:
        report, _ = simulation_report(
            train, test, obs_per_sentence=share, verify_per_sentence=1, references=False, **common
        )
        log.write(f"count tasks per sentence {share}: {report['accuracy_refined']:.2f}\n")
        points.append(report)
    n_sentences = len(train)
    last = points[-1]
    result = {
        "study": "verification",
        "sentences": n_sentences,
        "counts_only": [(p["obs_per_sentence"], 100 * p["accuracy_counts_only"]) for p in points]
        + [(last["obs_per_sentence"] + 1, 100 * last["accuracy_counts_only_same_answers"])],
        "counts_and_verification": [
            (p["obs_per_sentence"] + 1, 100 * p["accuracy_refined"]) for p in points
        ],
        "reports": points,
    }
    return result | {"svg": verification_chart(result)}


def verification_chart(result: dict) -> str:
    """The chart of :func:`_verification`'s result: accuracy (%) against answers."""
    n = result["sentences"]
    series = [
        Series("count tasks only", [(x * n, y) for x, y in result["counts_only"]]),
        Series("+ 1 verification each", [(x * n, y) for x, y in result["counts_and_verification"]]),
    ]
    return line_chart(
        series,
        title="Accuracy against answers (UD EWT, window 5, all tags)",
        x_label="answers (count tasks, and verification tasks: one per sentence)",
        y_label="test accuracy (%)",
        x_ticks=[(k * n, f"{k * n // 1000}k" if k else "0") for k in range(3)],
    )


# The policies a project can run (the simulator's ``oracle`` is a bound, not drawn).
CAMPAIGN_POLICIES = ("uniform", "adaptive")


def _campaign(train, test, common: dict, log) -> dict:
    curves = {}
    for policy in CAMPAIGN_POLICIES:
        rounds = list(
            campaign_rounds(
                train, test, policy=policy, n_annotators=common["n_annotators"],
                seed=common["seed"], window=common["window"],
            )
        )  # fmt: skip
        for row in rounds:
            log.write(f"{policy} round {row['round']}: {row['accuracy']:.2%}\n")
        curves[policy] = [(row["answers"], 100 * row["accuracy"]) for row in rounds]
    result = {"study": "campaign", "sentences": len(train), **curves}
    return result | {"svg": campaign_chart(result)}


def campaign_chart(result: dict) -> str:
    """The chart of :func:`_campaign`'s result: accuracy (%) against answers, by policy."""
    labels = {"uniform": "tasks drawn uniformly", "adaptive": "tasks chosen by the model"}
    return line_chart(
        [Series(labels[policy], result[policy]) for policy in CAMPAIGN_POLICIES],
        title="Accuracy against answers (window 5, 2 tags per task)",
        x_label="count answers (round 0: one uniform task per sentence)",
        y_label="test accuracy (%)",
    )


ONLINE_SETTINGS = {  # name: (tasks per sentence, tags per task; None: all)
    "all tags": (1, None),
    "2 tags, 3 tasks": (3, 2),  # per sentence
}


def _online(train, test, common: dict, log) -> dict:
    curves = {}
    for name, (tasks, tags) in ONLINE_SETTINGS.items():
        report, _ = simulation_report(
            train, test, obs_per_sentence=tasks, tags_per_task=tags, online_blocks=100,
            references=False, **common,
        )  # fmt: skip
        curve = report["online_curve"]
        for point in curve:
            log.write(
                f"{name}, {point['fraction']:.0%} of the stream: online "
                f"{point['accuracy_online']:.2%}, batch {point['accuracy_batch']:.2%}\n"
            )
        curves[name] = {
            "answers": report["n_observations"],
            "seconds_online_per_1000": report["seconds_online_per_1000"],
            "online": [(100 * p["fraction"], 100 * p["accuracy_online"]) for p in curve],
            "batch": [(100 * p["fraction"], 100 * p["accuracy_batch"]) for p in curve],
        }
    result = {"study": "online", "sentences": len(train), "curves": curves}
    return result | {"svg": online_chart(result)}


def online_chart(result: dict) -> str:
    """The chart of :func:`_online`'s result: accuracy (%) along the stream, online and batch,
    for each setting."""
    series = []
    for name, curve in result["curves"].items():
        series.append(Series(f"online, {name}", curve["online"]))
        series.append(Series(f"batch, {name}", curve["batch"]))
    return line_chart(
        series,
        title="The live model along the stream (UD EWT, window 5, 100 blocks)",
        x_label="share of the stream's answers (%)",
        y_label="test accuracy (%)",
        x_ticks=[(x, f"{x}") for x in (0, 25, 50, 75, 100)],
    )


def _privacy(train, test, common: dict, mechanism: str, log) -> dict:
    points = []
    for alpha in ALPHAS:
        report, _ = simulation_report(
            train,
            test,
            obs_per_sentence=10,
            tags_per_task=1,
            privacy_alpha=alpha,
            mechanism=mechanism,
            references=False,
            **common,
        )
        log.write(f"alpha {alpha}: refined {report['accuracy_refined']:.2f}\n")
        points.append(report)
    public = points[0]
    shares = information_shares(train, common["window"], mechanism)
    log.write("information kept: " + ", ".join(f"α {a:g} {s:.3f}" for a, s in shares) + "\n")
    result = {
        "study": "privacy",
        "mechanism": mechanism,
        "information_share": shares + [["inf", 1.0]],
        "refined": [[p["privacy_alpha"], 100 * p["accuracy_refined"]] for p in points]
        + [["inf", 100 * public["accuracy_refined_without_privacy"]]],
        "moments": [[p["privacy_alpha"], 100 * p["accuracy_moments"]] for p in points]
        + [["inf", 100 * public["accuracy_moments_without_privacy"]]],
        "reports": points,
    }
    return result | {"svg": privacy_chart(result)}


def information_shares(train, window: int, mechanism: str) -> list[list[float]]:
    """[α, share of a count's information its release keeps] for each α of the study, for one
    asked tag's counts in ``window`` tokens of the ``train`` corpus (UPOS)."""
    tagset = sorted({t for s in train for t in s.tags("upos")})
    index = {t: k for k, t in enumerate(tagset)}
    counts = count_distribution(
        [[index[t] for t in s.tags("upos")] for s in train], window, len(tagset)
    )
    return [
        [alpha, Mechanism(mechanism, alpha, n_tags=len(tagset)).information_share(counts)]
        for alpha in ALPHAS
    ]


def privacy_chart(result: dict) -> str:
    """The chart of :func:`_privacy`'s result: accuracy (%) against α on a log axis, with "no
    privacy" drawn one and a half steps past the largest α."""
    alphas = [float(a) for a, _ in result["refined"]]
    finite = [a for a in alphas if math.isfinite(a)]

    def position(alpha: float) -> float:
        return math.log2(alpha) if math.isfinite(alpha) else math.log2(max(finite)) + 1.5

    series = [
        Series("refined (exact EM)", [(position(float(a)), y) for a, y in result["refined"]]),
        Series(
            "moments alone",
            [(position(float(a)), y) for a, y in result["moments"]],
            dashed=True,
        ),
    ]
    return line_chart(
        series,
        title=f"Accuracy against privacy level ({result['mechanism']}, UD EWT)",
        x_label="α per answer (1 tag per task, 10 tasks per sentence; ∞: no privacy)",
        y_label="test accuracy (%)",
        x_ticks=[(position(a), f"{a:g}" if math.isfinite(a) else "∞") for a in alphas],
    )
