from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from labeling.views import calibration, imports, judge_qualification, judges, raters, review, sets

app_name = "labeling"
urlpatterns: list[URLPattern | URLResolver] = [
    path("queue/", raters.queue, name="queue"),
    path("queue/next/", raters.queue_next, name="queue_next"),
    path("assignments/<int:pk>/", raters.grade, name="grade"),
    path("assignments/<int:pk>/grades/", raters.grades, name="grades"),
    path("assignments/<int:pk>/done/", raters.done, name="done"),
    path("assignments/<int:pk>/reassign/", sets.reassign, name="reassign"),
    path("assignments/<int:pk>/reopen/", sets.reopen, name="reopen"),
    path("sets/", sets.set_list, name="set_list"),
    path("sets/<slug:slug>/", sets.set_detail, name="set_detail"),
    path("sets/<slug:slug>/labels-summary/", sets.labels_summary, name="labels_summary"),
    path("sets/<slug:slug>/queries/<int:pk>/", review.query_review, name="query_review"),
    path("sets/<slug:slug>/import/", imports.import_page, name="import"),
    # The page's golden-file form posts to golden_io (`golden_io:golden_import`), not here.
    path("sets/<slug:slug>/import/<slug:kind>/", imports.import_upload, name="import_upload"),
    path("sets/<slug:slug>/assign/", sets.assign, name="assign"),
    path("sets/<slug:slug>/agreement/", review.agreement, name="agreement"),
    path("sets/<slug:slug>/thresholds/", review.thresholds, name="thresholds"),
    path("sets/<slug:slug>/disputes/", review.disputes, name="disputes"),
    path("sets/<slug:slug>/disputes/check/", review.disputes_check, name="disputes_check"),
    path("sets/<slug:slug>/proposals/", review.proposals, name="proposals"),
    path("sets/<slug:slug>/proposals/<int:pk>/decide/", review.proposal_decide, name="proposal_decide"),
    path(
        "sets/<slug:slug>/queries/<int:pk>/proposals/decide/",
        review.proposals_decide_query,
        name="proposals_decide_query",
    ),
    path("sets/<slug:slug>/queries/<int:pk>/adjudicate/", review.adjudicate, name="adjudicate"),
    path(
        "sets/<slug:slug>/queries/<int:pk>/adjudications/",
        review.adjudication_add,
        name="adjudication_add",
    ),
    path("sets/<slug:slug>/queries/<int:pk>/tier/", review.tier_move, name="tier_move"),
    path("sets/<slug:slug>/queries/<int:pk>/retire/", review.retire, name="retire"),
    path("sets/<slug:slug>/queries/<int:pk>/gold/", review.gold, name="gold"),
    path("sets/<slug:slug>/calibration/", calibration.calibration_list, name="calibration_list"),
    path("sets/<slug:slug>/calibration/<int:pk>/", calibration.calibration_round, name="calibration_round"),
    path(
        "sets/<slug:slug>/calibration/<int:pk>/promote/",
        calibration.calibration_promote,
        name="calibration_promote",
    ),
    path("sets/<slug:slug>/judges/", judges.judge_list, name="judge_list"),
    path("sets/<slug:slug>/judges/new/", judges.judge_new, name="judge_new"),
    path("sets/<slug:slug>/judges/compare/", judge_qualification.judge_compare, name="judge_compare"),
    path("sets/<slug:slug>/judges/<int:pk>/", judges.judge_detail, name="judge_detail"),
    path("sets/<slug:slug>/judges/<int:pk>/jobs/", judges.judge_job_start, name="judge_job_start"),
    path(
        "sets/<slug:slug>/judges/<int:pk>/qualification/",
        judge_qualification.judge_qualification,
        name="judge_qualification",
    ),
    path(
        "sets/<slug:slug>/judges/<int:pk>/qualification/job/",
        judge_qualification.judge_qualification_job,
        name="judge_qualification_job",
    ),
    path(
        "sets/<slug:slug>/judges/<int:pk>/qualification/qualify/",
        judge_qualification.judge_qualify,
        name="judge_qualify",
    ),
    path(
        "sets/<slug:slug>/judges/<int:pk>/qualification/<int:q_pk>/withdraw/",
        judge_qualification.judge_qualification_withdraw,
        name="judge_qualification_withdraw",
    ),
    path("sets/<slug:slug>/judges/<int:pk>/jobs/<int:job_pk>/", judges.judge_job, name="judge_job"),
    path(
        "sets/<slug:slug>/judges/<int:pk>/jobs/<int:job_pk>/progress/",
        judges.judge_job_progress,
        name="judge_job_progress",
    ),
    path(
        "sets/<slug:slug>/judges/<int:pk>/jobs/<int:job_pk>/cancel/",
        judges.judge_job_cancel,
        name="judge_job_cancel",
    ),
]
