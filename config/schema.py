"""The API schema's view: drf-spectacular's, generating one schema at a time in a process.

drf-spectacular loads its extensions lazily, on the first generation in a process: a thread generating
at the same time sees an extension whose class is half loaded (`target_class` None) and answers 500.
Under a threaded server (Django's, gunicorn's gthread) many first requests at once all but one failed
(tests/config/test_schema_first_requests.py). A generation takes the lock, so the first one loads every
extension before another starts; later ones wait for each other too, which a schema asked for rarely and
by signed-in users only can afford (the URLconf cannot be warmed sooner: `AppConfig.ready` runs before
it is loaded).
"""

from __future__ import annotations

import threading
from typing import Any

from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

_GENERATING = threading.Lock()


class SchemaView(SpectacularAPIView):
    @extend_schema(**SCHEMA_KWARGS)  # as drf-spectacular's own get: out of the schema it serves
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        with _GENERATING:
            return super().get(request, *args, **kwargs)
