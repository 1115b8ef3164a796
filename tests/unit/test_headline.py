"""A diagnosis whose cause no specific catalog entry names says, in its title, what the failing line said: the
exception of a Python traceback (traceback.format_exception_only prints `module.Type: value`, or the bare type when
the value is empty), or the first line that is not a traceback's header or frame."""

from __future__ import annotations

import pytest

from correlator.diagnose import diagnose
from correlator.headline import UNRECOGNISED, headline, message, own_words
from scan.engine import default_matcher, scan_source
from schemas.diagnosis import Evidence
from store.queries import kind_title


def _ev(*texts: str) -> list[Evidence]:
    return [Evidence(source="r.log", line=i + 1, text=t) for i, t in enumerate(texts)]


@pytest.mark.parametrize(("line", "words"), [
    ("[rank3]: RuntimeError: Invalid mt19937 state", "RuntimeError: Invalid mt19937 state"),
    ("[default0]:[rank8]: ValueError: bad", "ValueError: bad"),
    ("[1,3]<stderr>:OSError: [Errno 5] Input/output error", "OSError: [Errno 5] Input/output error"),
    ("12: zipfile.BadZipFile: File is not a zip file", "zipfile.BadZipFile: File is not a zip file"),
    ("node1:2301:2350 [3] NCCL WARN Some new message", "NCCL WARN Some new message"),
    ("E1130 10:11:12.123456 4242 worker.cc:88] Check failed: x", "Check failed: x"),
    ("2026-11-30T10:11:12.5Z KeyError: 'image'", "KeyError: 'image'"),
])
def test_the_launchers_and_loggers_prefixes_are_not_the_message(line: str, words: str) -> None:
    assert own_words(line) == words


def test_a_tracebacks_exception_line_is_the_message_not_its_header_or_frames() -> None:
    said = message(_ev("[rank1]: Traceback (most recent call last):",
                       '[rank1]:   File "train.py", line 3, in <module>',
                       "[rank1]: torch.distributed.DistBackendError: NCCL error in: init.cpp:1, unhandled"))
    assert said == "torch.distributed.DistBackendError: NCCL error in: init.cpp:1, unhandled"


def test_a_bare_exception_type_is_kept_only_when_no_exception_says_more() -> None:
    assert message(_ev("Exception:", "-- Process 3 terminated with the following error:")) == "Exception"
    assert message(_ev("Exception:", "ValueError: shard 7 is truncated")) == "ValueError: shard 7 is truncated"


def test_without_an_exception_the_first_line_of_its_own_speaks_and_long_lines_are_cut() -> None:
    assert message(_ev("Traceback (most recent call last):", "CUDA error: an unknown thing")) == \
        "CUDA error: an unknown thing"
    long = message(_ev("X" * 500))
    assert long is not None and len(long) == 100 and long.endswith("…")
    assert message(_ev("Traceback (most recent call last):")) is None


def test_the_title_leads_with_the_message_then_the_kind() -> None:
    title = "Python exception raised (fallback for tracebacks without a more specific entry)"
    assert headline(title, "KeyError: 'x'") == f"KeyError: 'x' — {title}"
    assert headline(title, None) == title
    assert headline(UNRECOGNISED, "Boom happened") == "Boom happened — Unrecognised failure"


def test_a_diagnosis_under_the_python_fallback_says_what_the_rank_raised() -> None:
    log = ("[rank1]: Traceback (most recent call last):\n"
           '[rank1]:   File "/opt/train.py", line 88, in <module>\n'
           "[rank1]:     torch.set_rng_state(state)\n"
           "[rank1]: RuntimeError: Invalid mt19937 state\n")
    m = default_matcher()
    d = diagnose([scan_source(m, "job.log", [log.encode()], 2026, 0)], m.catalog)
    rc = d.root_cause
    assert rc is not None and rc.signature == "python.exception" and rc.rank == 1
    assert rc.title.startswith("RuntimeError: Invalid mt19937 state — Python exception raised")
    assert rc.message == "RuntimeError: Invalid mt19937 state"


def test_a_specific_entry_keeps_its_own_title() -> None:
    log = "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    m = default_matcher()
    d = diagnose([scan_source(m, "job.log", [log.encode()], 2026, 0)], m.catalog)
    rc = d.root_cause
    assert rc is not None and rc.signature is not None and rc.message is None
    sig = m.catalog.get(rc.signature)
    assert sig is not None and not sig.generic and rc.title == sig.title


def test_the_history_groups_a_fallback_under_its_kind_not_one_incidents_words() -> None:
    root = {"title": "KeyError: 'x' — Python exception raised", "message": "KeyError: 'x'"}
    assert kind_title(root) == "Python exception raised"
    assert kind_title({"title": "Xid 79: GPU fell off the bus"}) == "Xid 79: GPU fell off the bus"


def test_a_secret_in_the_message_never_reaches_the_title() -> None:
    log = ("[rank0]: Traceback (most recent call last):\n"
           "[rank0]: ConnectionError: login failed for user=svc password=hunter2hunter2 at db:5432\n")
    m = default_matcher()
    d = diagnose([scan_source(m, "job.log", [log.encode()], 2026, 0)], m.catalog)
    rc = d.root_cause
    assert rc is not None and rc.message is not None and "password=" in rc.title and rc.message in rc.title
    assert "hunter2" not in rc.title and "hunter2" not in rc.message
