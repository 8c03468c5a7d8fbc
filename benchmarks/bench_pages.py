"""Every page a reviewer opens on the demo, timed at the server (Django's test client, DEBUG off), on
`make run`'s stack (SQLite) and on PostgreSQL, each in a database of its own.

The demo as `make run` leaves it: `demo_load`, then `demo_runs` against the demo search service (budgets,
the first golden version, the target demo-search, the baseline run with the rewriter off, the rewrite
run, the billing study), the runs' tasks run in the measuring process (Celery eager: a page reads what a
run stored, not how it ran). The pages: those tests/browser/site.py names for a reviewer, found on the
demo, then every page their links lead to, breadth first (downloads, the admin and the API left out), at
most two addresses for each page of the URL conf and set of query keys. Each
page is requested twice to warm up, then REPEAT times: the median and the 95th percentile of the time the
client waited for the whole response, the web process's CPU time and the SQL statements of one request.
The slowest ten by median are listed; the target is every page under 300 ms.
"""

from __future__ import annotations

import io
import json
import os
import statistics
import sys
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

REPEAT = int(os.environ.get("ASSAY_BENCH_PAGES_REPEAT", "5"))
PER_PAGE = 2  # addresses of one page of the URL conf (with one set of query keys) timed
SLOWEST = 10
TARGET_MS = 300.0
LEFT_OUT = ("/static/", "/admin/", "/api/", "/accounts/", "/health/", "/metrics")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href") and "download" not in values:
            self.hrefs.append(str(values["href"]))


def links(base: str, markup: str) -> list[str]:
    """The page's own links (no fragment), as paths with their query strings."""
    parser = _Links()
    parser.feed(markup)
    found = []
    for href in parser.hrefs:
        parts = urlsplit(urljoin(base, href))
        if parts.netloc not in ("", "testserver") or not parts.path.startswith("/"):
            continue
        found.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return found


