"""Search targets as plain data, and how one becomes a harness configuration (pure, no Django).

A `SearchTarget` row (evaluation.models) is turned into a `TargetSpec` when a run is created, and the run
keeps that snapshot: every chunk of the run calls the engine the same way even if the target is edited
while the run is in flight, and the report says exactly what was called.

Secrets never live in a spec. A header value is either a literal (`"Cache-Control": "no-cache"`) or a
reference to an environment variable (`"Authorization": {"env": "ASSAY_SECRET_SEARCH_TOKEN"}`) that is read
from the worker's environment at call time (`harness_config`); only names with the secret prefix may be
named (`assay.secrets`). Header names that look like credentials refuse
literal values, so a token cannot be stored by mistake.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from assay.adapters import ADAPTER_NAMES, AdapterError, check_template
from assay.harness_config import HarnessConfig, config_problems
from assay.inputs import header_name_problem, header_value_problem
from assay.secrets import credential_name, secret_env_problem
from assay.urls import UrlError, split_url, url_credential_problems

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
REDACTED = "***"


class TargetError(ValueError):
    """A target that cannot be used; `problems` names every bad field, one sentence each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


# A header (or parameter) name that carries a credential: the one rule of names, also the URL's query's.
is_secret_header = credential_name


_USE_ENV = (
    'give it as a header with {"env": "VARIABLE_NAME"} so the value is read from the worker\'s environment'
)


def url_secret_problems(url: str) -> list[str]:
    """A URL that would store a credential: user:password@ or a query parameter named like one
    (`assay.urls.url_credential_problems`). Shown URLs are redacted too (assay.run_meta.redact_url), but a
    secret must not reach the database at all."""
    try:
        parts = split_url(url)
    except UrlError:
        return []  # the harness names the malformed URL
    return [f"url: {problem}" for problem in url_credential_problems(parts, _USE_ENV)]


def params_secret_problems(params: Mapping[str, Any], where: str = "params") -> list[str]:
    """Text parameters named like credentials (`api_key`, `token`): they would be stored with the target
    or the run and shown on its pages."""
    return [
        f"{where}.{name}: looks like a credential; {_USE_ENV}"
        for name, value in params.items()
        if isinstance(name, str) and isinstance(value, str) and is_secret_header(name)
    ]


