"""How the harness decodes a reply's JSON: orjson first, the json module for whatever orjson refuses, so
every reply the json module read before is read the same (tests/support/stub_server.py answers)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from assay.golden.model import GoldenQuery
from assay.harness import search_all_sync
from assay.harness_config import HarnessConfig
from assay.results import QueryResult
from tests.support.stub_server import Reply, StubServer

BODY = {"hits": [{"id": "d1", "title": "Réglages"}, {"id": 2}], "meta": {"generation": 12}}


def search(stub: StubServer, **config: Any) -> QueryResult:
    cfg = HarnessConfig(url=f"{stub.url}/search", retries=0, **config)
    (result,) = search_all_sync([GoldenQuery(id="q-1", text="refund")], cfg)
    return result


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps(BODY).encode("utf-8"),
        b"\xef\xbb\xbf" + json.dumps(BODY).encode("utf-8"),  # a byte-order mark
        json.dumps(BODY).encode("utf-16"),  # UTF-16, detected from the bytes
        json.dumps(BODY, ensure_ascii=False).encode("utf-32-le"),
    ],
    ids=["utf-8", "utf-8 with BOM", "utf-16", "utf-32"],
)
def test_a_reply_is_read_whatever_unicode_encoding_json_detects(stub_server: StubServer, raw: bytes) -> None:
    stub_server.default = Reply(raw=raw, content_type="application/json")

    result = search(stub_server, generation_field="meta.generation")

    assert result.ok, result.error
    assert result.ids == ("d1", "2") and result.titles == ("Réglages", "")
    assert result.index_generation == "12"


def test_what_only_the_json_module_reads_is_still_read(stub_server: StubServer) -> None:
    # NaN and an integer beyond 64 bits: orjson refuses both, the json module reads them.
    big = 2**70
    text = f'{{"hits": [{{"id": {big}}}], "meta": {{"score": NaN}}}}'
    stub_server.default = Reply(text=text, content_type="application/json")

    result = search(stub_server, model_id_field="meta.score")

    assert result.ok and result.ids == (str(big),)
    assert result.model_id is not None and math.isnan(float(result.model_id))


def test_a_reply_that_is_not_json_is_that_querys_error(stub_server: StubServer) -> None:
    stub_server.default = Reply(text="<html>login</html>", content_type="text/html")

    result = search(stub_server)

    assert result.error == "response is not JSON (text/html, 18 bytes)"
