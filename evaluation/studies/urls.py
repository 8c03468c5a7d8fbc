"""The reviewer's side-by-side study pages (docs/sxs.md), added to evaluation/urls.py's patterns; the
rater's pages are evaluation/studies/rater_urls.py, a namespace of their own."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from evaluation.studies import evidence_views, views

urlpatterns: list[URLPattern | URLResolver] = [
    path("sets/<slug:slug>/studies/", views.study_list, name="study_list"),
    path("sets/<slug:slug>/studies/new/", views.study_new, name="study_new"),
    path(
        "sets/<slug:slug>/studies/new/expectation/", views.study_new_expectation, name="study_new_expectation"
    ),
    path("sets/<slug:slug>/studies/setting/", views.study_setting, name="study_setting"),
    path("studies/<int:pk>/", views.study_detail, name="study_detail"),
    path("studies/<int:pk>/evidence/", evidence_views.study_query_evidence, name="study_query_evidence"),
    path("studies/<int:pk>/close/", views.study_close_view, name="study_close"),
    path("studies/<int:pk>/reopen/", views.study_reopen_view, name="study_reopen"),
    path("studies/pending/<int:pk>/", views.study_pending, name="study_pending"),
    path("studies/pending/<int:pk>/status/", views.study_pending_status, name="study_pending_status"),
    path("studies/pending/<int:pk>/row/", views.study_pending_row, name="study_pending_row"),
    path("studies/<int:pk>/answers.csv", views.study_answers_csv, name="study_answers_csv"),
    path("studies/<int:pk>/answers.jsonl", views.study_answers_jsonl, name="study_answers_jsonl"),
]
