"""Evaluation's pages, one namespace (`evaluation`, included by config/urls.py): each capability's
patterns are in its folder's `urls`."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

from evaluation.runs.urls import urlpatterns as runs

app_name = "evaluation"
urlpatterns: list[URLPattern | URLResolver] = [*runs]
