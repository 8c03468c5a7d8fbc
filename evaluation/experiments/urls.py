"""The experiments' pages (docs/experiments.md, "In the app"), in the `evaluation` namespace with the
runs' and studies' (evaluation/urls.py)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from evaluation.experiments import evidence_views, views

urlpatterns: list[URLPattern | URLResolver] = [
    path("experiments/", views.experiment_list, name="experiment_list"),
    path("experiments/new/", views.experiment_new, name="experiment_new"),
    path("experiments/<int:experiment_id>/", views.experiment_detail, name="experiment_detail"),
    path(
        "experiments/<int:experiment_id>/progress/",
        views.experiment_progress,
        name="experiment_progress",
    ),
    path("experiments/<int:experiment_id>/row/", views.experiment_row, name="experiment_row"),
    path(
        "experiments/<int:experiment_id>/cancel/",
        views.experiment_cancel_view,
        name="experiment_cancel",
    ),
    path(
        "experiments/<int:experiment_id>/configs/<int:slot>/",
        evidence_views.experiment_config_queries,
        name="experiment_config_queries",
    ),
    path(
        "experiments/<int:experiment_id>/configs/<int:slot>/evidence/",
        evidence_views.experiment_query_evidence,
        name="experiment_query_evidence",
    ),
    path(
        "experiments/<int:experiment_id>/use/",
        views.experiment_adopt_view,
        name="experiment_adopt",
    ),
    path(
        "experiments/<int:experiment_id>/adoptions/<int:adoption_id>/revert/",
        views.adoption_revert_view,
        name="adoption_revert",
    ),
    path(
        "experiments/<int:experiment_id>/gaps/",
        views.experiment_gaps_view,
        {"to": "raters"},
        name="experiment_gaps_queue",
    ),
    path(
        "experiments/<int:experiment_id>/gaps/judge/",
        views.experiment_gaps_view,
        {"to": "judge"},
        name="experiment_gaps_judge",
    ),
    path(
        "experiments/<int:experiment_id>/rescore/",
        views.experiment_rescore_view,
        name="experiment_rescore",
    ),
]
