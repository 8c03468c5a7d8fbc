from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self) -> None:
        # Registers the Celery tasks in every process: the services queue them by name
        # (evaluation/enqueue.py) without importing the tasks module, which imports the services.
        from evaluation import tasks  # noqa: F401
