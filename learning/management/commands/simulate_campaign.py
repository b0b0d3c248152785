"""``manage.py simulate_campaign``: rounds of tasks chosen by a policy on a simulated crowd, a
retrain after each, one JSON object per round (learning.experiments.campaign)."""

from __future__ import annotations

import argparse
import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from learning.core.task_value import EXPLORATION
from learning.experiments.campaign import POLICIES, campaign_rounds

from .simulate_crowd import parse_tags_per_task, read_corpus


class Command(BaseCommand):
    help = (
        "Simulate an annotation campaign: round 0 uniform, then rounds chosen by a policy "
        "(uniform or adaptive), a retrain after each; prints one JSON object per round."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--train", required=True, help="gold CoNLL-U (plain or .gz)")
        parser.add_argument("--test", required=True, help="gold CoNLL-U for evaluation")
        parser.add_argument("--tagset", choices=["upos", "xpos"], default="upos")
        parser.add_argument("--window", type=int, default=5)
        parser.add_argument("--tags-per-task", default="2", help="a number or 'all'")
        parser.add_argument(
            "--start", type=float, default=1.0, help="uniform count tasks per sentence in round 0"
        )
        parser.add_argument(
            "--budget", type=float, default=3.0, help="count tasks per sentence in all (seconds)"
        )
        parser.add_argument("--rounds", type=int, default=4, help="rounds, round 0 included")
        parser.add_argument(
            "--policy",
            choices=POLICIES,
            default="adaptive",
            help="how later rounds choose tasks (oracle: the version's errors, known from the "
            "gold; a bound for the value, not a policy a project can run)",
        )
        parser.add_argument("--annotators", type=int, default=20)
        parser.add_argument("--spam-fraction", type=float, default=0.0)
        parser.add_argument(
            "--verification",
            action="store_true",
            help="adaptive rounds also ask verification tasks, mixed by bits per second",
        )
        parser.add_argument(
            "--exploration",
            type=float,
            default=EXPLORATION,
            help=f"share of an adaptive round drawn uniformly (default {EXPLORATION})",
        )
        parser.add_argument(
            "--given-answers",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="value tasks on the model's probabilities given the answers in hand, as the "
            "platform does (default; --no-given-answers: on the model's probabilities alone)",
        )
        parser.add_argument(
            "--repeat-discount",
            type=float,
            default=1.0,
            help="multiply a window's value by this for each window of a round already asking "
            "about the same word (1: off)",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print only the JSON lines")

    def handle(self, *args, **options) -> None:
        if options["window"] < 1:
            raise CommandError("--window must be at least 1")
        if not 0 < options["start"] <= options["budget"]:
            raise CommandError("--start must be positive and at most --budget")
        if options["rounds"] < 1:
            raise CommandError("--rounds must be at least 1")
        if options["annotators"] < 1:
            raise CommandError("--annotators must be at least 1")
        for name in ("spam_fraction", "exploration"):
            if not 0.0 <= options[name] <= 1.0:
                raise CommandError(f"--{name.replace('_', '-')} must be between 0 and 1")
        if options["verification"] and options["policy"] != "adaptive":
            raise CommandError("--verification needs --policy adaptive")
        train = read_corpus(options["train"], "train")
        test = read_corpus(options["test"], "test")
        rounds = campaign_rounds(
            train,
            test,
            policy=options["policy"],
            tag_column=options["tagset"],
            window=options["window"],
            tags_per_task=parse_tags_per_task(options["tags_per_task"]),
            start=options["start"],
            budget=options["budget"],
            rounds=options["rounds"],
            n_annotators=options["annotators"],
            spam_fraction=options["spam_fraction"],
            verification=options["verification"],
            exploration=options["exploration"],
            given_answers=options["given_answers"],
            repeat_discount=options["repeat_discount"],
            seed=options["seed"],
        )
        try:
            for row in rounds:
                if options["json"]:
                    self.stdout.write(json.dumps(row))
                else:
                    self.stdout.write(
                        f"round {row['round']} ({row['policy']}): {row['answers']} answers, "
                        f"accuracy {row['accuracy']:.2%}"
                        + (
                            f", forecast at the budget {row['forecast_final']:.2%} "
                            f"[{row['forecast_low']:.2%}, {row['forecast_high']:.2%}]"
                            if "forecast_final" in row
                            else ""
                        )
                    )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