def page_key(url: str) -> str | None:
    """Which page of the URL conf `url` is, with its query keys: None for what is not a reviewer's page."""
    from django.urls import Resolver404, resolve

    parts = urlsplit(url)
    if parts.path.startswith(LEFT_OUT) or parts.path.endswith((".json", ".jsonl", ".csv", ".md", ".txt")):
        return None
    try:
        match = resolve(parts.path)
    except Resolver404:
        return None
    keys = sorted({key for key, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return f"{match.view_name}?{'&'.join(keys)}"


def seeds() -> list[str]:
    """The reviewer's pages of tests/browser/site.py, found on the demo as `make run` leaves it."""
    from django.urls import reverse

    from evaluation.runs.models import EvaluationRun
    from evaluation.studies.models import SxsStudy
    from golden_io.models import GoldenVersion
    from labeling.models import CalibrationRound, GoldenSet, Judge, Query

    golden_set = GoldenSet.objects.get(slug="help-center")
    slug = golden_set.slug
    baseline, current = EvaluationRun.objects.order_by("id")[:2]
    version = GoldenVersion.objects.filter(golden_set=golden_set).order_by("-id").first()
    loser = ((current.gate or {}).get("top_losers") or [{"id": "q-0471"}])[0]["id"]
    disputed = Query.objects.filter(golden_set=golden_set, tier="shadow").order_by("id").first()
    judge = Judge.objects.filter(golden_set=golden_set).order_by("id").first()
    calibration = CalibrationRound.objects.filter(golden_set=golden_set).order_by("id").first()
    study = SxsStudy.objects.order_by("id").first()
    pages = [
        reverse("home"),
        reverse("labeling:set_list"),
        reverse("labeling:set_detail", args=[slug]),
        reverse("labeling:labels_summary", args=[slug]),
        reverse("labeling:import", args=[slug]),
        reverse("labeling:agreement", args=[slug]),
        reverse("labeling:disputes", args=[slug]),
        reverse("labeling:proposals", args=[slug]),
        reverse("labeling:calibration_list", args=[slug]),
        reverse("labeling:judge_list", args=[slug]),
        reverse("labeling:judge_new", args=[slug]),
        reverse("labeling:judge_compare", args=[slug]),
        reverse("golden_io:set_list"),
        reverse("golden_io:version_list", args=[slug]),
        reverse("golden_io:diff", args=[slug]),
        reverse("golden_io:freeze", args=[slug]),
        reverse("golden_io:export_config", args=[slug]),
        reverse("evaluation:run_list"),
        reverse("evaluation:run_new"),
        reverse("evaluation:run_detail", args=[current.pk]),
        reverse("evaluation:run_detail", args=[baseline.pk]),
        reverse("evaluation:run_compare") + f"?a={baseline.pk}&b={current.pk}",
        reverse("evaluation:run_compare") + f"?a={baseline.pk}&b={current.pk}&query={loser}",
        reverse("evaluation:target_list"),
        reverse("evaluation:target_new"),
        reverse("evaluation:target_detail", args=[current.target_id]),
        reverse("evaluation:target_edit", args=[current.target_id]),
        reverse("evaluation:target_trend", args=[current.target_id]) + f"?set={slug}",
        reverse("evaluation:budgets", args=[slug]),
        reverse("evaluation:baselines", args=[slug]),
        reverse("evaluation:tokens"),
        reverse("evaluation:experiment_list"),
        reverse("evaluation:experiment_new"),
        reverse("evaluation:study_list", args=[slug]),
        reverse("evaluation:study_new", args=[slug]),
    ]
    if version is not None:
        pages.append(reverse("golden_io:version_detail", args=[slug, version.name]))
    if disputed is not None:
        pages += [
            reverse("labeling:query_review", args=[slug, disputed.pk]),
            reverse("labeling:adjudicate", args=[slug, disputed.pk]),
        ]
    if judge is not None:
        pages += [
            reverse("labeling:judge_detail", args=[slug, judge.pk]),
            reverse("labeling:judge_qualification", args=[slug, judge.pk]),
        ]
    if calibration is not None:
        pages.append(reverse("labeling:calibration_round", args=[slug, calibration.pk]))
    if study is not None:
        pages.append(reverse("evaluation:study_detail", args=[study.pk]))
    return pages


def crawl(client: Any, start: list[str]) -> list[tuple[str, str]]:
    """(key, url) of every page reached from `start` by links, breadth first, PER_PAGE per key."""
    taken: dict[str, int] = {}
    seen: set[str] = set()
    queue = deque(start)
    pages = []
    while queue:
        url = queue.popleft()
        key = page_key(url)
        if url in seen or key is None or taken.get(key, 0) >= PER_PAGE:
            continue
        seen.add(url)
        response = client.get(url)
        if response.status_code != 200 or not response["Content-Type"].startswith("text/html"):
            continue
        taken[key] = taken.get(key, 0) + 1
        pages.append((key, url))
        queue.extend(links(url, response.content.decode()))
    return pages


def demo_story() -> None:
    """`make run`'s demo: loaded, then its story played against the demo search service."""
    from django.core.management import call_command

    from benchmarks._stacks import demo_loaded
    from tests.support.processes import serving

    demo_loaded()
    search = ["-m", "demo.search_service", "--corpus", "demo/corpus.jsonl", "--port", "0"]
    with serving(search) as base:
        call_command("demo_runs", search_url=f"{base}/search", stdout=io.StringIO())


def inner(out: Path) -> None:
    # Set before Django reads its settings: the runs' tasks in this process, pages as production serves
    # them (DEBUG off), the test client's host allowed.
    os.environ |= {
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "DJANGO_DEBUG": "false",
        "DJANGO_ALLOWED_HOSTS": "testserver",
    }
    demo_story()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from benchmarks._report import page_timed

    client = Client()
    client.force_login(get_user_model().objects.get(username="reviewer"))
    load_before = os.getloadavg()
    rows = []
    for key, url in crawl(client, seeds()):
        rows.append({"key": key, **page_timed(client, url, REPEAT)})
    out.write_text(json.dumps({"rows": rows, "load_before": load_before, "load_after": os.getloadavg()}))


def render(figures: dict[str, dict[str, Any]]) -> str:
    doc = (__doc__ or "").split("\n", 2)[2].strip()
    lines = ["## Every page a reviewer opens on the demo", "", f"`benchmarks/bench_pages.py`: {doc}", ""]
    for stack, f in figures.items():
        rows = sorted(f["rows"], key=lambda r: -r["median"])
        over = [r for r in rows if r["median"] >= TARGET_MS]
        load = " / ".join(f"{v:.1f}" for v in f["load_before"])
        lines += [
            f"### {stack}: the slowest {SLOWEST} of {len(rows)} pages",
            "",
            f"Load average (1, 5, 15 min) {load} before; median of all pages"
            f" {statistics.median(r['median'] for r in rows):.1f} ms. "
            + (
                f"Every page answers under {TARGET_MS:.0f} ms."
                if not over
                else f"{len(over)} page{'s' if len(over) > 1 else ''} at or over {TARGET_MS:.0f} ms."
            ),
            "",
            "| page | address | median ms | p95 ms | web CPU ms | SQL statements |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for row in rows[:SLOWEST]:
            lines.append(
                f"| {row['key'].split('?')[0]} | `{row['url']}` | **{row['median']:.1f}** | {row['p95']:.1f}"
                f" | {row['cpu']:.1f} | {row['queries']} |"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    from benchmarks._report import save_figures, write_section
    from benchmarks._stacks import each_stack

    figures = each_stack("pages")
    markdown = render(figures)
    print(markdown)
    save_figures("pages", figures)
    write_section("pages", markdown)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--inner":
        inner(Path(sys.argv[2]))
    else:
        main()
