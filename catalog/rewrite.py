"""How the catalog's regexes are rewritten for the scanning engines: confined to one line, in the forms
Hyperscan takes (no named groups, nothing that only lengthens a match at its end), and compiled for `re`'s
byte scans. Pure functions of the pattern text."""

from __future__ import annotations

import re

_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def single_line(pattern: str) -> str:
    """Rewrite ``pattern`` so that it can never match across a newline, without changing what it matches
    inside one line: ``\\s`` becomes horizontal space, negated classes and ``\\D``/``\\W`` exclude ``\\n``."""
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            esc = pattern[i : i + 2]
            if esc == "\\s":
                out.append(" \\t\\r\\f\\x0b" if in_class else "[ \\t\\r\\f\\x0b]")
            elif esc in ("\\D", "\\W") and not in_class:
                out.append(f"[^\\n\\{esc[1].lower()}]")
            else:
                out.append(esc)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^\\n")
                i += 2
            else:
                out.append("[")
                i += 1
            if i < len(pattern) and pattern[i] == "]":  # a literal ] first in a class
                out.append("\\]")
                i += 1
            continue
        if ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def line_regex(pattern: str) -> re.Pattern[bytes]:
    """``pattern`` as `re` scans a byte buffer for it: one line at a time, ASCII semantics like Hyperscan's."""
    return re.compile(single_line(pattern).encode(), re.ASCII | re.MULTILINE)


# An atom a trailing `*`, `?` or `{0,n}` may drop: a class, a \d-like escape, or '.' (not a literal character:
# telling `a` from the `1` of `\x41` would need a full parse).
_SIMPLE_ATOM = re.compile(r"(?:\[(?:\\.|[^\]\\])*\]|\\[dDsSwW]|\.)\Z")
_COUNTED = re.compile(r"\{(\d+),\d*\}\Z")


