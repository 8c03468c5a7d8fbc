"""Evaluation's pages, one namespace (`evaluation`, included by config/urls.py): each capability's
patterns are in its folder (`evaluation.runs.urls`, `evaluation.studies.urls`,
`evaluation.experiments.urls`); the rater's side-by-side pages are a namespace of their own
(`evaluation.studies.rater_urls`)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

from evaluation.experiments.urls import urlpatterns as experiments
from evaluation.runs.urls import urlpatterns as runs
from evaluation.studies.urls import urlpatterns as studies

app_name = "evaluation"
urlpatterns: list[URLPattern | URLResolver] = [*runs, *experiments, *studies]
