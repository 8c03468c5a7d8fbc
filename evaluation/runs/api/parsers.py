"""The API's JSON bodies, read through `assay.jsonin`: a malformed or too deeply nested body is a worded 400
(DRF's ParseError), never a 500."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from assay.jsonin import JsonInputError, json_loads


class BoundedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        # DATA_UPLOAD_MAX_MEMORY_SIZE bounds the body Django reads for us; +1 tells an overlong body apart.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = stream.read(limit + 1 if limit is not None else -1)
        if limit is not None and len(body) > limit:
            raise ParseError(f"JSON parse error - the body is larger than {limit} bytes")
        try:
            return json_loads(body)
        except JsonInputError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
