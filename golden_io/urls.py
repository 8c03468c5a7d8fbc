from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from golden_io import import_views, views

app_name = "golden_io"
urlpatterns: list[URLPattern | URLResolver] = [
    path("versions/", views.set_list, name="set_list"),
    # The golden-file form of labeling's import page (`sets/<slug>/import/`), like `manage.py import_golden`:
    # answered with a preview; the confirmation writes it.
    path("sets/<slug:slug>/import-golden/", import_views.golden_import, name="golden_import"),
    path(
        "sets/<slug:slug>/import-golden/<int:pk>/confirm/",
        import_views.golden_import_confirm,
        name="golden_import_confirm",
    ),
    path(
        "sets/<slug:slug>/import-golden/<int:pk>/cancel/",
        import_views.golden_import_cancel,
        name="golden_import_cancel",
    ),
    # The same file again: every problem as CSV, nothing imported (the report page lists the first 1,000).
    path(
        "sets/<slug:slug>/import-golden/problems.csv",
        import_views.golden_import_problems,
        name="golden_import_problems",
    ),
    path("sets/<slug:slug>/imports/", import_views.import_list, name="import_list"),
    path("sets/<slug:slug>/imports/<int:pk>/undo/", import_views.import_undo, name="import_undo"),
    path("sets/<slug:slug>/versions/", views.version_list, name="version_list"),
    path("sets/<slug:slug>/versions/freeze/", views.freeze, name="freeze"),
    path("sets/<slug:slug>/versions/diff/", views.version_diff, name="diff"),
    path("sets/<slug:slug>/versions/git/", views.export_config, name="export_config"),
    path("sets/<slug:slug>/versions/<str:name>/", views.version_detail, name="version_detail"),
    path("sets/<slug:slug>/versions/<str:name>/export/", views.export, name="export"),
    path("sets/<slug:slug>/versions/<str:name>/requeue/", views.requeue, name="requeue"),
    path(
        "sets/<slug:slug>/versions/<str:name>/download/<slug:fmt>/",
        views.version_download,
        name="download",
    ),
]
