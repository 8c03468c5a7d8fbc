"""`assay.convert.sizes.measure`: the queries and judgments of a file in every format the import page
reads, counted without converting it (what lets the page refuse a file too large for a web request at
once), and the count stopping once past a limit."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from assay.convert.formats import FORMATS, upload_formats
from assay.convert.options import Options
from assay.convert.sizes import Size, measure
from assay.golden.model import GoldenFile, GoldenQuery, Judgment

READ = [f.name for f in upload_formats()]
BIG = 10**9


def golden(queries: int, judgments: int) -> GoldenFile:
    return GoldenFile(
        version="v1",
        queries=tuple(
            GoldenQuery(
                id=f"q-{i:04d}",
                text=f"query {i}",
                judgments=tuple(Judgment(f"d{j}", j % 4) for j in range(judgments)),
            )
            for i in range(queries)
        ),
    )


def written(golden: GoldenFile, name: str, tmp_path: Path) -> tuple[bytes, bytes | None]:
    """The file in format `name` as its writer gives it (BEIR zipped), and a TREC qrels file's topics."""
    out = tmp_path / name
    topics = tmp_path / "topics.tsv" if name == "trec-qrels" else None
    files = FORMATS[name].write(golden, out / "data" if FORMATS[name].folder else out, Options(topics=topics))
    if not FORMATS[name].folder:
        return files[out], files[topics] if topics else None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, body in files.items():
            archive.writestr(str(path.relative_to(out)), body)
    return buffer.getvalue(), None


@pytest.mark.parametrize("name", READ)
def test_every_format_is_counted_as_its_reader_reads_it(name: str, tmp_path: Path) -> None:
    data, topics = written(golden(7, 3), name, tmp_path)
    size = measure(name, data, max_queries=BIG, max_judgments=BIG, topics_data=topics)
    assert size == Size(queries=7, judgments=21, over=False)
    read = FORMATS[name].read
    assert read is not None
    converted = read(tmp_path / "in", Options(data=data, topics=tmp_path / "t", topics_data=topics))
    assert (len(converted.golden.queries), sum(len(q.judgments) for q in converted.golden.queries)) == (7, 21)


@pytest.mark.parametrize("name", READ)
def test_the_count_stops_past_either_limit(name: str, tmp_path: Path) -> None:
    data, topics = written(golden(7, 3), name, tmp_path)
    assert measure(name, data, max_queries=7, max_judgments=21, topics_data=topics).over is False
    assert measure(name, data, max_queries=6, max_judgments=BIG, topics_data=topics).over is True
    assert measure(name, data, max_queries=BIG, max_judgments=20, topics_data=topics).over is True
    stopped = measure(name, data, max_queries=2, max_judgments=BIG, topics_data=topics)
    assert stopped.over and stopped.judgments < 21  # it stopped reading at the third query


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("golden", b'{"queries": [{"x": ' + b"[" * 100_000 + b"}]}"),  # too deep to skip
        ("golden", b""),
        ("srw-json", b"[" * 100_000),
        ("rre", b'{"topics": 5}'),
        ("quepid-csv", b"\xff\xfe not UTF-8"),
        ("srw-csv", b"q,d,r\nrefund,d1,3\n"),  # not its header
        ("trec-qrels", b"\xff 0 d1 1\n"),
        ("beir", b"not a zip"),
    ],
)
def test_what_it_cannot_count_is_left_to_the_reader_to_refuse(name: str, data: bytes) -> None:
    assert measure(name, data, max_queries=1, max_judgments=1) == Size(0, 0, over=False)


def test_it_counts_without_checking() -> None:
    data = json.dumps({"version": "v1", "queries": [{"id": 5}, {"judgments": "none"}, {"judgments": [1]}]})
    assert measure("golden", data.encode(), max_queries=BIG, max_judgments=BIG) == Size(3, 1)
