"""``manage.py simulate_crowd``: a simulated crowd on a gold CoNLL-U corpus → one JSON report."""

from __future__ import annotations

import json
import resource
import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from learning.core.conllu import ConlluError, read_conllu
from learning.core.cost import PRESETS as COST_PRESETS
from learning.core.pipeline import MODEL_KINDS
from learning.core.privacy import DEFAULT_MECHANISM, MECHANISMS
from learning.core.schedule import PRESETS
from learning.experiments.crowd_report import simulation_report


def parse_tags_per_task(value: str) -> int | None:
    if value == "all":
        return None
    try:
        number = int(value)
    except ValueError:
        raise CommandError(
            f"--tags-per-task must be a positive integer or 'all', not {value!r}"
        ) from None
    if number < 1:
        raise CommandError("--tags-per-task must be at least 1")
    return number


def read_corpus(path: str, what: str) -> list:
    try:
        sentences = list(read_conllu(path))
    except FileNotFoundError:
        raise CommandError(f"{what} file not found: {path}") from None
    except IsADirectoryError:
        raise CommandError(f"{what} file is a directory: {path}") from None
    except ConlluError as exc:
        raise CommandError(f"{what} file {path}: {exc}") from None
    if not sentences:
        raise CommandError(f"{what} file {path} has no sentences")
    return sentences


