from __future__ import annotations

from django.urls import URLPattern, URLResolver

app_name = "golden_io"
urlpatterns: list[URLPattern | URLResolver] = []
