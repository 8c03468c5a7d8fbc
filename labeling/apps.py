from __future__ import annotations

from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
    verbose_name = "Labeling"

    def ready(self) -> None:
        # The judge jobs' tasks (labeling/tasks.py) registered in every process that runs the services,
        # which queue them by name (`labeling.services.judges.JOB_START`), as evaluation/apps.py does.
        from labeling import tasks  # noqa: F401
