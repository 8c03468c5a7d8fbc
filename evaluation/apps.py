"""The `evaluation` app: one Django app (its tables `evaluation_*`, one migrations history) holding three
capabilities, one folder each (docs/architecture.md, "Inside evaluation"): `runs`, `studies`,
`experiments`; studies and experiments build on runs, and runs know neither."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.backends.signals import connection_created


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        # Registers the Celery tasks in every process: the services queue them by name
        # (evaluation/runs/enqueue.py) without importing the tasks modules, which import the services.
        from evaluation.experiments import receivers as experiment_receivers
        from evaluation.experiments import tasks as experiment_tasks  # noqa: F401
        from evaluation.fields import json_text_loader
        from evaluation.runs import tasks  # noqa: F401
        from evaluation.studies import receivers as study_receivers

        # The reports' `json` columns are read as text and parsed once (evaluation/fields.py).
        connection_created.connect(json_text_loader, dispatch_uid="evaluation.json_text_loader")
        # Studies and experiments listen to what runs announce (evaluation/runs/hooks.py): a run's end, a
        # promotion, a run's page.
        study_receivers.connect()
        experiment_receivers.connect()
