"""Who sees which experiment, for the pages and the API alike (a token acts as its user): the runs' rule
(`evaluation.runs.access`), by the experiment's golden set: those who review it (admins all); everyone
else, and anyone without the reviewer role, gets 404 (docs/experiments.md, "In the app")."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from evaluation.experiments.models import Experiment
from labeling.roles import is_reviewer, reviewed_filter


def experiments_for(user: Any) -> QuerySet[Experiment]:
    """The experiments of the sets the user reviews (admins all); none for anyone without the role."""
    if not is_reviewer(user):
        return Experiment.objects.none()
    return Experiment.objects.filter(reviewed_filter(user, "golden_version__golden_set")).select_related(
        "golden_version__golden_set", "target", "created_by"
    )


def get_experiment(user: Any, experiment_id: int) -> Experiment:
    experiment = experiments_for(user).filter(pk=experiment_id).first()
    if experiment is None:
        raise Http404("no such experiment")
    return experiment
