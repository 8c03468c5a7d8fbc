"""Search adapters: one query in, one HTTP request out; one response body in, ranked ids out (pure, no I/O).

The harness does the I/O. An adapter only knows an engine's wire format:

- `http_json` (docs/cli.md): POST the search URL with `{"q", "filters", "size", "locale", ...params}`
  (and the locale as `Accept-Language`); the reply is `{"hits": [{"id": ...}, ...]}`.
- `elasticsearch` / `opensearch`: POST `<index URL>/_search` with a query template; ids from
  `hits.hits[]._id`.
- `solr`: GET (or POST form) `<core URL>/select` with `q`, one `fq` per filter, `rows`, `wt=json`; ids from
  `response.docs[].id`.

A response that lacks the expected shape raises `AdapterError` naming what is missing: the harness
records it as that query's error, never as an empty result (docs/metrics.md: errors are not empties).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from assay.urls import split_url


class AdapterError(ValueError):
    """A response (or an adapter option) that does not have the expected shape."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """Everything the harness needs to send one search call."""

    method: Literal["GET", "POST"]
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    json_body: Any = None  # sent as JSON when not None
    params: tuple[tuple[str, str], ...] = ()  # URL query string, repeated keys allowed (Solr's fq)
    form: tuple[tuple[str, str], ...] = ()  # application/x-www-form-urlencoded body when not empty


@dataclass(frozen=True, slots=True)
class SearchCall:
    """One query as the engine should see it: what an adapter turns into a request."""

    url: str
    text: str
    filters: Mapping[str, Any] = field(default_factory=dict)
    locale: str | None = None
    size: int = 10
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hits:
    ids: tuple[str, ...]
    # Aligned with ids ("" where a hit has none) when the engine returned any title; else empty.
    titles: tuple[str, ...] = ()


class Adapter(Protocol):
    @property
    def name(self) -> str: ...

    def build_request(self, call: SearchCall) -> SearchRequest: ...

    def parse_response(self, body: Any) -> Hits: ...


def _locale_headers(locale: str | None) -> dict[str, str]:
    # Production search reads the locale from Accept-Language; send it on every engine so caches and
    # analyzers that key on it behave as they do for users.
    return {"Accept-Language": locale} if locale else {}


def _doc_id(value: Any, where: str) -> str:
    # bool is an int subclass; `true` as an id is junk, not document 1.
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise AdapterError(f"{where}: expected a string or integer id, got {_describe(value)}")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value) if isinstance(value, int | float | str) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _title(value: Any) -> str | None:
    # Solr returns multivalued fields as lists; the first value is the displayed title.
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, str) else None


def _collect(
    items: list[Any], prefix: str, id_key: str, title_of: Callable[[dict[str, Any]], Any], *, hint: str = ""
) -> Hits:
    """Ids (and titles) from a list of hit objects, naming the first bad hit by its place.

    Once per reply of every query, so the common reply (objects with string ids) is read in bulk; any
    other goes through the hit-by-hit walk, which converts integer ids and names what is wrong."""
    try:
        ids = [item[id_key] for item in items]
    except (KeyError, TypeError, IndexError):  # not an object, or no id: the walk says which
        return _collect_walk(items, prefix, id_key, title_of, hint=hint)
    if not all(type(value) is str for value in ids):
        return _collect_walk(items, prefix, id_key, title_of, hint=hint)
    raw = [title_of(item) for item in items]
    titles = [_title(title) for title in raw] if any(title is not None for title in raw) else []
    if all(title is None for title in titles):
        return Hits(ids=tuple(ids))
    return Hits(ids=tuple(ids), titles=tuple(title or "" for title in titles))


def _collect_walk(
    items: list[Any], prefix: str, id_key: str, title_of: Callable[[dict[str, Any]], Any], *, hint: str
) -> Hits:
    ids: list[str] = []
    titles: list[str | None] = []
    for i, item in enumerate(items):
        where = f"{prefix}[{i}]"
        if not isinstance(item, dict):
            raise AdapterError(f"{where}: expected an object with {id_key!r}, got {_describe(item)}")
        if id_key not in item:
            raise AdapterError(f"{where}: missing {id_key!r}{hint}")
        ids.append(_doc_id(item[id_key], f"{where}.{id_key}"))
        titles.append(_title(title_of(item)))
    if all(title is None for title in titles):
        return Hits(ids=tuple(ids))
    return Hits(ids=tuple(ids), titles=tuple(title or "" for title in titles))


def _require_list(body: Any, path: tuple[str, ...]) -> list[Any]:
    """Follow `path` through nested objects to a list, naming the first step that is missing."""
    node = body
    for depth, key in enumerate(path):
        where = ".".join(path[:depth]) or "the response"
        if not isinstance(node, dict):
            raise AdapterError(f"{where}: expected a JSON object with {key!r}, got {_describe(node)}")
        if key not in node:
            raise AdapterError(f"{where}: missing {key!r}")
        node = node[key]
    if not isinstance(node, list):
        raise AdapterError(f"{'.'.join(path)}: expected a list, got {_describe(node)}")
    return node


@dataclass(frozen=True, slots=True)
class HttpJsonAdapter:
    """The default contract (docs/cli.md); `params` become extra body fields (stage toggles: `rewrite`)."""

    name: str = "http_json"

    def build_request(self, call: SearchCall) -> SearchRequest:
        body: dict[str, Any] = {"q": call.text, "filters": dict(call.filters), "size": call.size}
        if call.locale:
            body["locale"] = call.locale
        clash = sorted(set(call.params) & {"q", "filters", "size", "locale"})
        if clash:
            raise AdapterError(f"params {', '.join(clash)}: would overwrite the request's own fields")
        body.update(call.params)
        return SearchRequest("POST", call.url, headers=_locale_headers(call.locale), json_body=body)

    def parse_response(self, body: Any) -> Hits:
        return _collect(_require_list(body, ("hits",)), "hits", "id", lambda hit: hit.get("title"))


# Placeholders a query template may use. A string that is exactly a placeholder is replaced by the JSON
# value (so "{{size}}" becomes the integer 10 and "{{filters}}" a list of clauses); inside a longer
# string, {{q}}, {{locale}} and {{size}} are replaced as text.
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
_TEMPLATE_NAMES = ("q", "size", "filters", "locale")

DEFAULT_ES_TEMPLATE: Mapping[str, Any] = {
    "size": "{{size}}",
    "query": {
        "bool": {
            "must": {"multi_match": {"query": "{{q}}", "fields": ["title^2", "body"]}},
            "filter": "{{filters}}",
        }
    },
}


def es_filter_clauses(filters: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A bool filter of exact-match clauses: `term` for a value, `terms` for a list (any of)."""
    clauses: list[dict[str, Any]] = []
    for key in sorted(filters):
        value = filters[key]
        clauses.append({"terms": {key: list(value)}} if isinstance(value, list) else {"term": {key: value}})
    return clauses


