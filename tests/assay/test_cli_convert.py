"""`assay convert` end to end: the files it writes, its exit codes, and its one-line (or listed) errors
with nothing written. As a real process once (no traceback), in-process through `assay.cli.main` else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.cli import main
from assay.golden.format import load
from tests.assay.test_cli import assay, no_traceback

HOW = "(--scale MIN..MAX or --map FROM=TO says how to read it)"


def test_quepid_csv_becomes_a_golden_file_as_a_real_process(tmp_path: Path) -> None:
    source = tmp_path / "quepid.csv"
    source.write_text("query,docid,rating\nreset password,d1,3\nreset password,d2,0\nrefund,d3,2\n")
    out = tmp_path / "golden.json"
    proc = assay("convert", "--from", "quepid-csv", "--to", "golden", str(source), str(out))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{source} (quepid-csv) -> {out} (golden): 2 queries, 3 judgments\n"
    golden = load(out)
    assert [(q.id, q.text, q.grades) for q in golden.queries] == [
        ("q-0001", "reset password", {"d1": 3, "d2": 0}),
        ("q-0002", "refund", {"d3": 2}),
    ]


def test_a_malformed_input_exits_2_lists_every_problem_and_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "srw.csv"
    source.write_text("query,docid,rating\nx,d1,0.5\nx,d2,7\n")
    out = tmp_path / "golden.json"
    out.write_text("earlier content")
    proc = assay("convert", "--from", "srw-csv", "--to", "golden", str(source), str(out))
    no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"assay convert: error: {source}: 2 problems, nothing written:\n"
        f'  {source}: line 2: rating "0.5" is not an integer {HOW}\n'
        f'  {source}: line 3: rating "7" is outside the golden scale 0..3 {HOW}\n'
    )
    assert out.read_text() == "earlier content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.json", "srw.csv"]


def test_one_problem_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "j.json"
    source.write_text('{"judgmentRatings": [{"query": "a", "ratings": [{"docId": "1", "rating": 0.7}]}]}')
    assert (
        main(["convert", "--from", "srw-json", "--to", "golden", str(source), str(tmp_path / "g.json")]) == 2
    )
    assert capsys.readouterr().err == (
        f"assay convert: error: {source}: judgmentRatings[0].ratings[0].rating: rating 0.7 is not an integer "
        f"{HOW} (nothing written)\n"
    )
    assert not (tmp_path / "g.json").exists()
    # SRW's 0-1 scores read with --scale:
    assert (
        main(
            [
                "convert",
                "--from",
                "srw-json",
                "--to",
                "golden",
                "--scale",
                "0..1",
                str(source),
                str(tmp_path / "g.json"),
            ]
        )
        == 0
    )
    assert load(tmp_path / "g.json").queries[0].grades == {"1": 2}


def test_qrels_with_topics_and_map_of_negative_grades(tmp_path: Path) -> None:
    qrels, topics, out = tmp_path / "qrels.txt", tmp_path / "topics.tsv", tmp_path / "g.jsonl"
    qrels.write_text("7 0 d1 1\n7 0 d2 -1\n")
    topics.write_text("7\tcheap flights\n8\tno judgments yet\n")
    argv = [
        "convert",
        "--from",
        "trec-qrels",
        "--to",
        "golden-jsonl",
        "--topics",
        str(topics),
        "--map=-1=0",
    ]
    assert main([*argv, str(qrels), str(out)]) == 0
    golden = load(out)
    assert [(q.id, q.text, q.grades) for q in golden.queries] == [
        ("7", "cheap flights", {"d1": 1, "d2": 0}),
        ("8", "no judgments yet", {}),
    ]


def test_beir_folder_with_corpus_writes_the_golden_file_and_the_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "nfcorpus"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text('{"_id": "PLAIN-1", "text": "diet"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nPLAIN-1\tMED-1\t2\n")
    (folder / "corpus.jsonl").write_text('{"_id": "MED-1", "title": "Diet", "text": "about diet"}\n')
    out = tmp_path / "golden.json"
    assert main(["convert", "--from", "beir", "--to", "golden", str(folder), str(out)]) == 0
    documents = tmp_path / "golden.documents.jsonl"
    assert capsys.readouterr().out.endswith(f"also wrote {documents}\n")
    assert [json.loads(line) for line in documents.read_text().splitlines()] == [
        {"id": "MED-1", "title": "Diet", "body": "about diet"}
    ]
    assert load(out).queries[0].grades == {"MED-1": 2}
    # And back out as a BEIR folder, another split:
    assert (
        main(["convert", "--from", "golden", "--to", "beir", "--split", "dev", str(out), str(tmp_path / "b")])
        == 0
    )
    assert (
        tmp_path / "b" / "qrels" / "dev.tsv"
    ).read_text() == "query-id\tcorpus-id\tscore\nPLAIN-1\tMED-1\t2\n"


def test_beir_round_trip_with_its_corpus_through_a_golden_file_and_a_documents_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """beir -> golden + documents file -> beir (`--documents`) gives the folder's bytes back, the corpus
    included; beir -> beir takes the corpus along."""
    folder = tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True)
    files = {
        "queries.jsonl": '{"_id": "1", "text": "first question"}\n{"_id": "3", "text": "thïrd"}\n',
        "qrels/test.tsv": "query-id\tcorpus-id\tscore\n1\tdoc-a\t2\n3\tdoc-b\t1\n3\tdoc-c\t0\n",
        "corpus.jsonl": '{"_id": "doc-a", "title": "A title", "text": "body a"}\n'
        '{"_id": "doc-b", "title": "B", "text": "body b, ünïcode"}\n'
        '{"_id": "doc-z", "title": "Unjudged", "text": "in the corpus all the same"}\n',
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    golden, documents = tmp_path / "g.json", tmp_path / "docs.jsonl"
    argv = ["convert", "--from", "beir", "--to", "golden", "--documents", str(documents)]
    assert main([*argv, str(folder), str(golden)]) == 0
    back = tmp_path / "back"
    argv = ["convert", "--from", "golden", "--to", "beir", "--documents", str(documents)]
    assert main([*argv, str(golden), str(back)]) == 0
    assert {p.relative_to(back).as_posix(): p.read_text() for p in back.rglob("*") if p.is_file()} == files
    assert main(["convert", "--from", "beir", "--to", "beir", str(folder), str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "corpus.jsonl").read_text() == files["corpus.jsonl"]
    assert not list(tmp_path.glob("*.documents.jsonl"))  # from beir to beir, no documents file
    capsys.readouterr()


def test_beir_export_takes_the_documents_import_format_and_refuses_a_bad_documents_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = tmp_path / "g.json"
    golden.write_text(
        json.dumps(
            {
                "version": "v",
                "queries": [{"id": "q1", "text": "t", "judgments": [{"doc_id": "7", "grade": 1}]}],
            }
        )
    )
    documents = tmp_path / "docs.jsonl"
    # An integer id, a snippet standing in for a missing body, fields the corpus does not carry.
    documents.write_text(
        '{"id": 7, "title": " Seven ", "snippet": "short", "url": "https://x/7", "fields": {"a": 1}}\n'
        '{"id": "8", "title": "Eight", "body": "long", "snippet": "short"}\n'
    )
    argv = ["convert", "--from", "golden", "--to", "beir", "--documents", str(documents), str(golden)]
    assert main([*argv, str(tmp_path / "out")]) == 0
    assert [json.loads(line) for line in (tmp_path / "out" / "corpus.jsonl").read_text().splitlines()] == [
        {"_id": "7", "title": "Seven", "text": "short"},
        {"_id": "8", "title": "Eight", "text": "long"},
    ]
    capsys.readouterr()
    documents.write_text('{"id": "1", "title": "One"}\n{"id": "1", "title": "Again"}\n{"title": "no id"}\n')
    assert main([*argv, str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err == (
        f"assay convert: error: {golden}: 2 problems, nothing written:\n"
        f"  {documents}: line 2: id: duplicate id '1' (first on line 1)\n"
        f"  {documents}: line 3: id: missing or empty id (found None)\n"
    )
    assert not (tmp_path / "bad").exists()
    assert main([*argv[:-2], str(tmp_path / "missing.jsonl"), str(golden), str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err == (
        f"assay convert: error: {tmp_path / 'missing.jsonl'}: no such file (nothing written)\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--from", "golden", "--to", "srw-json", "--scale", "0..1"],
            "--scale and --map read a foreign format's ratings: a golden file's grades are already grades",
        ),
        (
            ["--from", "quepid-csv", "--to", "golden", "--scale", "1..0"],
            "--scale '1..0': MIN must be below MAX",
        ),
        (
            ["--from", "quepid-csv", "--to", "golden", "--map", "1=9"],
            "--map '1=9': 9 is not a grade on the golden scale 0..3",
        ),
        (
            ["--from", "quepid-csv", "--to", "golden", "--topics", "t.tsv"],
            "--topics applies to trec-qrels only",
        ),
        (
            ["--from", "quepid-csv", "--to", "beir", "--split", "../x"],
            "--split '../x': a split name is letters, digits, - and _",
        ),
        (
            ["--from", "golden", "--to", "rre", "--documents", "d.jsonl"],
            "--documents applies to beir only",
        ),
        (
            ["--from", "beir", "--to", "beir", "--documents", "d.jsonl"],
            "--documents: from beir to beir, the corpus goes along as it is",
        ),
    ],
)
def test_unusable_options_exit_2_in_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in"
    source.write_text("query,docid,rating\nx,d1,1\n")
    assert main(["convert", *argv, str(source), str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"assay convert: error: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_an_unknown_format_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["convert", "--from", "excel", "--to", "golden", "a", "b"])
    assert exited.value.code == 2
    assert "argument --from: invalid choice: 'excel'" in capsys.readouterr().err


def test_an_export_only_format_is_refused_under_from_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["convert", "--from", "ltr", "--to", "golden", "a", "b"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "assay convert: error: argument --from: ltr is export only (it has no query texts to read) "
        "(see assay convert --help)\n"
    )


def test_help_lists_under_from_only_the_formats_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line an option
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    read = "golden, golden-jsonl, quepid-csv, srw-csv, srw-json, rre, trec-qrels, beir"
    assert " ".join(next(line for line in lines if line[:1] == ["--from"])) == f"--from FORMAT one of {read}"
    assert " ".join(next(line for line in lines if line[:1] == ["--to"])) == f"--to FORMAT one of {read}, ltr"


@pytest.mark.parametrize(("option", "value"), [("--map", "-1=0"), ("--scale", "-1..1")])
def test_a_value_starting_with_a_dash_after_its_option_answers_with_the_equals_form(
    option: str, value: str, tmp_path: Path
) -> None:
    """argparse reads `--map -1=0` as two options; the error says to write `--map=-1=0`, which works
    (trec_eval's -1, "judged, not relevant", read as 0 either way; 1 is 3 on -1..1, and mapped to 3)."""
    source = tmp_path / "qrels.txt"
    source.write_text("1 0 d1 -1\n1 0 d2 1\n")
    out = tmp_path / "golden.json"
    head = ("convert", "--from", "trec-qrels", "--to", "golden", "--map", "1=3")
    proc = assay(*head, option, value, str(source), str(out))
    no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"assay convert: error: argument {option}: expected one argument: {value!r} starts with '-' and "
        f"reads as an option; write {option}={value} (see assay convert --help)\n"
    )
    assert not out.exists()
    fixed = assay(*head, f"{option}={value}", str(source), str(out))
    assert fixed.returncode == 0, fixed.stderr
    assert load(out).queries[0].grades == {"d1": 0, "d2": 3}


def test_an_option_missing_its_value_at_the_end_gets_no_equals_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["convert", "--from", "srw-csv", "--to", "golden", "a", "b", "--map"])
    assert capsys.readouterr().err == (
        "assay convert: error: argument --map: expected one argument (see assay convert --help)\n"
    )


def test_when_one_of_several_files_cannot_be_written_none_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """qrels and topics, the topics under a path whose "folder" is a file: the qrels (staged first) does
    not appear either, and no temporary file is left."""
    golden = tmp_path / "g.json"
    golden.write_text(json.dumps({"version": "v", "queries": [{"id": "1", "text": "t", "judgments": []}]}))
    (tmp_path / "plain-file").write_text("")
    argv = [
        "convert",
        "--from",
        "golden",
        "--to",
        "trec-qrels",
        "--topics",
        str(tmp_path / "plain-file" / "t.tsv"),
    ]
    assert main([*argv, str(golden), str(tmp_path / "qrels.txt")]) == 2
    assert capsys.readouterr().err.startswith("assay convert: error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "plain-file"]
