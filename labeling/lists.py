"""Every long list of the app through one helper: search, filters, sort and pagination read from the URL,
and links that keep them (the template half is `templates/_list_controls.html`).

A view describes its list once (`ListSpec`: the search, the filters with their choices, the sorts) and
calls `list_page(request, items, spec)`; the template includes the controls with the returned `ListPage`.
`items` is a QuerySet (filtered, sorted and counted in the database, one page fetched) or a plain list of
rows built in Python (a report's queries, the review queue's items); `contains`, `equals` and `ordered`
work on both, reading a field path such as `query__external_id` from a model, an object or a dict.

Every state lives in the query string, so a page link, a bookmark or the back button shows the same rows.
A page with several lists gives each a `prefix` (its parameters are `<prefix>q`, `<prefix>sort`, ...);
each list's form and links carry the other lists' parameters along unchanged.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest

PER_PAGE = 50
NONE = "-"  # a filter's value for rows whose field is empty ("no stratum")
MAX_SEARCH = 200  # characters of a search kept: longer text matches nothing a list holds anyway

Apply = Callable[[Any, str], Any]  # (items, the parameter's value) -> items


def _resolve(item: Any, path: str) -> Any:
    """`a__b` of a model, object or dict (None once a step is missing)."""
    value = item
    for step in path.split("__"):
        if value is None:
            return None
        value = value.get(step) if isinstance(value, Mapping) else getattr(value, step, None)
    return value


def contains(*paths: str) -> Apply:
    """Search: every word of the text appears (case-insensitively) in one of the fields."""

    def apply(items: Any, text: str) -> Any:
        words = text.split()
        if isinstance(items, QuerySet):
            for word in words:
                items = items.filter(reduce(operator.or_, (Q(**{f"{p}__icontains": word}) for p in paths)))
            return items
        lowered = [w.casefold() for w in words]
        return [
            item
            for item in items
            if all(any(w in str(_resolve(item, p) or "").casefold() for p in paths) for w in lowered)
        ]

    return apply


def equals(path: str, convert: Callable[[str], Any] = str) -> Apply:
    """Filter: the field equals the chosen value (`convert` turns the parameter into the field's type;
    `NONE` asks for an empty field)."""

    def apply(items: Any, value: str) -> Any:
        wanted = "" if value == NONE else convert(value)
        if isinstance(items, QuerySet):
            return items.filter(**{path: wanted})
        return [item for item in items if _resolve(item, path) == wanted]

    return apply


def where(
    test: Callable[[Any, str], bool] | None = None, *, lookup: Callable[[str], Q] | None = None
) -> Apply:
    """Filter by a test of each row (`test(row, value)`, for lists) or by the Q object `lookup(value)`
    builds (for QuerySets)."""

    def apply(items: Any, value: str) -> Any:
        if isinstance(items, QuerySet):
            if lookup is None:
                raise TypeError("this filter needs a lookup to filter a QuerySet")
            return items.filter(lookup(value))
        if test is None:
            raise TypeError("this filter needs a test to filter a list")
        return [item for item in items if test(item, value)]

    return apply


def _sort_key(value: Any) -> tuple[int, Any]:
    """None sorts last either way; text sorts without regard to case."""
    if value is None:
        return (1, 0)
    return (0, value.casefold() if isinstance(value, str) else value)


def ordered(*paths: str) -> Callable[[Any], Any]:
    """Sort by the fields in turn; `-name` is descending. Missing values go last."""

    def apply(items: Any) -> Any:
        if isinstance(items, QuerySet):
            return items.order_by(
                *(
                    F(p[1:]).desc(nulls_last=True) if p.startswith("-") else F(p).asc(nulls_last=True)
                    for p in paths
                )
            )
        rows = list(items)
        for path in reversed(paths):  # stable sorts, the last key first
            name, descending = path.lstrip("-"), path.startswith("-")
            keyed = [(_resolve(r, name), r) for r in rows]
            present = [(value, r) for value, r in keyed if value is not None]
            present.sort(key=lambda pair: _sort_key(pair[0]), reverse=descending)
            rows = [r for _, r in present] + [r for value, r in keyed if value is None]
        return rows

    return apply


@dataclass(frozen=True, slots=True)
class Filter:
    """One select of the controls: the URL parameter, its label, its choices (value, shown text)."""

    param: str
    label: str
    choices: Sequence[tuple[str, str]]
    apply: Apply


@dataclass(frozen=True, slots=True)
class Sort:
    key: str  # its value in the URL
    label: str
    apply: Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class ListSpec:
    """How one list is searched, filtered, sorted and paged. The first sort is the default."""

    noun: str  # what the rows are, plural: "queries", "runs"; also names the controls' landmarks
    sorts: Sequence[Sort]
    search: Apply | None = None
    search_hint: str = ""  # the search box's placeholder: what it looks in
    filters: Sequence[Filter] = ()
    per_page: int | None = None  # None: PER_PAGE
    prefix: str = ""  # for a page with several lists
    anchor: str = ""  # the id of the list's section, so its links come back to it
    one: str = ""  # the noun for one row, when dropping the plural's "s" does not give it


@dataclass(frozen=True, slots=True)
class ShownFilter:
    param: str
    label: str
    choices: Sequence[tuple[str, str]]
    value: str


@dataclass
class ListPage:
    """One page of a list and everything its controls and links need."""

    spec: ListSpec
    page: Page  # Django's: object_list, number, paginator.count, has_next, ...
    q: str
    sort: str
    filters: list[ShownFilter]
    params: dict[str, str]  # every GET parameter of the request, this list's as read
    unfiltered: Any  # the rows before search and filters (counted only when a search or filter narrows)
    items: list[Any] = field(default_factory=list)
    _total: int | None = None

    @property
    def total(self) -> int:
        """Rows before search and filters."""
        if self._total is None:
            self._total = _count(self.unfiltered) if self.active else self.page.paginator.count
        return self._total

    # -- parameter names (prefixed) --
    @property
    def q_param(self) -> str:
        return f"{self.spec.prefix}q"

    @property
    def sort_param(self) -> str:
        return f"{self.spec.prefix}sort"

    @property
    def page_param(self) -> str:
        return f"{self.spec.prefix}page"

    def _own(self) -> set[str]:
        return {self.q_param, self.sort_param, self.page_param, *(f.param for f in self.filters)}

    @property
    def hidden(self) -> list[tuple[str, str]]:
        """The request's other parameters (other lists', the page's own), kept by this list's form."""
        own = self._own()
        return [(k, v) for k, v in self.params.items() if k not in own and v != ""]

    @property
    def ids(self) -> str:
        """The prefix of its controls' element ids, unique on the page."""
        return f"list-{self.spec.anchor or 'main'}-{self.spec.prefix}"

    @property
    def searchable(self) -> bool:
        """(Templates call what is callable: they read this, never `spec.search`.)"""
        return self.spec.search is not None

    @property
    def sorts(self) -> list[tuple[str, str]]:
        return [(s.key, s.label) for s in self.spec.sorts]

    @property
    def active(self) -> bool:
        """A search or filter narrows the list (the controls offer to clear them)."""
        return bool(self.q) or any(f.value for f in self.filters)

    def url(self, **changes: str | int | None) -> str:
        """`?...` for this list with some of its parameters changed (None or "" drops one); the other
        parameters are kept. Keys are unprefixed names: q, sort, page, or a filter's parameter."""
        params = {k: v for k, v in self.params.items() if v != ""}  # an empty field of a form says nothing
        for key, value in changes.items():
            name = key if key in {f.param for f in self.filters} else f"{self.spec.prefix}{key}"
            if value in (None, ""):
                params.pop(name, None)
            else:
                params[name] = str(value)
        query = urlencode(params)
        anchor = f"#{self.spec.anchor}" if self.spec.anchor else ""
        return f"?{query}{anchor}" if query else f"?{anchor}" if anchor else "?"

    @property
    def clear_url(self) -> str:
        return self.url(q=None, page=None, **dict.fromkeys((f.param for f in self.filters), None))

    def page_url(self, number: int) -> str:
        return self.url(page=None if number == 1 else number)

    @property
    def previous_url(self) -> str:
        return self.page_url(self.page.previous_page_number()) if self.page.has_previous() else ""

    @property
    def next_url(self) -> str:
        return self.page_url(self.page.next_page_number()) if self.page.has_next() else ""

    @property
    def pages(self) -> list[tuple[int | None, str]]:
        """Page links around the current page: (number, url); (None, "") is a gap ("…")."""
        current, last = self.page.number, self.page.paginator.num_pages
        wanted = sorted({1, last, *range(max(1, current - 2), min(last, current + 2) + 1)})
        out: list[tuple[int | None, str]] = []
        for i, number in enumerate(wanted):
            if i and number - wanted[i - 1] > 1:
                out.append((None, ""))
            out.append((number, self.page_url(number)))
        return out

    @property
    def summary(self) -> str:
        """ "21–40 of 2,000 queries", "no queries", with "(of 2,086)" when a search or filter narrows."""
        count = self.page.paginator.count
        narrowed = f" (of {self.total:,})" if self.active and self.total != count else ""
        if not count:
            return f"no {self.spec.noun}{narrowed}"
        first, last = self.page.start_index(), self.page.end_index()
        if (first, last) != (1, count):
            return f"{first:,}–{last:,} of {count:,} {self.spec.noun}{narrowed}"
        noun = self.spec.noun if count != 1 else self.spec.one or _singular(self.spec.noun)
        return f"{count:,} {noun}{narrowed}"


