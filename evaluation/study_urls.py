"""The side-by-side studies' pages (docs/sxs.md), spread into evaluation/urls.py in its namespace
(the reviewer-rule walk reads its patterns, not includes)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from evaluation import study_rater_views as rater
from evaluation import study_views as views

urlpatterns: list[URLPattern | URLResolver] = [
    path("sets/<slug:slug>/studies/", views.study_list, name="study_list"),
    path("sets/<slug:slug>/studies/new/", views.study_new, name="study_new"),
    path("sets/<slug:slug>/studies/setting/", views.study_setting, name="study_setting"),
    path("studies/<int:pk>/", views.study_detail, name="study_detail"),
    path("studies/<int:pk>/answers.csv", views.study_answers_csv, name="study_answers_csv"),
    path("studies/<int:pk>/answers.jsonl", views.study_answers_jsonl, name="study_answers_jsonl"),
    # The rater's side: a task is named by its random token only.
    path("sxs/", rater.study_tasks, name="study_tasks"),
    path("sxs/next/", rater.study_next, name="study_next"),
    path("sxs/<str:token>/", rater.study_task, name="study_task"),
    path("sxs/<str:token>/answer/", rater.study_task_answer, name="study_task_answer"),
    path("sxs/<str:token>/undo/", rater.study_task_undo, name="study_task_undo"),
]
