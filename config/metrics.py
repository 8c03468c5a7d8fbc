"""`/metrics`, for Prometheus (docs/deployment.md, "Metrics"): a 404 unless ASSAY_METRICS_ENABLED, and
enabled, a 403 for a request without the bearer token (ASSAY_METRICS_TOKEN) or from an address outside
ASSAY_METRICS_ALLOW_IPS, whichever of the two are set (settings refuse to enable it with neither). No
login: a scraper has no session, so the login wall lets this one address through to its own check.

Each scrape reads the database and the broker (config/metrics_collector.py) and, with
PROMETHEUS_MULTIPROC_DIR set, adds up the counters every process of this machine wrote there
(prometheus-client's multiprocess mode: the judge calls the workers made, labeling/judge_metrics.py).
Without that directory those counters are this process's own.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, disable_created_metrics
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from config.auth import client_ip
from config.metrics_collector import AssayCollector

# Without the multiprocess directory this process's counters are shown, and each would bring a `_created`
# family of its own (as the multiprocess mode never does): left out, so both ways show the same families.
disable_created_metrics()


def refused(request: HttpRequest) -> str | None:
    """Why this request may not read the metrics, in words; None when it may."""
    allowed = settings.ASSAY_METRICS_ALLOW_IPS
    if allowed:
        try:
            address = ipaddress.ip_address((client_ip(request) or "").split("%", 1)[0])
        except ValueError:
            return "The metrics are read only from the addresses ASSAY_METRICS_ALLOW_IPS lists."
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        if not any(address in network for network in allowed):
            return "The metrics are read only from the addresses ASSAY_METRICS_ALLOW_IPS lists."
    token = settings.ASSAY_METRICS_TOKEN
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
            return "The metrics need the bearer token: Authorization: Bearer <ASSAY_METRICS_TOKEN>."
    return None


def registry() -> CollectorRegistry:
    """What one scrape shows: the database's and broker's figures, and the processes' counters."""
    scraped = CollectorRegistry(auto_describe=False)
    scraped.register(AssayCollector())
    if settings.PROMETHEUS_MULTIPROC_DIR:
        MultiProcessCollector(scraped, path=settings.PROMETHEUS_MULTIPROC_DIR)
    else:
        scraped.register(_Own())
    return scraped


class _Own(Collector):
    """This process's own registry (its counters, and prometheus-client's process and Python figures)."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


@login_not_required
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.ASSAY_METRICS_ENABLED:
        raise Http404("metrics are not enabled")
    why = refused(request)
    if why is not None:
        return HttpResponse(why + "\n", status=403, content_type="text/plain; charset=utf-8")
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(registry()), content_type=content_type)