def _singular(noun: str) -> str:
    """ "queries" -> "query", "runs" -> "run" (the nouns the lists use)."""
    return noun[:-3] + "y" if noun.endswith("ies") else noun.removesuffix("s")


def _count(items: Any) -> int:
    return items.count() if isinstance(items, QuerySet) else len(items)


def list_page(request: HttpRequest, items: QuerySet[Any] | Iterable[Any], spec: ListSpec) -> ListPage:
    """The page of `items` the request's parameters ask for: searched, filtered, sorted, paged. A value
    that is not among a filter's choices or the sorts is ignored (the default applies), never an error."""
    params = {k: request.GET.get(k, "") for k in request.GET}
    rows: Any = items if isinstance(items, QuerySet) else list(items)
    unfiltered = rows
    q = params.get(f"{spec.prefix}q", "").strip()[:MAX_SEARCH]
    if q and spec.search is not None:
        rows = spec.search(rows, q)
    shown = []
    for f in spec.filters:
        value = params.get(f.param, "")
        if value and value not in {v for v, _ in f.choices}:
            value = ""
        if value:
            rows = f.apply(rows, value)
        shown.append(ShownFilter(f.param, f.label, f.choices, value))
    sorts = {s.key: s for s in spec.sorts}
    sort = params.get(f"{spec.prefix}sort", "")
    if sort not in sorts:
        sort = spec.sorts[0].key
    rows = sorts[sort].apply(rows)
    page = Paginator(rows, spec.per_page or PER_PAGE).get_page(params.get(f"{spec.prefix}page"))
    result = ListPage(
        spec=spec, page=page, q=q, sort=sort, filters=shown, params=params, unfiltered=unfiltered
    )
    result.items = list(page.object_list)
    return result


def choices_of(values: Iterable[Any], blank: str = "") -> list[tuple[str, str]]:
    """Distinct values as a filter's choices, sorted; an empty value is the choice `NONE` shown as
    `blank` (left out when `blank` is empty)."""
    out = sorted({str(v) for v in values if v is not None}, key=str.casefold)
    return [(v or NONE, v or blank) for v in out if v or blank]
