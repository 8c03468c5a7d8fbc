"""The table of formats is the one fact: docs/cli.md shows it as `formats_table()` renders it, and the
command's choices are its names."""

from __future__ import annotations

from assay.cli import build_parser
from assay.convert.formats import FORMATS, formats_table
from assay.paths import BASE_DIR


def test_the_docs_table_is_the_registry() -> None:
    docs = (BASE_DIR / "docs" / "cli.md").read_text()
    assert formats_table() in docs
    for name in FORMATS:
        assert f"| `{name}` |" in formats_table()


def test_the_command_offers_exactly_the_registry_formats_reading_only_those_read() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    convert = commands.choices["convert"]  # type: ignore[index]
    options = {a.dest: a.choices for a in convert._actions if a.dest in ("source", "target")}
    read = [name for name, f in FORMATS.items() if f.reader is not None]
    assert options == {"source": read, "target": list(FORMATS)}
    assert "ltr" in FORMATS and "ltr" not in read


def test_reading_the_table_loads_no_format_module() -> None:
    """Building the command line (every `assay` start) reads the table without the golden parser."""
    import subprocess
    import sys

    code = (
        "import sys, assay.cli; assay.cli.build_parser(); "
        "print(sorted(m for m in sys.modules if m.startswith('assay.convert.') or m in ('numpy', 'msgspec')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['assay.convert.formats']"


def test_a_conversion_loads_no_django_sklearn_or_pyarrow(tmp_path: object) -> None:
    """`assay convert` must work in the core install: every format read and written, and still none of
    the server's or the optional speed-ups' packages imported."""
    import subprocess
    import sys

    code = """
import sys, pathlib, tempfile
from assay.cli import main
d = pathlib.Path(tempfile.mkdtemp())
(d / "q.csv").write_text("query,docid,rating\\nx,d1,1\\n")
assert main(["convert", "--from", "quepid-csv", "--to", "golden", str(d / "q.csv"), str(d / "g.json")]) == 0
for fmt in ("golden-jsonl", "srw-json", "srw-csv", "rre", "trec-qrels", "beir", "ltr"):
    assert main(["convert", "--from", "golden", "--to", fmt, str(d / "g.json"), str(d / fmt)]) == 0
    if fmt != "ltr":
        assert main(["convert", "--from", fmt, "--to", "golden", str(d / fmt), str(d / (fmt + ".json"))]) == 0
heavy = ("django", "celery", "rest_framework", "sklearn", "pyarrow", "psycopg")
print(sorted(m for m in heavy if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