class Command(BaseCommand):
    help = "Simulate a crowd answering region-count tasks, learn a tagger, print a JSON report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--train", required=True, help="gold CoNLL-U (plain or .gz)")
        parser.add_argument("--test", required=True, help="gold CoNLL-U for evaluation")
        parser.add_argument("--tagset", choices=["upos", "xpos"], default="upos")
        parser.add_argument("--window", type=int, default=5)
        parser.add_argument(
            "--obs-per-sentence",
            type=float,
            default=1,
            help="count tasks per sentence; a fraction gives that share of the sentences one more",
        )
        parser.add_argument("--tags-per-task", default="all", help="a number or 'all'")
        parser.add_argument("--annotators", type=int, default=20)
        parser.add_argument("--spam-fraction", type=float, default=0.0)
        parser.add_argument("--noisy-fraction", type=float, default=0.0)
        parser.add_argument(
            "--yes-sayer-fraction",
            type=float,
            default=0.0,
            help="annotators who count exactly but answer Yes to every verification question",
        )
        parser.add_argument(
            "--copier-fraction",
            type=float,
            default=0.0,
            help="annotators who give back the served model's expected counts (a first model is "
            "learned from a first round the others answer)",
        )
        parser.add_argument(
            "--verify-per-sentence",
            type=int,
            default=0,
            help="verification tasks per sentence on the count model's guesses (0: none)",
        )
        parser.add_argument(
            "--verify-choice",
            choices=["uncertain", "random"],
            default="uncertain",
            help="which windows to verify: where the model is least sure (default), or at random",
        )
        parser.add_argument(
            "--no-verify-tap",
            action="store_true",
            help="a No comes without the first wrong word",
        )
        parser.add_argument(
            "--schedule",
            default="auto",
            help="the EM schedule: 'auto' (as a retrain picks it, default) or a preset's name ("
            + ", ".join(PRESETS)
            + ")",
        )
        parser.add_argument(
            "--model",
            choices=MODEL_KINDS,
            default="context",
            help="the served model: contextual (default) or node-only; both are reported",
        )
        parser.add_argument(
            "--privacy-alpha",
            type=float,
            default=None,
            help="release every count answer through a local privacy mechanism at this level",
        )
        parser.add_argument(
            "--mechanism",
            choices=MECHANISMS,
            default=DEFAULT_MECHANISM,
            help=f"the privacy mechanism (default: {DEFAULT_MECHANISM}, as new private projects)",
        )
        parser.add_argument(
            "--no-references",
            action="store_true",
            help="skip the supervised references (faster, for learning curves)",
        )
        parser.add_argument(
            "--online",
            type=int,
            default=None,
            metavar="BLOCKS",
            help="also stream the count answers in this many blocks through the online learner",
        )
        parser.add_argument(
            "--online-replay",
            type=float,
            default=None,
            help="online M-steps on the block and this many times its tokens of stored ones, "
            "0 for every stored token (default: the learner's)",
        )
        parser.add_argument(
            "--online-fit-iter",
            type=int,
            default=None,
            help="L-BFGS iterations of each online M-step (default: the learner's, 3)",
        )
        parser.add_argument(
            "--cost-matrix",
            metavar="NAME|FILE",
            help="score the model in this cost matrix's currency: a preset ("
            + ", ".join(COST_PRESETS)
            + ") or a CSV file (a header of tags, a row per true tag)",
        )
        parser.add_argument(
            "--agm",
            action="store_true",
            help="with --cost-matrix: also train the adversarial model for it (cost_agm, "
            "accuracy_agm)",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, **options) -> None:
        if options["window"] < 1:
            raise CommandError("--window must be at least 1")
        if not options["obs_per_sentence"] > 0:
            raise CommandError("--obs-per-sentence must be positive")
        if options["verify_per_sentence"] < 0:
            raise CommandError("--verify-per-sentence must be 0 or more")
        if options["annotators"] < 1:
            raise CommandError("--annotators must be at least 1")
        fractions = ("spam_fraction", "noisy_fraction", "yes_sayer_fraction", "copier_fraction")
        for name in fractions:
            if not 0.0 <= options[name] <= 1.0:
                raise CommandError(f"--{name.replace('_', '-')} must be between 0 and 1")
        if sum(options[name] for name in fractions) > 1.0:
            raise CommandError(
                "--spam-fraction, --noisy-fraction, --yes-sayer-fraction and --copier-fraction "
                "must not add up to more than 1"
            )
        if options["copier_fraction"] > 0 and options["privacy_alpha"] is not None:
            raise CommandError("--copier-fraction is simulated without --privacy-alpha")
        if options["online"] is not None and options["online"] < 1:
            raise CommandError("--online must be a number of blocks, at least 1")
        if options["online"] is not None and options["verify_per_sentence"] > 0:
            raise CommandError(
                "--online streams count answers only: leave out --verify-per-sentence"
            )
        if options["online_fit_iter"] is not None and options["online_fit_iter"] < 1:
            raise CommandError("--online-fit-iter must be at least 1")
        if options["online_replay"] is not None and not options["online_replay"] >= 0:
            raise CommandError("--online-replay must be 0 or positive")
        tags_per_task = parse_tags_per_task(options["tags_per_task"])
        started = time.perf_counter()
        train = read_corpus(options["train"], "train")
        test = read_corpus(options["test"], "test")
        if options["schedule"] != "auto" and options["schedule"] not in PRESETS:
            raise CommandError(
                f"--schedule must be 'auto' or one of {', '.join(PRESETS)}, "
                f"not {options['schedule']!r}"
            )
        model_params = {"model": options["model"], "schedule": options["schedule"]}
        try:
            report, _ = simulation_report(
                train,
                test,
                tag_column=options["tagset"],
                window=options["window"],
                obs_per_sentence=options["obs_per_sentence"],
                tags_per_task=tags_per_task,
                n_annotators=options["annotators"],
                spam_fraction=options["spam_fraction"],
                noisy_fraction=options["noisy_fraction"],
                yes_sayer_fraction=options["yes_sayer_fraction"],
                copier_fraction=options["copier_fraction"],
                verify_per_sentence=options["verify_per_sentence"],
                verify_choice=options["verify_choice"],
                verify_tap=not options["no_verify_tap"],
                privacy_alpha=options["privacy_alpha"],
                mechanism=options["mechanism"],
                references=not options["no_references"],
                seed=options["seed"],
                model_params=model_params,
                online_blocks=options["online"],
                online_params=_online_params(options),
                cost_matrix=options["cost_matrix"],
                agm=options["agm"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        report["train"] = options["train"]
        report["test"] = options["test"]
        report["seconds_wall"] = time.perf_counter() - started
        report["peak_memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        if options["json"]:
            self.stdout.write(json.dumps(report))
        else:
            for key, value in report.items():
                self.stdout.write(f"{key}: {value}")


def _online_params(options: dict) -> dict:
    """The online learner's settings given on the command line (the learner's defaults for the
    others); ``--online-replay 0``: M-steps on every stored token."""
    params = {}
    if options["online_replay"] is not None:
        params["replay"] = options["online_replay"] or None
    if options["online_fit_iter"] is not None:
        params["block_fit_iter"] = options["online_fit_iter"]
    return params