def check_template(template: Any) -> None:
    """Refuse a template with unknown placeholders or none for the query text, before any request."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, str):
            found.update(_PLACEHOLDER.findall(node))
        elif isinstance(node, dict):
            for key, value in node.items():
                walk(key)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    if not isinstance(template, dict):
        raise AdapterError(f"query template: expected a JSON object, got {_describe(template)}")
    walk(template)
    unknown = sorted(found - set(_TEMPLATE_NAMES))
    if unknown:
        names = ", ".join("{{" + u + "}}" for u in unknown)
        known = ", ".join("{{" + n + "}}" for n in _TEMPLATE_NAMES)
        raise AdapterError(f"query template: unknown placeholder {names} (known: {known})")
    if "q" not in found:
        raise AdapterError("query template: no {{q}} placeholder for the query text")


def _fill(node: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(node, str):
        whole = _PLACEHOLDER.fullmatch(node)
        if whole:
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: "" if values[m.group(1)] is None else str(values[m.group(1)]), node)
    if isinstance(node, dict):
        return {_fill(k, values): _fill(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(item, values) for item in node]
    return node


@dataclass(frozen=True, slots=True)
class ElasticsearchAdapter:
    """Elasticsearch and OpenSearch share the `_search` API. `params` go to the URL query string
    (`request_cache=false`, `preference=...`): the body belongs to the template."""

    template: Mapping[str, Any] = field(default_factory=lambda: DEFAULT_ES_TEMPLATE)
    name: str = "elasticsearch"

    def __post_init__(self) -> None:
        check_template(self.template)

    def build_request(self, call: SearchCall) -> SearchRequest:
        values = {
            "q": call.text,
            "size": call.size,
            "filters": es_filter_clauses(call.filters),
            "locale": call.locale,
        }
        return SearchRequest(
            "POST",
            _endpoint(call.url, "/_search"),
            headers=_locale_headers(call.locale),
            json_body=_fill(self.template, values),
            params=tuple((k, _query_value(v)) for k, v in call.params.items()),
        )

    def parse_response(self, body: Any) -> Hits:
        def title(hit: dict[str, Any]) -> Any:
            source = hit.get("_source")
            return source.get("title") if isinstance(source, dict) else None

        return _collect(_require_list(body, ("hits", "hits")), "hits.hits", "_id", title)


def _endpoint(url: str, suffix: str) -> str:
    """The engine's API path under the URL given (an index or core URL), unless it is already there.

    Only the path grows: a query string on the URL (`/idx?routing=x`) stays a query string.
    """
    parts = split_url(url)
    path = parts.path.rstrip("/")
    if not path.endswith(suffix):
        path += suffix
    return parts.joined(path=path)


def _query_value(value: Any) -> str:
    # URL parameters are text; JSON spelling keeps `true` lowercase as engines expect.
    return value if isinstance(value, str) else json.dumps(value)


def solr_quote(value: Any) -> str:
    """A filter value as a quoted Solr term: backslashes and quotes escaped, booleans lowercase."""
    text = _query_value(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def solr_filter_queries(filters: Mapping[str, Any]) -> list[str]:
    """One `fq` per filter so Solr caches each independently; a list value means any of its values."""
    out: list[str] = []
    for key in sorted(filters):
        value = filters[key]
        if isinstance(value, list):
            out.append(f"{key}:(" + " OR ".join(solr_quote(v) for v in value) + ")")
        else:
            out.append(f"{key}:{solr_quote(value)}")
    return out


@dataclass(frozen=True, slots=True)
class SolrAdapter:
    """Solr's `/select`; `params` are extra request parameters (`defType=edismax`, `qf=title^2 body`)."""

    method: Literal["GET", "POST"] = "GET"
    name: str = "solr"

    def build_request(self, call: SearchCall) -> SearchRequest:
        clash = sorted(set(call.params) & {"q", "fq", "rows", "wt"})
        if clash:
            raise AdapterError(f"params {', '.join(clash)}: would overwrite the request's own fields")
        fields = [("q", call.text), *(("fq", fq) for fq in solr_filter_queries(call.filters))]
        fields += [("rows", str(call.size)), ("wt", "json")]
        fields += [(k, _query_value(v)) for k, v in call.params.items()]
        endpoint = _endpoint(call.url, "/select")
        headers = _locale_headers(call.locale)
        if self.method == "POST":
            return SearchRequest("POST", endpoint, headers=headers, form=tuple(fields))
        return SearchRequest("GET", endpoint, headers=headers, params=tuple(fields))

    def parse_response(self, body: Any) -> Hits:
        docs = _require_list(body, ("response", "docs"))
        return _collect(docs, "response.docs", "id", lambda doc: doc.get("title"), hint=" (is it in fl?)")


