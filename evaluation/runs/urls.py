"""The run pages' patterns (runs, targets, budgets, baselines, API tokens), in the `evaluation` namespace
with the studies' and experiments' (evaluation/urls.py)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from evaluation.runs import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("runs/", views.run_list, name="run_list"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/new/plan/", views.run_new_plan, name="run_new_plan"),
    path("runs/compare/", views.run_compare, name="run_compare"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/evidence/", views.run_query_evidence, name="run_query_evidence"),
    path("runs/<int:run_id>/row/", views.run_row, name="run_row"),
    path("runs/<int:run_id>/progress/", views.run_progress, name="run_progress"),
    path("runs/<int:run_id>/report.json", views.run_report_download, name="run_report_download"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/promote/", views.run_promote, name="run_promote"),
    path("runs/<int:run_id>/rescore-baseline/", views.run_rescore_baseline, name="run_rescore_baseline"),
    path("runs/<int:run_id>/unjudged/", views.run_unjudged_queue, name="run_unjudged_queue"),
    path("runs/<int:run_id>/unjudged/judge/", views.run_unjudged_ask_judge, name="run_unjudged_ask_judge"),
    path("targets/", views.target_list, name="target_list"),
    path("targets/new/", views.target_edit, name="target_new"),
    path("targets/<int:pk>/", views.target_detail, name="target_detail"),
    path("targets/<int:pk>/edit/", views.target_edit, name="target_edit"),
    path("targets/<int:pk>/schedules/", views.target_schedule, name="target_schedule"),
    path("targets/<int:pk>/trend/", views.target_trend, name="target_trend"),
    path("sets/<slug:slug>/budgets/", views.budgets_edit, name="budgets"),
    path("sets/<slug:slug>/budgets.json", views.budgets_download, name="budgets_download"),
    path("sets/<slug:slug>/baselines/", views.baseline_list, name="baselines"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="token_revoke"),
]
