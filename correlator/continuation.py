"""Whether two matched lines of one speaker are one event (a traceback, a multi-line message). Pure."""

from __future__ import annotations

import re

from correlator.speakers import Who, read_prefixes

MAX_EVENT_GAP = 40  # lines between two matches of one traceback or multi-line message
_TRACEBACKISH = re.compile(
    r"^(?:\s|$|Traceback|File \"|During handling|The above exception|Last error|Exception raised from|"
    r"frame #|[\w.]+(?:Error|Exception)\b|\w+: |[-=*─│╭╰|]{2,}|\[\d+\]:|ERROR|\^)"
)
_HEADER = re.compile(r"^\s*(?:Traceback|During handling|The above exception)")
# pytest's failure report prints the exception under its source line with its fail marker on every line: "E" and
# then the indentation less one (_pytest/_code/code.py, FormattedExcinfo.get_exconly(markall=True): failindent =
# fail_marker + indentstr[1:], at least 4 wide; a blank line of the message is "E" and spaces, or "E" alone once
# stripped). The marker read as one more space, the message reads as it would bare: a spawned worker's traceback
# inside ProcessRaisedException stays one event with its "-- Process N terminated" head.
_PYTEST_FAIL_MARKER = re.compile(r"^E(?= {3}|[ \t]*$)")


def lines_between_continue(buffer: bytes, start: int, gap: int) -> bool:
    """Whether the ``gap - 1`` lines before the line at ``start`` all read as part of a traceback or a multi-line
    message, so that the match ``gap`` lines up and the one at ``start`` are one event."""
    pos = start
    python_frame = False  # a `File "...", line N` line in between, with no traceback header
    for _ in range(gap - 1):
        prev = buffer.rfind(b"\n", 0, pos - 1) + 1 if pos > 0 else 0
        if prev >= pos:
            return False  # the gap crosses a chunk boundary: do not guess
        between = buffer[prev : pos - 1].decode("utf-8", errors="replace")
        _, rest = read_prefixes(between, Who())
        rest = _PYTEST_FAIL_MARKER.sub(" ", rest, count=1)
        if not _TRACEBACKISH.match(rest):
            return False
        if _HEADER.match(rest):
            python_frame = False
        elif not python_frame:
            python_frame = rest.lstrip().startswith('File "')
        pos = prev
    return not (python_frame and _after_cpp_frame(buffer, pos))


def _after_cpp_frame(buffer: bytes, pos: int) -> bool:
    """Whether the line ending just before ``pos`` is a C++ stack frame (`frame #3: ...`). c10 prints those inside
    an exception's message, which Python prints after the traceback's `File` lines: a `File` line after them, with
    no `Traceback` or chained-exception header, is another traceback (another process's, or one the excerpt cut),
    not this message."""
    prev = buffer.rfind(b"\n", 0, pos - 1) + 1 if pos > 0 else 0
    _, rest = read_prefixes(buffer[prev : pos - 1].decode("utf-8", errors="replace"), Who())
    return _PYTEST_FAIL_MARKER.sub(" ", rest, count=1).lstrip().startswith("frame #")
