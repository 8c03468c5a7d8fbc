"""A dataset folder given as a zip of it (a BEIR folder uploaded on the import page, or `assay convert
--from beir dataset.zip`): the members wanted read into memory, never extracted, so no member's name can
write anywhere; and bounded, so a small upload cannot unpack to gigabytes (a zip bomb).

A zip is refused whole, in words, when it is not a zip, when a member's name leads outside the folder
(an absolute path, a drive, `..`), when a wanted member is encrypted, damaged or in a compression Python
cannot read, or when the wanted members unpack to more than the limit: counted from their headers first,
then while reading, since a header can lie.

`zip_folder` writes the other way: a writer's files as a zip of one folder (the version page's
downloads of a format that writes several files), which `zip_members` reads back as that folder.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from assay.convert.core import ConvertError
from assay.problems import size_text

# More members than any dataset folder holds: the central directory of a zip is read whole, and a zip of
# a million empty members is small.
MAX_MEMBERS = 10_000
# Folders that zip tools add beside the content (macOS' resource forks): not part of the dataset.
_NOISE = ("__MACOSX",)


def _relative(name: str) -> PurePosixPath | None:
    """The member's path inside the folder, or None when it leads outside it."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        return None
    return path


def zip_members(
    path: Path, data: bytes | None, wanted: Callable[[str], bool], *, limit: int | None
) -> dict[str, bytes]:
    """The bytes of the members `wanted` (given each member's path inside the folder, `/`-separated) of
    the zip at `path` (or of `data`, which `path` only names). A zip of the folder itself is read as the
    folder: when every member lies under one top folder (but `qrels/`, a dataset's own), that folder is
    the dataset. ConvertError."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data) if data is not None else path)
    except FileNotFoundError:
        raise ConvertError([f"{path}: no such file"]) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise ConvertError(
            [f"{path}: not a zip file (a dataset comes as its folder, or a zip of it)"]
        ) from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ConvertError([f"{path}: {len(infos):,} members; a dataset zip may hold {MAX_MEMBERS:,}"])
        members: dict[str, zipfile.ZipInfo] = {}
        outside = []
        for info in infos:
            relative = _relative(info.filename)
            if relative is None:
                outside.append(f"{path}: member {info.filename!r} leads outside the folder: nothing is read")
            elif not info.is_dir() and relative.parts and relative.parts[0] not in _NOISE:
                members[relative.as_posix()] = info
        if outside:
            raise ConvertError(outside)
        tops = {name.split("/", 1)[0] for name in members}
        if len(tops) == 1 and all("/" in name for name in members) and tops != {"qrels"}:
            prefix = f"{tops.pop()}/"
            members = {name.removeprefix(prefix): info for name, info in members.items()}
        chosen = {name: info for name, info in members.items() if wanted(name)}
        declared = sum(info.file_size for info in chosen.values())
        if limit is not None and declared > limit:
            raise ConvertError([_too_large(path, f"{declared:,} bytes", limit)])
        found: dict[str, bytes] = {}
        left = limit
        for name, info in chosen.items():
            if info.flag_bits & 0x1:
                raise ConvertError([f"{path}: {name}: is encrypted; a dataset zip cannot be"])
            try:
                with archive.open(info) as member:
                    body = member.read() if left is None else member.read(left + 1)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
                raise ConvertError([f"{path}: {name}: cannot be unpacked ({exc})"]) from None
            if left is not None:
                if len(body) > left:
                    raise ConvertError([_too_large(path, "more than its headers say", limit)])
                left -= len(body)
            found[name] = body
        return found


def _too_large(path: Path, size: str, limit: int | None) -> str:
    most = size_text(limit or 0)
    return f"{path}: its dataset files unpack to {size}; a zip here may unpack to at most {most}"


# Every member dated the same (the zip format's earliest date), so the same files give the same bytes.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def zip_folder(files: dict[Path, bytes], folder: str) -> bytes:
    """`files` (paths relative to a folder, as a writer gives them for an output inside it) as a zip of
    the folder named `folder`, deflated, in the writer's order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(f"{folder}/{path.as_posix()}", date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()
