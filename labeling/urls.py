from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from labeling import views

app_name = "labeling"
urlpatterns: list[URLPattern | URLResolver] = [
    path("queue/", views.queue, name="queue"),
    path("queue/next/", views.queue_next, name="queue_next"),
    path("assignments/<int:pk>/", views.grade, name="grade"),
    path("assignments/<int:pk>/grades/", views.grades, name="grades"),
    path("assignments/<int:pk>/done/", views.done, name="done"),
    path("assignments/<int:pk>/reassign/", views.reassign, name="reassign"),
    path("assignments/<int:pk>/reopen/", views.reopen, name="reopen"),
    path("sets/", views.set_list, name="set_list"),
    path("sets/<slug:slug>/", views.set_detail, name="set_detail"),
    path("sets/<slug:slug>/queries/<int:pk>/", views.query_review, name="query_review"),
    path("sets/<slug:slug>/import/", views.import_page, name="import"),
    path("sets/<slug:slug>/import/<slug:kind>/", views.import_upload, name="import_upload"),
    path("sets/<slug:slug>/assign/", views.assign, name="assign"),
    path("sets/<slug:slug>/agreement/", views.agreement, name="agreement"),
    path("sets/<slug:slug>/thresholds/", views.thresholds, name="thresholds"),
    path("sets/<slug:slug>/disputes/", views.disputes, name="disputes"),
    path("sets/<slug:slug>/disputes/check/", views.disputes_check, name="disputes_check"),
    path("sets/<slug:slug>/proposals/", views.proposals, name="proposals"),
    path("sets/<slug:slug>/proposals/<int:pk>/decide/", views.proposal_decide, name="proposal_decide"),
    path(
        "sets/<slug:slug>/queries/<int:pk>/proposals/decide/",
        views.proposals_decide_query,
        name="proposals_decide_query",
    ),
    path("sets/<slug:slug>/queries/<int:pk>/adjudicate/", views.adjudicate, name="adjudicate"),
    path("sets/<slug:slug>/queries/<int:pk>/adjudications/", views.adjudication_add, name="adjudication_add"),
    path("sets/<slug:slug>/queries/<int:pk>/tier/", views.tier_move, name="tier_move"),
    path("sets/<slug:slug>/queries/<int:pk>/retire/", views.retire, name="retire"),
    path("sets/<slug:slug>/queries/<int:pk>/gold/", views.gold, name="gold"),
    path("sets/<slug:slug>/calibration/", views.calibration_list, name="calibration_list"),
    path("sets/<slug:slug>/calibration/<int:pk>/", views.calibration_round, name="calibration_round"),
    path(
        "sets/<slug:slug>/calibration/<int:pk>/promote/",
        views.calibration_promote,
        name="calibration_promote",
    ),
]
