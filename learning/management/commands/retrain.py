"""Retrain projects now, in this process (no broker needed).

`manage.py retrain 3 7` retrains these projects if they have new observations;
`manage.py retrain --due` every project the periodic sweep would queue.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from learning import selectors, tasks


class Command(BaseCommand):
    help = "Retrain the given projects (or every due project) now, in this process."

    def add_arguments(self, parser):
        parser.add_argument("project_ids", nargs="*", type=int)
        parser.add_argument("--due", action="store_true", help="every project that is due")

    def handle(self, *args, project_ids, due, **options):
        if due:
            project_ids = [*project_ids, *selectors.projects_due()]
        if not project_ids:
            raise CommandError("give project ids or --due")
        for project_id in project_ids:
            outcome = tasks.retrain_and_push(project_id=project_id, trigger="manual")
            self.stdout.write(
                json.dumps(
                    {
                        "project": project_id,
                        "status": outcome.status,
                        "version": outcome.version.number if outcome.version else None,
                        "message": outcome.message,
                    }
                )
            )
