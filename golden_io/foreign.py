"""Judgments in another tool's format imported into a golden set (the import page's golden form, docs/cli.md
"`assay convert`"): converted by assay.convert onto the set's rubric scale and queries, then imported as a
golden file is (`golden_io.services.golden_import`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from django.conf import settings

from assay.golden.format import GoldenFormatError, dump_json
from assay.golden.model import GoldenFile, Scale
from assay.problems import ImportReport
from labeling.models import GoldenSet


@dataclass(frozen=True, slots=True)
class JudgmentsFormat:
    """A file in another tool's format (assay.convert's table) and how to read its ratings: `scale` the
    ratings' range read onto the rubric's scale, `mapping` rating -> grade (docs/cli.md, `assay convert`)."""

    name: str = "golden"
    scale: tuple[float, float] | None = None
    mapping: Mapping[float, int] = field(default_factory=dict)
    # trec-qrels: the topics file (`qid<TAB>text`), as its name and its bytes.
    topics: tuple[str, bytes] | None = None
    # What the scale and the map are called where they were given (the page's fields; the command's
    # options), for the problems' words.
    names: tuple[str, str] = ("Scale", "Map")


GOLDEN = JudgmentsFormat()


def golden_from_format(
    *, golden_set: GoldenSet, data: bytes, source: str, fmt: JudgmentsFormat, report: ImportReport
) -> bytes | None:
    """Judgments in another format as a golden file for this set (None, and the problems in `report`,
    when they cannot be read): grades read onto the rubric's scale, the set's k and cutoff kept (the file
    names neither). A format that names queries by their text alone (Quepid, SRW, RRE) gets the id of the
    set's query of that text, else a new id, so that it never rewrites another query of the set."""
    from assay.convert.core import ConvertError, GradeReading
    from assay.convert.formats import FORMATS
    from assay.convert.options import Options

    rubric = golden_set.rubric
    scale = Scale(rubric.scale_min, rubric.scale_max)
    for raw, grade in fmt.mapping.items():
        if grade not in scale:
            report.add("Map", f"{raw:g}={grade}: {grade} is not a grade on the rubric's scale {scale}", "map")
    if not report.ok:
        return None
    read = FORMATS[fmt.name].read
    assert read is not None
    options = Options(
        grades=GradeReading(target=scale, source=fmt.scale, mapping=fmt.mapping, names=fmt.names),
        data=data,
        topics=Path(PurePath(fmt.topics[0]).name or "topics") if fmt.topics else None,
        topics_data=fmt.topics[1] if fmt.topics else None,
        # A zipped BEIR folder unpacks to no more than one upload may be.
        unzip_limit=settings.ASSAY_MAX_UPLOAD_BYTES,
    )
    try:
        golden = read(Path(PurePath(source).name or "upload"), options).golden
    except ConvertError as exc:
        # Where each problem is (the file and its line or JSON path), when the reader said it apart.
        for file, where, message in exc.places or [("", "", said) for said in exc.problems]:
            report.add(f"{file}: {where}" if where else file, message, "format")
        return None
    if FORMATS[fmt.name].by_text:
        golden = _ids_by_text(golden_set, golden)
    golden = replace(
        golden,
        k=golden_set.k,
        relevant_min_grade=golden_set.relevant_min_grade,
        scale=scale,
        rubric=str(rubric),
    )
    try:
        return dump_json(golden)
    except GoldenFormatError as exc:  # the set's own k or cutoff refused with this scale
        for problem in exc.problems:
            report.add(problem.where, problem.message, problem.code, problem.query_id)
        return None


def _ids_by_text(golden_set: GoldenSet, golden: GoldenFile) -> GoldenFile:
    known: dict[str, str] = {}
    for external_id, text in golden_set.queries.order_by("pk").values_list("external_id", "text"):
        known.setdefault(text, external_id)
    taken = set(golden_set.queries.values_list("external_id", flat=True))
    number = 0
    queries = []
    for query in golden.queries:
        if query.text in known:
            queries.append(replace(query, id=known[query.text]))
            continue
        number += 1
        while f"q-{number:04d}" in taken:
            number += 1
        taken.add(f"q-{number:04d}")
        queries.append(replace(query, id=f"q-{number:04d}"))
    return replace(golden, queries=tuple(queries))
