from __future__ import annotations

from django.urls import URLPattern, URLResolver, path, re_path

from evaluation.experiments import api as experiments
from evaluation.runs.api import views
from evaluation.runs.api.base import NoEndpoint
from evaluation.studies import api as studies

app_name = "api"
urlpatterns: list[URLPattern | URLResolver] = [
    path("golden-sets/", views.GoldenSetList.as_view(), name="golden-set-list"),
    path("golden-sets/<slug:slug>/", views.GoldenSetDetail.as_view(), name="golden-set-detail"),
    path("golden-sets/<slug:slug>/versions/", views.VersionList.as_view(), name="version-list"),
    path(
        "golden-sets/<slug:slug>/versions/<str:name>/", views.VersionDetail.as_view(), name="version-detail"
    ),
    path(
        "golden-sets/<slug:slug>/versions/<str:name>/files/<slug:fmt>/",
        views.VersionFile.as_view(),
        name="version-file",
    ),
    path("targets/", views.TargetList.as_view(), name="target-list"),
    path("targets/<int:pk>/", views.TargetDetail.as_view(), name="target-detail"),
    path("runs/", views.RunListCreate.as_view(), name="run-list"),
    path("runs/<int:pk>/", views.RunDetail.as_view(), name="run-detail"),
    path("runs/<int:pk>/report/", views.RunReport.as_view(), name="run-report"),
    path("runs/<int:pk>/verdict/", views.RunVerdict.as_view(), name="run-verdict"),
    path("runs/<int:pk>/cancel/", views.RunCancel.as_view(), name="run-cancel"),
    path("experiments/", experiments.ExperimentListCreate.as_view(), name="experiment-list"),
    path("experiments/<int:pk>/", experiments.ExperimentDetail.as_view(), name="experiment-detail"),
    path("experiments/<int:pk>/cancel/", experiments.ExperimentCancel.as_view(), name="experiment-cancel"),
    path("experiments/<int:pk>/use/", experiments.ExperimentAdopt.as_view(), name="experiment-use"),
    path(
        "experiments/<int:pk>/adoptions/<int:adoption_id>/revert/",
        experiments.AdoptionRevert.as_view(),
        name="adoption-revert",
    ),
    path("experiments/<int:pk>/gaps/", experiments.ExperimentGaps.as_view(), name="experiment-gaps"),
    path(
        "experiments/<int:pk>/rescore/",
        experiments.ExperimentRescoreView.as_view(),
        name="experiment-rescore",
    ),
    path("studies/", studies.StudyListCreate.as_view(), name="study-list"),
    path("studies/<int:pk>/", studies.StudyDetail.as_view(), name="study-detail"),
    path("studies/pending/<int:pk>/", studies.PendingStudyDetail.as_view(), name="study-pending"),
    path("studies/<int:pk>/results/", studies.StudyResults.as_view(), name="study-results"),
    path("studies/<int:pk>/close/", studies.StudyClose.as_view(), name="study-close"),
    path("studies/<int:pk>/reopen/", studies.StudyReopen.as_view(), name="study-reopen"),
    path("studies/<int:pk>/answers/<slug:fmt>/", studies.StudyAnswers.as_view(), name="study-answers"),
    # Last: a path no endpoint matches (`runs/abc/`, a slug with a space) gets the API's error shape.
    re_path(r"^[\s\S]*\Z", NoEndpoint.as_view()),
]
