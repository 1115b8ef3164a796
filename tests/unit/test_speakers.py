"""Who said a line: launcher prefixes, NCCL headers, c10d's [Rank N], file names."""

from __future__ import annotations

import pytest

from correlator.speakers import Who, read_prefixes, read_speaker, who_from_path


@pytest.mark.parametrize(
    ("line", "rank", "host"),
    [
        ("[rank3]:[E1129 10:02:03.123456789 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught", 3, None),
        ("[default5]:Traceback (most recent call last):", 5, None),
        ("3: RuntimeError: CUDA error: an illegal memory access was encountered", 3, None),
        ("[12]: torch.OutOfMemoryError: CUDA out of memory.", 12, None),
        ("worker-7: [rank9]: RuntimeError: boom", 9, "worker-7"),
        ("(BaseWorkerMixin pid=5137, ip=10.42.154.180) loss: 1.87", None, "10.42.154.180"),
        ("(VllmWorker rank=2 pid=812) ERROR 04-15 00:31:11 worker_base.py:574] boom", 2, None),
        ("[E1129 10:00:00.1 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0(default_pg) Rank 6] failure", 6, None),
        ("Nov 29 10:02:03 node017 kernel: NVRM: Xid (PCI:0000:3b:00): 79", None, "node017"),
    ],
)
def test_prefixes_name_the_rank_and_host(line: str, rank: int | None, host: str | None) -> None:
    who = read_speaker(line, Who())
    assert (who.rank, who.host) == (rank, host)


def test_nccl_header_gives_host_pid_and_device_but_not_rank() -> None:
    who = read_speaker("gpu12:889:912 [5] misc/socket.cc:538 NCCL WARN socketProgressOpt: x", Who())
    assert (who.host, who.pid, who.device, who.rank) == ("gpu12", 889, 5, None)


def test_words_before_a_colon_are_not_hosts() -> None:
    assert read_speaker("RuntimeError: NCCL error", Who()).host is None
    assert read_speaker("ERROR: something", Who()).host is None


@pytest.mark.parametrize(
    ("path", "rank", "host"),
    [
        ("rank3.log", 3, None),
        ("node017/rank12.log", 12, "node017"),
        ("logs/node017/dmesg.log", None, "node017"),
        ("node017.dmesg", None, "node017"),
        ("job-88/worker_4.out", 4, None),
        ("a001.log", None, None),
        ("slurm-123456.out", None, None),
    ],
)
def test_file_names_name_rank_and_host(path: str, rank: int | None, host: str | None) -> None:
    who = who_from_path(path)
    assert (who.rank, who.host) == (rank, host)


@pytest.mark.parametrize(
    ("line", "host"),
    [
        ("gpu-a12.cluster.local: [rank3]: step 7", "gpu-a12.cluster.local"),
        ("node017: NCCL INFO ...", "node017"),
        ("trainer.integrity: fatal: aborting at step 4806", None),  # a logger's name, not a pdsh host
        ("torch.distributed.run: WARNING: ...", None),
    ],
)
def test_a_dotted_logger_name_is_not_a_pdsh_host(line: str, host: str | None) -> None:
    who, _ = read_prefixes(line, Who())
    assert who.host == host
