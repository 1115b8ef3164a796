"""`firstfault incidents …` on the seeded history, as a user types it."""

from __future__ import annotations

import json

import pytest

from firstfault.cli import main
from schemas.incident import Incident


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["incidents", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_as_json_with_filters(capsys: pytest.CaptureFixture[str], engine_url: str,
                                   history: dict[str, Incident]) -> None:
    code, out, _ = _run(capsys, "list", "--db", engine_url, "--signature", "xid.*", "--cluster", "c1",
                        "--format", "json")
    assert code == 0
    page = json.loads(out)
    assert [i["job_id"] for i in page["items"]] == ["train-xid-2", "train-xid-1"]
    assert page["items"][0]["title"].startswith("Xid 79")


def test_list_pages_with_the_cursor_it_prints(capsys: pytest.CaptureFixture[str], engine_url: str,
                                              history: dict[str, Incident]) -> None:
    _, out, _ = _run(capsys, "list", "--db", engine_url, "--limit", "5", "--format", "json")
    first = json.loads(out)
    _, out, _ = _run(capsys, "list", "--db", engine_url, "--limit", "5", "--cursor", first["next_cursor"],
                     "--format", "json")
    assert [i["job_id"] for i in json.loads(out)["items"]] == ["train-oom-1"]


def test_the_table_reads_from_the_environment(capsys: pytest.CaptureFixture[str], engine_url: str,
                                              history: dict[str, Incident], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRSTFAULT_DATABASE_URL", engine_url)
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = _run(capsys, "list", "--host", "node004")
    assert code == 0
    assert history["train-oom-1"].id in out and "rank 37 node004" in out and "1 of 1 incident" in out


def test_show_prints_the_full_report_timeline_and_revisions(capsys: pytest.CaptureFixture[str], engine_url: str,
                                                             history: dict[str, Incident]) -> None:
    code, out, _ = _run(capsys, "show", history["train-xid-1"].id, "--db", engine_url, "--format", "markdown")
    assert code == 0
    for part in ("## Xid 79", "### Evidence", "NVRM: Xid (PCI:0000:3b:00): 79", "### Fix", "### Verify",
                 "### Timeline (clock-skew corrected)", "| initiating |", "### Revisions", "first diagnosis",
                 "→ xid.79 (rank 9 on node001)"):
        assert part in out, part
    code, out, _ = _run(capsys, "show", history["train-oom-1"].id, "--db", engine_url)
    assert "rank 37 on node004" in out and "Timeline" in out and "Revisions" in out
    code, out, _ = _run(capsys, "show", history["train-oom-1"].id, "--db", engine_url, "--format", "json")
    assert json.loads(out)["incident"]["diagnosis"]["root_cause"]["rank"] == 37


def test_stats_and_offenders(capsys: pytest.CaptureFixture[str], engine_url: str,
                             history: dict[str, Incident]) -> None:
    _, out, _ = _run(capsys, "stats", "--db", engine_url, "--format", "json")
    assert json.loads(out)["top_signatures"][0] == {"signature": "xid.79", "title": history["train-xid-2"]
                                                    .diagnosis.root_cause.title, "count": 3}  # type: ignore[union-attr]
    _, out, _ = _run(capsys, "offenders", "--db", engine_url)
    assert 'scontrol update nodename=node001 state=drain reason="firstfault: xid.79 in 2 jobs"' in out
    assert "kubectl cordon node003" in out and "GPU 0000:86:00" in out


@pytest.mark.parametrize("args", [["list", "--since", "last week"], ["show", "inc-nope"]])
def test_mistakes_get_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], engine_url: str,
                                          history: dict[str, Incident], args: list[str]) -> None:
    code, out, err = _run(capsys, *args, "--db", engine_url)
    assert code == 2 and out == "" and err.startswith("firstfault: error:") and err.count("\n") == 1


def test_an_unreachable_database_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "list", "--db", "postgresql://nobody@127.0.0.1:1/none")
    assert code == 2 and "database" in err
