"""Error templates and their gravity, as the scanner and the differential view use them."""

from __future__ import annotations

from pathlib import Path

import pytest

from correlator.templates import _GRAVE, _MILD, gravity, template

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus" / "real"


def _lines() -> list[str]:
    roots = [ROOT / "examples", *([CORPUS] if CORPUS.is_dir() else [])]
    found = [line for root in roots for p in sorted(root.rglob("*.log"))
             for line in p.read_text(errors="replace").splitlines()]
    found += ["FATAL: Aborting", "Segmentation fault (core dumped)", "W1129 10:00:00.1 12 x.cc:3] retrying",
              "[W1129 step] skipped", "will retry", "ignored", "ſegmentation fault", "KILLED by signal 9",
              "Traceback (most recent call last):", "error: WARNING, Warn, warned", "abortive", "preabort"]
    return found


def test_gravity_reads_every_line_as_its_caseless_patterns_do() -> None:
    """gravity looks for the words in the case-folded line first; it must never miss what the patterns find."""
    lines = _lines()
    assert len(lines) > 1000
    for line in lines:
        for variant in (line, line.upper(), line.swapcase()):
            expected = 2 + (2 if _GRAVE.search(variant) else 0) - (1 if _MILD.search(variant) else 0)
            assert gravity(variant) == expected, variant


def test_gravity_orders_the_end_of_a_process_over_a_skipped_sample() -> None:
    assert gravity("fatal: aborting") > gravity("error reading sample 12, skipped") > 0


def test_a_template_masks_numbers_addresses_and_paths() -> None:
    a = template("[rank3]: RuntimeError: failed at 0x7f3a2c00 reading /data/shard-0001.bin after 12 tries")
    b = template("[rank7]: RuntimeError: failed at 0x1122ff00 reading /data/shard-0917.bin after 3 tries")
    assert a == b and "<hex>" in a and "<path>" in a and "<n>" in a


@pytest.mark.parametrize("seed", range(6))
def test_shape_is_template_and_gravity_whatever_texts_came_before(seed: int) -> None:
    """shape() remembers a text's digit layout: texts that differ only in their digits must share it rightly,
    `0x` (a digit that hex masking reads by value) included."""
    import random

    from correlator import templates

    rng = random.Random(seed)
    stems = ["[rank{a}]:[E{b} 10:0{a}:03.{b} PG.cpp:{a}] [Rank {a}] Watchdog caught a timeout, aborting",
             "worker {a} failed: {b}x{a}f at 10.{a}.0.{b}:29500 /dev/shm/{a} ignored",
             "frame #{a}: c10::Error + 0x{b} ({a}x7f{b} in /usr/lib/libc10.so) fatal",
             "W{b} 12:00:00.{a} warning: retry {a} of {b}", "{a}{b}: error {a}.{b}.{a}.{b}<{a}>"]
    templates._shapes.clear()
    texts: set[str] = set()
    for _ in range(400):
        digits = [str(rng.choice([0, 1, 7, 10, 100, 1000, 4095, 65535])) for _ in range(2)]
        text = rng.choice(stems).format(a=digits[0], b=digits[1])
        assert templates.shape(text) == (templates.template(text), templates.gravity(text)), text
        texts.add(text)
    assert len(templates._shapes) < len(texts)  # the point of it: texts that differ only in digits share one


@pytest.mark.parametrize("seed", range(6))
def test_shape_shares_texts_that_differ_in_hex_digits_and_reads_each_rightly(seed: int) -> None:
    """Hex runs are remembered by their length alone: letters or digits, upper or lower case, at the start of a
    text, inside a bracketed prefix near its 80-character limit, next to the words gravity looks for."""
    import random

    from correlator import templates

    rng = random.Random(100 + seed)

    def run() -> str:
        return "0x" + "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(rng.choice((1, 4, 12))))

    stems = ["[rank{a}]:frame #{a}: c10::Error + {h} ({h} in /usr/lib/libc10.so)",
             "{h} fatal error at {h}",
             "[" + "x" * 70 + " {h}]: {h} aborted",
             "[{h}]: E{a} 10:00:00.1 12 {h}] killed",
             "node{a}:{a}:{a} [{a}] {h}:{a}:{a} [{a}] {h}fatal {h}abort exception{h} W{a} retry{h}",
             "W1129 {h} warning 10{h} ignored"]
    templates._shapes.clear()
    texts: set[str] = set()
    for _ in range(400):
        text = rng.choice(stems).replace("{a}", str(rng.choice((0, 7, 1030)))).replace("{h}", "{}")
        text = text.format(*(run() for _ in range(text.count("{}"))))
        assert templates.shape(text) == (templates.template(text), templates.gravity(text)), text
        texts.add(text)
    assert len(templates._shapes) * 2 < len(texts)  # runs of three lengths: layouts repeat
    own = "0x1 frame \0 0x2"  # a NUL of the text's own is not taken for a masked run
    assert templates.shape(own) == (templates.template(own), templates.gravity(own))
    assert templates.shape("0x1 frame \0\0\0 x") == (templates.template("0x1 frame \0\0\0 x"),
                                                    templates.gravity("0x1 frame \0\0\0 x"))


def test_shape_reads_texts_that_are_not_ascii_as_template_and_gravity_do() -> None:
    """The layout is taken from the text's UTF-8 bytes: other scripts' digits (which `\\d` reads), replacement
    characters and lone surrogates must still give each text its own template."""
    from correlator import templates

    templates._shapes.clear()
    texts = ["rank ٣ failed at 0x1f ✗", "rank ٤ failed at 0x2e ✗", "rank 3 failed at 0x3d ✗", "ошибка 12 fatal",
             "ошибка 97 fatal", "bad \ufffd\ufffd 0x12 error", "lone \ud800 surrogate 5 error", "Ⅻ 12 aborted"]
    for text in texts * 2:
        assert templates.shape(text) == (templates.template(text), templates.gravity(text)), text
