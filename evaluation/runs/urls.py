from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from evaluation.experiments import views as experiment_views
from evaluation.runs import views
from evaluation.runs.views import evidence as evidence_views
from evaluation.studies import urls as study_urls

app_name = "evaluation"
urlpatterns: list[URLPattern | URLResolver] = [
    path("runs/", views.run_list, name="run_list"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/new/plan/", views.run_new_plan, name="run_new_plan"),
    path("runs/compare/", views.run_compare, name="run_compare"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/evidence/", evidence_views.run_query_evidence, name="run_query_evidence"),
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
    path("experiments/", experiment_views.experiment_list, name="experiment_list"),
    path("experiments/new/", experiment_views.experiment_new, name="experiment_new"),
    path("experiments/<int:experiment_id>/", experiment_views.experiment_detail, name="experiment_detail"),
    path(
        "experiments/<int:experiment_id>/progress/",
        experiment_views.experiment_progress,
        name="experiment_progress",
    ),
    path("experiments/<int:experiment_id>/row/", experiment_views.experiment_row, name="experiment_row"),
    path(
        "experiments/<int:experiment_id>/cancel/",
        experiment_views.experiment_cancel_view,
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
        experiment_views.experiment_adopt_view,
        name="experiment_adopt",
    ),
    path(
        "experiments/<int:experiment_id>/adoptions/<int:adoption_id>/revert/",
        experiment_views.adoption_revert_view,
        name="adoption_revert",
    ),
    path(
        "experiments/<int:experiment_id>/gaps/",
        experiment_views.experiment_gaps_view,
        {"to": "raters"},
        name="experiment_gaps_queue",
    ),
    path(
        "experiments/<int:experiment_id>/gaps/judge/",
        experiment_views.experiment_gaps_view,
        {"to": "judge"},
        name="experiment_gaps_judge",
    ),
    path(
        "experiments/<int:experiment_id>/rescore/",
        experiment_views.experiment_rescore_view,
        name="experiment_rescore",
    ),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="token_revoke"),
]
urlpatterns += study_urls.urlpatterns  # side-by-side studies (docs/sxs.md)