def _escaped(text: str, index: int) -> bool:
    """Whether text[index] is escaped: an odd run of backslashes before it."""
    run = 0
    while index - run - 1 >= 0 and text[index - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def existence_form(pattern: str) -> str:
    """``pattern`` without what only lengthens a match at its very end: a line holds a match of one exactly when
    it holds a match of the other. Hyperscan reports every end offset of every match, so `detail: [^\n]+` cost
    one Python callback per character of the detail (200 for one watchdog line); `re` still takes the captures
    from the whole pattern. A trailing ``X+`` becomes ``X`` and ``X{n,m}`` ``X{n}``; a trailing ``X*``, ``X?``
    or ``X{0,m}`` of a simple X goes; also inside the groups that close the pattern (being its tail, their last
    alternative's tail is too). Never down to a pattern that matches the empty string."""
    out = pattern
    while True:
        end = len(out)
        while end > 0 and out[end - 1] == ")" and not _escaped(out, end - 1):
            end -= 1
        trimmed = _trim_tail(out[:end]) + out[end:]
        if trimmed == out or _matches_empty(trimmed):
            return out
        out = trimmed


def _matches_empty(pattern: str) -> bool:
    try:
        return re.search(pattern, "") is not None
    except re.error:
        return True  # not a pattern `re` reads: keep the previous form


def _trim_tail(head: str) -> str:
    lazy = len(head) > 1 and head.endswith("?") and head[-2] in "+*}?" and not _escaped(head, len(head) - 2)
    body = head[:-1] if lazy else head  # a lazy quantifier ends where its greedy form does
    if not body or _escaped(body, len(body) - 1):
        return head
    if body.endswith("+"):
        return body[:-1]
    if (m := _COUNTED.search(body)) and not _escaped(body, m.start()):
        if m.group(1) != "0":
            return body[: m.start()] + "{" + m.group(1) + "}"
        return _drop_atom(body[: m.start()], head)
    if body.endswith(("*", "?")):
        return _drop_atom(body[:-1], head)
    return head


def _drop_atom(before: str, unchanged: str) -> str:
    m = _SIMPLE_ATOM.search(before)
    return before[: m.start()] if m and not _escaped(before, m.start()) else unchanged


def hyperscan_expression(pattern: str) -> bytes:
    # Hyperscan has no named groups; captures are taken later by `re` on the matched line.
    return existence_form(_NAMED_GROUP.sub("(?:", single_line(pattern))).encode()


# What a line-confined pattern may hold after a backslash: these classes and assertions, or an escaped punctuation
# character; not a letter or digit with another meaning (\n, \x0a, \1, \Z, \v: PCRE's \v is vertical space, \n
# included, Python's is \x0b alone).
_CONFINED_ESCAPES = frozenset("bBdDwWsS")
_CONFINED_GROUP = re.compile(r"\(\?(?::|P<\w+>|i\)|i:)")


def line_confined(pattern: str) -> bool:
    """Whether Hyperscan's match of ``pattern`` (as hyperscan_expression writes it, in multiline mode) and
    Python's ``re`` search of it (compiled with re.ASCII) on one line's text agree, for an ASCII line without a
    carriage return: an ASCII pattern built of classes, literals, groups and quantifiers only. single_line keeps
    `\\s`, negated classes and `\\D`/`\\W` off the newline, and `.` never takes it in either engine, so no match
    leaves the line; `^` and `$` hold at the line's ends in both; `\\b` and `\\w` read ASCII in both. Left out:
    lookarounds (one would read the newline beside the line), backreferences, escapes of control characters
    (`\\n` would match the newline in Hyperscan alone), `\\D` and `\\W` inside a class (single_line rewrites
    them outside classes only), characters other than printable ASCII and tab, and inline flags other than (?i)."""
    if not all(" " <= ch <= "~" or ch == "\t" for ch in pattern):
        return False
    i, opened = 0, -1  # where the class the scan is in opened its items (after [ or [^), else -1
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            if not nxt or (nxt.isalnum() and nxt not in _CONFINED_ESCAPES) or (opened >= 0 and nxt in "DW"):
                return False
            i += 2
            continue
        if opened >= 0:
            opened = -1 if ch == "]" and i > opened else opened  # a ] first in a class is one of its items
        elif ch == "[":
            opened = i + 2 if pattern.startswith("[^", i) else i + 1
        elif ch == "(" and pattern.startswith("(?", i) and not _CONFINED_GROUP.match(pattern, i):
            return False
        i += 1
    return True


def confirm_regex(pattern: str) -> re.Pattern[str]:
    """``pattern`` as `re` confirms it on one decoded line: ASCII classes, as Hyperscan reads bytes, and its
    optional groups as choices (branch_optionals)."""
    return re.compile(branch_optionals(pattern), re.ASCII)


def branch_optionals(pattern: str) -> str:
    """``pattern`` with each optional group, ``(...)?``, written as a choice with an empty second branch,
    ``(?:(...)|)`` (``(?:...)?`` as ``(?:...|)``; a lazy ``??`` with the empty branch first). The two match the same
    text with the same groups: `re` tries a greedy optional's body first, then nothing, as it tries a choice's
    branches in order. For `re` the choice is the cheaper: an optional group is a general repeat, set up at every
    position a search tries (a line's ProcessGroupNCCL status, which opens with one, took 13.7 us a search; the
    choice half that). Only for confirming a line with `re`: Hyperscan takes the pattern as written."""
    out: list[str] = []
    opened: list[int] = []  # where each open group starts in out
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern.startswith("[^]", i) or pattern.startswith("[]", i):  # a literal ] first in the class
                out.append(pattern[i : i + (3 if pattern[i + 1] == "^" else 2)])
                i += 3 if pattern[i + 1] == "^" else 2
                continue
        elif ch == "(":
            opened.append(len(out))
        elif ch == ")" and opened:
            start = opened.pop()
            quantifier = _optional(pattern, i + 1)
            if quantifier:
                group = "".join(out[start:]) + ")"
                del out[start:]
                body = group[3:-1] if group.startswith("(?:") else group
                out.append(f"(?:|{body})" if quantifier == "??" else f"(?:{body}|)")
                i += 1 + len(quantifier)
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _optional(pattern: str, at: int) -> str:
    """The quantifier at ``at`` if it makes what precedes it optional: "?" (greedy) or "??" (lazy); else "" (none,
    another, or the possessive "?+", which never gives back what it took)."""
    if pattern.startswith("??", at):
        return "??"
    return "?" if pattern.startswith("?", at) and not pattern.startswith("?+", at) else ""