@dataclass(frozen=True, slots=True)
class AdapterKind:
    """One adapter in the registry: its name (the `--adapter` value, a target's `adapter` column), its
    label on the target form, whether it takes a query template, and how it is made."""

    name: str
    label: str
    templated: bool
    make: Callable[[Mapping[str, Any] | None, Literal["GET", "POST"]], Adapter]


def _templated(name: str, label: str) -> AdapterKind:
    """Elasticsearch and OpenSearch: one wire format, a query template (`DEFAULT_ES_TEMPLATE` unless
    given), reported under its own name."""
    return AdapterKind(
        name,
        label,
        templated=True,
        make=lambda template, solr_method: ElasticsearchAdapter(
            template=template or DEFAULT_ES_TEMPLATE, name=name
        ),
    )


# The one registry of adapters: the command's `--adapter` choices, a target's choices and its database
# constraint (evaluation.runs.models.SearchTarget), the target checks (assay.targets) and docs/cli.md's table
# (held equal by tests/assay/test_adapters_registry.py) all read it.
ADAPTERS: dict[str, AdapterKind] = {
    kind.name: kind
    for kind in (
        AdapterKind(
            "http_json",
            "http_json: the default HTTP JSON contract (docs/cli.md)",
            templated=False,
            make=lambda template, solr_method: HttpJsonAdapter(),
        ),
        _templated("elasticsearch", "Elasticsearch"),
        _templated("opensearch", "OpenSearch"),
        AdapterKind(
            "solr",
            "Solr",
            templated=False,
            make=lambda template, solr_method: SolrAdapter(method=solr_method),
        ),
    )
}
ADAPTER_NAMES = tuple(ADAPTERS)
DEFAULT_ADAPTER = "http_json"
# A target's choices: (name, label) pairs.
ADAPTER_CHOICES = [(kind.name, kind.label) for kind in ADAPTERS.values()]


def make_adapter(
    name: str,
    *,
    template: Mapping[str, Any] | None = None,
    solr_method: Literal["GET", "POST"] = "GET",
) -> Adapter:
    """The adapter called `name`; `template` applies to the templated ones (elasticsearch/opensearch) only."""
    kind = ADAPTERS.get(name)
    if kind is None:
        raise AdapterError(f"unknown adapter {name!r} (known: {', '.join(ADAPTER_NAMES)})")
    if template is not None and not kind.templated:
        templated = "/".join(k.name for k in ADAPTERS.values() if k.templated)
        raise AdapterError(f"a query template applies to {templated}, not {name}")
    return kind.make(template, solr_method)