@dataclass(frozen=True)
class TargetSpec:
    """Everything needed to call one search system, with secrets as env var names only."""

    name: str
    url: str
    adapter: str = "http_json"
    # name -> literal value, or {"env": "VARIABLE"} (read from the environment at call time)
    headers: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)  # engine parameters sent on every call
    stages: Mapping[str, bool] = field(default_factory=dict)  # stage toggles, sent like params
    cache_bypass_header: str = ""  # "Name: value", sent on every call so caches do not answer
    timeout: float = 10.0
    concurrency: int = 8
    retries: int = 3
    rate_limit: float | None = None
    generation_header: str = ""
    generation_field: str = ""
    model_id_header: str = ""
    model_id_field: str = ""
    es_template: Mapping[str, Any] | None = None
    solr_method: str = "GET"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TargetSpec:
        """The spec stored on a run; unknown keys are refused so a renamed field is not silently lost."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TargetError([f"target snapshot: unknown field {', '.join(unknown)}"])
        return cls(**dict(data))

    @property
    def rate_limited(self) -> bool:
        return self.rate_limit is not None


SPEC_FIELDS = tuple(f.name for f in fields(TargetSpec))


def target_spec(target: Any) -> TargetSpec:
    """The spec of anything with the SearchTarget attributes (a model row, a test double)."""
    values = {name: getattr(target, name) for name in SPEC_FIELDS}
    values["headers"] = dict(values["headers"] or {})
    values["params"] = dict(values["params"] or {})
    values["stages"] = dict(values["stages"] or {})
    return TargetSpec(**values)


def parse_header_line(line: str) -> tuple[str, str] | None:
    """("Name", "value") from "Name: value"; None when the line has no colon or a bad name."""
    name, sep, value = line.partition(":")
    name = name.strip()
    if not sep or header_name_problem(name):
        return None
    return name, value.strip()


def _header_problems(headers: object) -> list[str]:
    if not isinstance(headers, Mapping):
        return [f"headers: expected an object of header name -> value, got {type(headers).__name__}"]
    problems: list[str] = []
    seen: set[str] = set()
    for name, value in headers.items():
        where = f"headers.{name}"
        bad_name = header_name_problem(name) if isinstance(name, str) else f"{name!r} is not a header name"
        if bad_name:
            problems.append(f"{where}: {bad_name}")
            continue
        if name.lower() in seen:
            problems.append(f"{where}: given twice (header names are case-insensitive)")
        seen.add(name.lower())
        if isinstance(value, Mapping):
            env = value.get("env")
            if set(value) != {"env"} or not isinstance(env, str) or not _ENV_NAME.match(env):
                problems.append(f'{where}: expected {{"env": "VARIABLE_NAME"}}, got {dict(value)!r}')
            elif refused := secret_env_problem(env):
                problems.append(f"{where}: {refused}")
        elif isinstance(value, str):
            if is_secret_header(name):
                problems.append(
                    f'{where}: looks like a credential; give it as {{"env": "VARIABLE_NAME"}} so the '
                    "value is read from the worker's environment and never stored"
                )
            elif bad_value := header_value_problem(value):
                problems.append(f"{where}: {bad_value}")
        else:
            problems.append(f'{where}: expected a string or {{"env": "VARIABLE_NAME"}}, got {value!r}')
    return problems


def _json_object_problems(value: object, where: str) -> list[str]:
    if not isinstance(value, Mapping):
        return [f"{where}: expected a JSON object, got {type(value).__name__}"]
    return [
        f"{where}: keys must be non-empty strings, got {k!r}"
        for k in value
        if not isinstance(k, str) or not k
    ]


def spec_problems(spec: TargetSpec) -> list[str]:
    """Every reason this spec cannot be called, each naming its field; empty when it is usable."""
    problems: list[str] = []
    if not spec.name.strip():
        problems.append("name: must not be empty")
    if spec.adapter not in ADAPTER_NAMES:
        problems.append(f"adapter: {spec.adapter!r} is not one of {', '.join(ADAPTER_NAMES)}")
        return problems  # nothing else can be checked against an unknown wire format
    problems += url_secret_problems(spec.url)
    problems += _header_problems(spec.headers)
    problems += _json_object_problems(spec.params, "params")
    if isinstance(spec.params, Mapping):
        problems += params_secret_problems(spec.params)
    problems += _json_object_problems(spec.stages, "stages")
    if isinstance(spec.stages, Mapping):
        problems += [
            f"stages.{k}: expected true or false, got {v!r}"
            for k, v in spec.stages.items()
            if not isinstance(v, bool)
        ]
        if isinstance(spec.params, Mapping):
            clash = sorted(set(spec.params) & set(spec.stages))
            if clash:
                problems.append(f"stages {', '.join(clash)}: also given in params; say each once")
    if spec.cache_bypass_header:
        parsed = parse_header_line(spec.cache_bypass_header)
        if parsed is None:
            problems.append(
                f"cache_bypass_header: {spec.cache_bypass_header!r} is not 'Name: value' "
                "(e.g. Cache-Control: no-cache)"
            )
        elif bad_value := header_value_problem(parsed[1]):
            problems.append(f"cache_bypass_header: {bad_value}")
    # Names of reply headers to read: a name no header can have would silently never match.
    for name in ("generation_header", "model_id_header"):
        if getattr(spec, name) and (bad_name := header_name_problem(getattr(spec, name))):
            problems.append(f"{name}: {bad_name}")
    if spec.rate_limit is not None and (
        not isinstance(spec.rate_limit, int | float) or not math.isfinite(spec.rate_limit)
    ):
        problems.append(f"rate_limit: {spec.rate_limit!r} is not a number")
    if spec.es_template is not None:
        if spec.adapter not in ("elasticsearch", "opensearch"):
            problems.append(
                f"es_template: a query template applies to elasticsearch/opensearch, not {spec.adapter}"
            )
        else:
            try:
                check_template(spec.es_template)
            except AdapterError as exc:
                problems.append(f"es_template: {exc}")
    if spec.solr_method not in ("GET", "POST"):
        problems.append(f"solr_method: {spec.solr_method!r} is not GET or POST")
    if problems:
        return problems
    # The harness knows the rest (URL shape, ranges, params clashing with the request's own fields).
    try:
        config = _config(spec, size=10, params=None, headers={n: REDACTED for n in spec.headers})
    except (TypeError, ValueError) as exc:
        return [str(exc)]
    return config_problems(config)


def effective_params(spec: TargetSpec, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the engine is sent: the target's params and stage toggles, then a run's overrides (which may
    flip a stage, e.g. {"rewrite": true})."""
    merged: dict[str, Any] = {**spec.params, **spec.stages}
    merged.update(overrides or {})
    return merged


