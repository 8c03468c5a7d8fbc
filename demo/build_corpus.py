"""Build demo/corpus.jsonl from the hand-written articles in demo/source/*.txt.

    python -m demo.build_corpus [--check]

Source format, one block per article:

    ## <product>/<section>/<slug> [locale=de-DE] [status=draft] [id=8821] [updated=2026-03-02]
    # Title
    > Snippet (one or more lines starting with "> ")
    Body paragraphs, separated by blank lines.

Ids are `doc-<n>`: pinned ids (`id=`) first, then 1001 upwards in file order, skipping pinned ones, so
the same sources always give the same ids. `key` is the canonical URL (durable across re-ingests),
`url` the display URL that carries the article number. `--check` rebuilds in memory and exits 1 if the
committed file differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
SOURCE_DIR = DEMO_DIR / "source"
CORPUS_PATH = DEMO_DIR / "corpus.jsonl"

# File order decides id order; it is fixed so a new file never renumbers existing documents.
SOURCE_FILES = (
    "billing_subscriptions.txt",
    "billing_invoices_payments.txt",
    "billing_refunds.txt",
    "billing_payments_taxes.txt",
    "billing_hardware.txt",
    "billing_devices.txt",
    "account.txt",
    "developer.txt",
    "api_reference.txt",
    "blog.txt",
    "extras.txt",
    "localized_de.txt",
    "localized_fr.txt",
)
PRODUCTS = ("billing", "account", "developer", "blog")
STATUSES = ("published", "draft", "archived")
LOCALES = ("en-US", "de-DE", "fr-FR")
FIRST_ID = 1001
HEADER = re.compile(
    r"^## (?P<product>[a-z]+)/(?P<section>[a-z0-9-]+)/(?P<slug>[a-z0-9-]+)(?P<attrs>( \S+=\S+)*)$"
)
ATTRIBUTES = ("locale", "status", "id", "updated")


class SourceError(ValueError):
    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class Article:
    product: str
    section: str
    slug: str
    title: str
    snippet: str
    body: str
    locale: str = "en-US"
    status: str = "published"
    pinned_id: int | None = None
    updated: str | None = None
    where: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        """The canonical URL: the durable key judgments keep when ids change."""
        if self.product == "blog":
            return f"https://lanternly.example/blog/{self.slug}"
        if self.product == "developer":
            return f"https://developers.lanternly.example/{self.section}/{self.slug}"
        return f"https://help.lanternly.example/{self.locale.lower()}/{self.product}/{self.slug}"


def parse_source(text: str, *, source: str) -> list[Article]:
    articles: list[Article] = []
    problems: list[str] = []
    blocks: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("## "):
            blocks.append((number, [line]))
        elif blocks:
            blocks[-1][1].append(line)
        elif line.strip():
            problems.append(f"{source}:{number}: text before the first '## ' header")
    for number, lines in blocks:
        where = f"{source}:{number}"
        match = HEADER.match(lines[0])
        if match is None:
            problems.append(f"{where}: header must be '## product/section/slug [name=value ...]'")
            continue
        attrs = dict(pair.split("=", 1) for pair in match["attrs"].split())
        unknown = sorted(set(attrs) - set(ATTRIBUTES))
        if unknown:
            problems.append(f"{where}: unknown attributes {unknown}")
        rest = lines[1:]
        if not rest or not rest[0].startswith("# "):
            problems.append(f"{where}: the line after the header must be '# Title'")
            continue
        snippet_lines = []
        i = 1
        while i < len(rest) and rest[i].startswith("> "):
            snippet_lines.append(rest[i][2:].strip())
            i += 1
        paragraphs = [p.strip() for p in "\n".join(rest[i:]).split("\n\n") if p.strip()]
        if not snippet_lines:
            problems.append(f"{where}: a '> snippet' line must follow the title")
        if not paragraphs:
            problems.append(f"{where}: no body")
        product = match["product"]
        locale = attrs.get("locale", "en-US")
        status = attrs.get("status", "published")
        pinned = attrs.get("id")
        if product not in PRODUCTS:
            problems.append(f"{where}: product {product!r} is not one of {PRODUCTS}")
        if locale not in LOCALES:
            problems.append(f"{where}: locale {locale!r} is not one of {LOCALES}")
        if status not in STATUSES:
            problems.append(f"{where}: status {status!r} is not one of {STATUSES}")
        if pinned is not None and not (pinned.isascii() and pinned.isdigit()):
            problems.append(f"{where}: id must be digits, got {pinned!r}")
            pinned = None
        updated = attrs.get("updated")
        if updated is not None:
            try:
                date.fromisoformat(updated)
            except ValueError:
                problems.append(f"{where}: updated must be YYYY-MM-DD, got {updated!r}")
        articles.append(
            Article(
                product=product,
                section=match["section"],
                slug=match["slug"],
                title=rest[0][2:].strip(),
                snippet=" ".join(snippet_lines),
                body="\n\n".join(" ".join(p.split("\n")) if not _is_list(p) else p for p in paragraphs),
                locale=locale,
                status=status,
                pinned_id=int(pinned) if pinned else None,
                updated=updated,
                where=where,
            )
        )
    if problems:
        raise SourceError(problems)
    return articles


def _is_list(paragraph: str) -> bool:
    # Numbered steps keep their line breaks; prose lines are joined.
    return bool(re.match(r"^\d+\. ", paragraph))


def _default_updated(key: str) -> str:
    # A stable pseudo-random date between 2025-01-01 and 2026-07-15 for articles that do not set one.
    offset = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 561
    return (date(2025, 1, 1) + timedelta(days=offset)).isoformat()


def build_documents(articles: Sequence[Article]) -> list[dict[str, object]]:
    problems: list[str] = []
    seen_keys: dict[str, str] = {}
    pinned: dict[int, str] = {}
    for article in articles:
        if article.key in seen_keys:
            problems.append(f"{article.where}: key {article.key} already used at {seen_keys[article.key]}")
        seen_keys[article.key] = article.where
        if article.pinned_id is not None:
            if article.pinned_id in pinned:
                problems.append(
                    f"{article.where}: id {article.pinned_id} already pinned at {pinned[article.pinned_id]}"
                )
            pinned[article.pinned_id] = article.where
    if problems:
        raise SourceError(problems)
    next_id = FIRST_ID
    docs: list[dict[str, object]] = []
    for article in articles:
        number = article.pinned_id
        if number is None:
            while next_id in pinned:
                next_id += 1
            number = next_id
            next_id += 1
        if article.product in ("billing", "account"):
            url = (
                f"https://help.lanternly.example/hc/{article.locale.lower()}/articles/{number}-{article.slug}"
            )
        else:
            url = article.key
        docs.append(
            {
                "id": f"doc-{number}",
                "key": article.key,
                "title": article.title,
                "url": url,
                "snippet": article.snippet,
                "body": article.body,
                "fields": {
                    "product": article.product,
                    "section": article.section,
                    "status": article.status,
                    "locale": article.locale,
                    "updated": article.updated or _default_updated(article.key),
                },
            }
        )
    return docs


def load_articles(source_dir: Path = SOURCE_DIR) -> list[Article]:
    articles: list[Article] = []
    problems: list[str] = []
    listed = set(SOURCE_FILES)
    stray = sorted(p.name for p in source_dir.glob("*.txt") if p.name not in listed)
    if stray:
        problems.append(f"{source_dir}: files not listed in SOURCE_FILES: {stray}")
    for name in SOURCE_FILES:
        path = source_dir / name
        try:
            articles.extend(parse_source(path.read_text(encoding="utf-8"), source=f"source/{name}"))
        except SourceError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SourceError(problems)
    return articles


def render(docs: Sequence[dict[str, object]]) -> str:
    return "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo.build_corpus", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if demo/corpus.jsonl is out of date")
    args = parser.parse_args(argv)
    try:
        text = render(build_documents(load_articles()))
    except SourceError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.check:
        current = CORPUS_PATH.read_text(encoding="utf-8") if CORPUS_PATH.exists() else ""
        if current != text:
            print(f"{CORPUS_PATH} is out of date: run python -m demo.build_corpus", file=sys.stderr)
            return 1
        return 0
    tmp = CORPUS_PATH.with_suffix(".jsonl.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(CORPUS_PATH)
    print(f"wrote {CORPUS_PATH} ({text.count(chr(10))} documents)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
