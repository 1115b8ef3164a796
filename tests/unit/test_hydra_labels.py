"""MPICH Hydra's `mpiexec -l` label "[R] " names the rank that printed a line, in a file labelled throughout.

Source: pmodels/mpich src/pm/hydra, ui/mpich/utils.c, prepend_rank_fn (`-l` / `-prepend-rank`):
HYDU_set_str(arg, &HYD_ui_info.prepend_pattern, "[%r] "), %r the process's MPI_COMM_WORLD rank.
"""

from __future__ import annotations

from correlator.diagnose import diagnose
from correlator.hydra_labels import hydra_labelled
from scan.engine import default_matcher, scan_source
from schemas.diagnosis import Diagnosis

_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of "
        "79.10 GiB of which 1.06 GiB is free. Process 4242 has 78.03 GiB memory in use.")


def _diagnose(files: dict[str, str]) -> Diagnosis:
    m = default_matcher()
    results = [scan_source(m, name, [text.encode()], 2026, i << 32) for i, (name, text) in enumerate(files.items())]
    return diagnose(results, m.catalog)


def _hydra_output(world: int, failing: int) -> str:
    lines = [f"[{r}] [local_rank {r % 4}] world_size={world} device=cuda:{r % 4}" for r in range(world)]
    lines += [f"[{r}] step 10 loss 2.31" for r in range(world)]
    lines += [f"[{failing}] Traceback (most recent call last):",
              f'[{failing}]   File "/opt/train.py", line 88, in <module>',
              f"[{failing}] {_OOM}"]
    return "\n".join(lines) + "\n"


def test_a_hydra_labelled_file_names_the_rank_that_ran_out_of_memory() -> None:
    d = _diagnose({"sft.o6725635": _hydra_output(8, 6)})
    assert d.root_cause is not None and d.root_cause.rank == 6


def test_a_bracketed_number_in_an_unlabelled_file_is_not_a_rank() -> None:
    text = "starting job\nloading data\nepoch 1\n[1] " + _OOM + "\nshutting down\nbye\n"
    d = _diagnose({"train.log": text})
    assert d.root_cause is not None and d.root_cause.rank != 1


def test_a_file_labelled_with_one_number_alone_is_not_hydras() -> None:
    # a list printed with its index, not a launcher's rank column
    assert not hydra_labelled((("[1] " + _OOM + "\n") * 3).encode())
    assert hydra_labelled(_hydra_output(4, 2).encode())


def test_labels_are_read_as_a_line_start_reading_reads_them() -> None:
    # hydra_labelled finds labels by "\n[" (fast) where "^" under re.M was tried at every byte: the same heads pass
    import random
    import re

    line_start = re.compile(rb"^\[(\d{1,5})\] ", re.M)

    def reference(head: bytes) -> bool:
        lines = head.count(b"\n") or 1
        labels = line_start.findall(head)
        return len(labels) >= 0.75 * lines and len(set(labels)) >= 2

    rng = random.Random(7)
    parts = [b"\n", b"[", b"]", b" ", b"1", b"23", b"456789", b"a", b"[1] ", b"[2] ", b"\n[3] x"]
    for _ in range(20000):
        head = b"".join(rng.choice(parts) for _ in range(rng.randint(0, 24)))
        assert hydra_labelled(head) == reference(head), head
