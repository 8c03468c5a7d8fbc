from __future__ import annotations

from django.apps import AppConfig


class GoldenIoConfig(AppConfig):
    name = "golden_io"
    verbose_name = "Golden files and versions"
