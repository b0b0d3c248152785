"""``manage.py benchmark_learning``: time each learning stage on EWT train, compare with sklearn."""

from __future__ import annotations

import json
import resource
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from learning.experiments.core_benchmark import benchmark
from learning.management.commands.simulate_crowd import read_corpus

DEFAULT_TRAIN = str(
    Path(settings.BASE_DIR) / "data" / "ud-english-ewt" / "en_ewt-ud-train.conllu.gz"
)


class Command(BaseCommand):
    help = "Time solve / fit / refine on a training corpus and compare the fit with scikit-learn."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--train", default=DEFAULT_TRAIN, help="gold CoNLL-U (plain or .gz)")
        parser.add_argument("--tagset", choices=["upos", "xpos"], default="upos")
        parser.add_argument("--window", type=int, default=5)
        parser.add_argument("--obs-per-sentence", type=int, default=1)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, **options) -> None:
        if options["window"] < 1 or options["obs_per_sentence"] < 1:
            raise CommandError("--window and --obs-per-sentence must be at least 1")
        train = read_corpus(options["train"], "train")
        try:
            report = benchmark(
                train,
                tag_column=options["tagset"],
                window=options["window"],
                obs_per_sentence=options["obs_per_sentence"],
                seed=options["seed"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        report["peak_memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        if options["json"]:
            self.stdout.write(json.dumps(report))
        else:
            for key, value in report.items():
                self.stdout.write(f"{key}: {value}")
