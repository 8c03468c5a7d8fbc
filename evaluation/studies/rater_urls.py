"""The rater's side-by-side pages (docs/sxs.md, "The rater's page"), a namespace of their own (`sxs`,
included by config/urls.py): they are raters' work, while every page of the `evaluation` namespace is a
reviewer's (tests/evaluation/test_reviewer_rule.py walks them all). A task is named by its random token
only."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from evaluation.studies import rater_views as rater

app_name = "sxs"
urlpatterns: list[URLPattern | URLResolver] = [
    path("sxs/", rater.study_tasks, name="study_tasks"),
    path("sxs/next/", rater.study_next, name="study_next"),
    path("sxs/<str:token>/", rater.study_task, name="study_task"),
    path("sxs/<str:token>/answer/", rater.study_task_answer, name="study_task_answer"),
    path("sxs/<str:token>/undo/", rater.study_task_undo, name="study_task_undo"),
]
