"""A BEIR dataset as a zip of its folder (assay.convert.zipped): read as the folder is, its corpus too
from a file, without it from an upload; and every zip that could write outside the folder or unpack past
the bound refused whole, in words. The zips are made here with zipfile, a few patched byte by byte where
zipfile would not write such a zip (a lying size, an encrypted member)."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest

from assay.convert.core import ConvertError
from assay.convert.formats import FORMATS, convert, upload_formats
from assay.convert.options import Options
from assay.convert.zipped import MAX_MEMBERS

FILES = {
    "queries.jsonl": '{"_id": "1", "text": "first question"}\n{"_id": "3", "text": "third"}\n',
    "qrels/test.tsv": "query-id\tcorpus-id\tscore\n1\tdoc-a\t2\n3\tdoc-b\t1\n",
    "corpus.jsonl": '{"_id": "doc-a", "title": "A", "text": "body a"}\n',
}


def _zip(members: dict[str, str], *, stored: bool = False) -> bytes:
    buffer = io.BytesIO()
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return buffer.getvalue()


def _problems(data: bytes, unzip_limit: int | None = None) -> list[str]:
    with pytest.raises(ConvertError) as caught:
        convert("beir", "golden", Path("ds.zip"), Path("o.json"), Options(data=data, unzip_limit=unzip_limit))
    return caught.value.problems


def test_a_zip_of_the_folder_reads_as_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "scifact"
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    from_folder, _ = convert("beir", "golden", folder, tmp_path / "o.json", Options())
    # Zipped with its top folder, as `zip -r scifact.zip scifact` makes it, with macOS' extra folder.
    zipped = tmp_path / "scifact.zip"
    zipped.write_bytes(
        _zip({f"scifact/{name}": text for name, text in FILES.items()} | {"__MACOSX/scifact/._x": "x"})
    )
    from_zip, _ = convert("beir", "golden", zipped, tmp_path / "o.json", Options())
    assert from_zip == from_folder
    assert from_zip.documents == ({"id": "doc-a", "title": "A", "body": "body a"},)
    # An upload is read without its corpus: the import page imports judgments only.
    uploaded, _ = convert(
        "beir", "golden", Path("scifact.zip"), Path("o.json"), Options(data=_zip(FILES), unzip_limit=10_000)
    )
    assert uploaded.golden == from_folder.golden and uploaded.documents is None
    assert FORMATS["beir"] in upload_formats()


def test_a_dataset_zip_missing_a_file_names_it() -> None:
    assert _problems(_zip({"qrels/test.tsv": FILES["qrels/test.tsv"]})) == [
        "ds.zip/queries.jsonl: no such file in the zip"
    ]
    assert _problems(_zip({"queries.jsonl": FILES["queries.jsonl"]})) == [
        "ds.zip: no qrels/<split>.tsv file: not a BEIR dataset folder"
    ]
    bad = FILES | {"queries.jsonl": "not json\n"}
    assert _problems(_zip(bad)) == [
        "ds.zip/queries.jsonl: line 1: invalid JSON at column 1: Expecting value",
    ]


@pytest.mark.parametrize(
    "name", ["../queries.jsonl", "/etc/queries.jsonl", "C:/x/queries.jsonl", "a/../../b"]
)
def test_a_member_leading_outside_the_folder_refuses_the_whole_zip(name: str) -> None:
    assert _problems(_zip(FILES | {name: "x"})) == [
        f"ds.zip: member {name!r} leads outside the folder: nothing is read"
    ]


def test_what_is_not_a_zip_is_refused_in_words() -> None:
    for data in (b"", b"query-id\tcorpus-id\tscore\n", b"PK\x03\x04broken"):
        assert _problems(data) == ["ds.zip: not a zip file (a dataset comes as its folder, or a zip of it)"]


def test_a_zip_bomb_is_refused_from_its_headers_before_anything_is_unpacked() -> None:
    # 50 MB of zeros deflate to about 50 KB.
    bomb = _zip(FILES | {"qrels/test.tsv": FILES["qrels/test.tsv"] + "\n" * (50 << 20)})
    assert len(bomb) < 100_000
    size = len(FILES["queries.jsonl"]) + len(FILES["qrels/test.tsv"]) + (50 << 20)
    assert _problems(bomb, unzip_limit=1 << 20) == [
        f"ds.zip: its dataset files unpack to {size:,} bytes; a zip here may unpack to at most 1 MB"
    ]
    # Members the dataset does not read count for nothing.
    ignored = _zip(FILES | {"notes/big.txt": "\n" * (50 << 20)})
    uploaded, _ = convert(
        "beir", "golden", Path("ds.zip"), Path("o"), Options(data=ignored, unzip_limit=1 << 20)
    )
    assert len(uploaded.golden.queries) == 2


def _patch_central_directory(
    data: bytes, name: str, *, size: int | None = None, flags: int | None = None
) -> bytes:
    """The zip with the central directory's record of `name` changed: its uncompressed size, its flags
    (zipfile reads both from there)."""
    record = data.find(b"PK\x01\x02")
    while record != -1:
        name_length = struct.unpack_from("<H", data, record + 28)[0]
        if data[record + 46 : record + 46 + name_length].decode() == name:
            break
        record = data.find(b"PK\x01\x02", record + 4)
    assert record != -1
    patched = bytearray(data)
    if size is not None:
        struct.pack_into("<I", patched, record + 24, size)
    if flags is not None:
        struct.pack_into("<H", patched, record + 8, flags)
    return bytes(patched)


def test_a_size_header_that_lies_is_caught_while_reading() -> None:
    big = FILES | {"qrels/test.tsv": FILES["qrels/test.tsv"] + "\n" * (4 << 20)}
    lying = _patch_central_directory(_zip(big), "qrels/test.tsv", size=100)
    problems = _problems(lying, unzip_limit=1 << 20)
    assert len(problems) == 1 and problems[0].startswith("ds.zip: ")
    assert "unpack" in problems[0]  # "more than its headers say", or zipfile's own refusal of the member


def test_an_encrypted_member_is_refused() -> None:
    encrypted = _patch_central_directory(_zip(FILES, stored=True), "queries.jsonl", flags=0x1)
    assert _problems(encrypted) == ["ds.zip: queries.jsonl: is encrypted; a dataset zip cannot be"]


def test_a_zip_of_too_many_members_is_refused() -> None:
    many = _zip({f"x/{n}": "" for n in range(MAX_MEMBERS + 1)} | FILES, stored=True)
    assert _problems(many) == [
        f"ds.zip: {MAX_MEMBERS + 1 + len(FILES):,} members; a dataset zip may hold {MAX_MEMBERS:,}"
    ]