def resolve_headers(spec: TargetSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """The headers to send, env references read from `environ`; TargetError names each missing variable."""
    headers: dict[str, str] = {}
    problems: list[str] = []
    for name, value in spec.headers.items():
        if isinstance(value, Mapping):
            variable = value["env"]
            if refused := secret_env_problem(variable):  # a row stored before the prefix rule
                problems.append(f"headers.{name}: {refused}")
            elif variable not in environ:
                problems.append(f"headers.{name}: environment variable {variable} is not set on this worker")
            else:
                headers[name] = environ[variable]
        else:
            headers[name] = value
    if problems:
        raise TargetError(problems)
    if spec.cache_bypass_header:
        parsed = parse_header_line(spec.cache_bypass_header)
        if parsed is not None:
            headers[parsed[0]] = parsed[1]
    return headers


def _config(
    spec: TargetSpec,
    *,
    size: int,
    params: Mapping[str, Any] | None,
    headers: Mapping[str, str],
    secrets: tuple[str, ...] = (),
) -> HarnessConfig:
    return HarnessConfig(
        url=spec.url,
        adapter=spec.adapter,
        size=size,
        params=effective_params(spec, params),
        headers=dict(headers),
        secrets=secrets,
        concurrency=spec.concurrency,
        timeout=spec.timeout,
        retries=spec.retries,
        rate_limit=spec.rate_limit,
        generation_header=spec.generation_header or None,
        generation_field=spec.generation_field or None,
        model_id_header=spec.model_id_header or None,
        model_id_field=spec.model_id_field or None,
        es_template=spec.es_template,
        solr_method="POST" if spec.solr_method == "POST" else "GET",
    )


def harness_config(
    target: Any,
    *,
    size: int = 10,
    params: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    redact: bool = False,
) -> HarnessConfig:
    """The HarnessConfig for a SearchTarget (or its TargetSpec), asking the engine for `size` results.

    `params` are a run's overrides on top of the target's params and stages. Secret headers are read from
    `environ` (default: this process's environment); `redact=True` puts `***` in their place instead, for
    describing a run without holding its secrets. Raises TargetError for an unusable target or a missing
    environment variable, ValueError (from the harness) for settings out of range.
    """
    spec = target if isinstance(target, TargetSpec) else target_spec(target)
    if redact:
        headers = {name: REDACTED for name in spec.headers}
        if spec.cache_bypass_header and (parsed := parse_header_line(spec.cache_bypass_header)):
            headers[parsed[0]] = parsed[1]
        secrets: tuple[str, ...] = ()
    else:
        headers = resolve_headers(spec, os.environ if environ is None else environ)
        # The values read from the environment: masked in whatever the engine answers (assay.harness_http).
        secrets = tuple(headers[name] for name, value in spec.headers.items() if isinstance(value, Mapping))
    return _config(spec, size=size, params=params, headers=headers, secrets=secrets)


def shown_headers(spec: TargetSpec) -> dict[str, str]:
    """Headers for display: literal values as they are, env references as `$VARIABLE` (never the value)."""
    return {
        name: f"${value['env']}" if isinstance(value, Mapping) else str(value)
        for name, value in spec.headers.items()
    }
