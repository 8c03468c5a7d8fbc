from __future__ import annotations

from django.urls import URLPattern, URLResolver

app_name = "labeling"
urlpatterns: list[URLPattern | URLResolver] = []
