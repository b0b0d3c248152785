"""Model versions stored without a retrain: a project's learning curve with a known shape."""

from learning.models import AccuracyReport, ModelVersion


def known_accuracy(n: float) -> float:
    """Accuracy 1 − 0.06 − 0.10·(n/1000)^−0.5 after `n` answers (it tends to 94 %)."""
    return 1 - 0.06 - 0.10 * (n / 1000) ** -0.5


def known_count_error(n: float) -> float:
    """Count error 0.2 + 0.5·(n/1000)^−0.7 after `n` answers (it tends to 0.2)."""
    return 0.2 + 0.5 * (n / 1000) ** -0.7


def store_versions(project, answers, *, accuracy: bool = True, tokens: int = 5000) -> None:
    """Versions 1.. of `project` trained on `answers[i]` answers, scoring the known curves (no
    accuracy, as without evaluation sentences, when `accuracy` is false). No model file."""
    for number, n in enumerate(answers, start=1):
        version = ModelVersion.objects.create(
            project=project, number=number, file="none.npz", observations_count=n,
            newest_observation=n,
        )  # fmt: skip
        AccuracyReport.objects.create(
            version=version,
            accuracy=known_accuracy(n) if accuracy else None,
            evaluation={"sentences": 300, "tokens": tokens} if accuracy else None,
            count_consistency=known_count_error(n),
        )
