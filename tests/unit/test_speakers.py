"""Who said a line: launcher prefixes, NCCL headers, c10d's [Rank N], file names."""

from __future__ import annotations

import random
import re

import pytest

from correlator.speakers import Who, read_prefixes, read_speaker, speaker_and_body, who_from_path


@pytest.mark.parametrize(
    ("line", "rank", "host"),
    [
        ("[rank3]:[E1129 10:02:03.123456789 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught", 3, None),
        ("3: RuntimeError: CUDA error: an illegal memory access was encountered", 3, None),
        ("[12]: torch.OutOfMemoryError: CUDA out of memory.", 12, None),
        ("worker-7: [rank9]: RuntimeError: boom", 9, "worker-7"),
        ("(BaseWorkerMixin pid=5137, ip=10.42.154.180) loss: 1.87", None, "10.42.154.180"),
        ("(VllmWorker rank=2 pid=812) ERROR 04-15 00:31:11 worker_base.py:574] boom", 2, None),
        ("[E1129 10:00:00.1 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0(default_pg) Rank 6] failure", 6, None),
        ("Nov 29 10:02:03 node017 kernel: NVRM: Xid (PCI:0000:3b:00): 79", None, "node017"),
        ("[1,3]<stderr>:RuntimeError: boom", 3, None),  # mpirun --tag-output: [jobid,MCW_rank]<stdxxx>:
        ("[11192,12]<stdout>:node05:44741:44741 [0] NCCL INFO Launch mode Parallel", 12, "node05"),
        ("Fri Aug 11 12:31:45 2023[1,3]<stdout>:tomte401:1850304:1881110 [3] transport.cc:154 NCCL WARN Cuda "
         "failure 'invalid argument'", 3, "tomte401"),  # mpirun --timestamp-output --tag-output
        # a collector's stamp first: kubectl logs --timestamps / docker logs -t (RFC 3339, nanoseconds, a space),
        # the kubelet's CRI log file (time, stream, P|F: kubernetes pkg/kubelet/kuberuntime/logs/logs.go), CRI-O's
        # +00:00 offset, and a collector that ends it with ": "
        ("2024-01-02T03:04:05.123456789Z [rank3]:RuntimeError: boom", 3, None),
        ("2016-10-06T00:17:09.669794202Z stderr F [default0]:[rank9]:RuntimeError: boom", 9, None),
        ("2016-10-06T00:17:09.669794202+00:00 stdout P 5: boom", 5, None),
        ("2019-06-02T16:13:44.884Z: [1,12]<stdout>:node57:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : "
         "Got async event : local catastrophic error", 12, "node57"),
        ("2024-01-02T03:04:05Z node3:11:12 [1] NCCL INFO x", None, "node3"),
        ("2024-01-02 03:04:05,123 [rank3] not a prefix here", None, None),  # no prefix after the stamp
        # RFC 3339 section 5.6 lets a space stand for the "T", as Python's asctime and most log viewers print it
        ("2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory.", 3, None),
        ("2024-11-20 14:37:16.524 12: RuntimeError: boom", 12, None),
    ],
)
def test_prefixes_name_the_rank_and_host(line: str, rank: int | None, host: str | None) -> None:
    who = read_speaker(line, Who())
    assert (who.rank, who.host) == (rank, host)


@pytest.mark.parametrize(
    ("line", "rank", "local", "host"),
    [
        ("[default5]:Traceback (most recent call last):", None, 5, None),  # tail_log.py: [{role}{local_rank}]:
        ("[trainer2]: boom", None, 2, None),
        ("[default2]:[rank10]:[E1129 10:02:03.1 ProcessGroupNCCL.cpp:632] [Rank 10] Watchdog", 10, 2, None),
        ("[default2]:node1:4242:4300 [2] NCCL INFO comm 0x5 rank 10 nranks 16", None, 2, "node1"),
        ("1: [default3]: RuntimeError: boom", None, 3, None),  # srun -l's task 1 is a node's torchrun
        ("192.168.109.24: ncclInternalError: Internal check failed.", None, None, "192.168.109.24"),  # pdsh
        ("(pid=5137, ip=10.42.154.180) boom", None, None, "10.42.154.180"),  # ray: no task name
        ("(raylet, ip=10.42.154.181) boom", None, None, "10.42.154.181"),
    ],
)
def test_local_ranks_are_read_apart_from_global_ones(line: str, rank: int | None, local: int | None,
                                                      host: str | None) -> None:
    who = read_speaker(line, Who())
    assert (who.rank, who.local_rank, who.host) == (rank, local, host)


def test_kubectl_prefix_names_the_pod_as_the_host() -> None:
    """kubernetes/kubectl pkg/cmd/logs/logs.go addPrefixIfNeeded: fmt.Sprintf("[pod/%s/%s] ", ref.Name,
    containerName), then --timestamps' RFC 3339 stamp, then torchrun's local-rank tee prefix."""
    line = ("[pod/gemma-dpo-zj8x-worker-2/trainer] 2026-12-12T16:25:34.092730856Z [default0]:ERROR: Unexpected bus "
            "error encountered in worker.")
    who = read_speaker(line, Who())
    assert (who.host, who.local_rank, who.rank) == ("gemma-dpo-zj8x-worker-2", 0, None)
    assert read_speaker("[node/gke-a3u-gpu-pool-7a0a41a7-irhy] kernel: x", Who()).host == \
        "gke-a3u-gpu-pool-7a0a41a7-irhy"


def test_skypilot_node_prefix_names_the_node_address_but_no_rank() -> None:
    """skypilot-org/skypilot sky/skylet/executor/slurm.py builds "(head, rank={rank}, pid={pid}) " and "(worker1,
    rank={rank}, pid={pid}, ip=1.2.3.4) " in colorama's cyan, rank being SLURM_PROCID of one task a node (exported
    as SKYPILOT_NODE_RANK): a node's number, not a worker's. What follows it (torchrun's "[rankN]:") is still read."""
    who, rest = speaker_and_body("(head, rank=0, pid=4840)   rank      : 2 (local_rank: 2)", Who())
    assert (who.rank, who.host, who.pid, rest) == (None, None, None, "  rank      : 2 (local_rank: 2)")
    line = "\x1b[36m(worker2, rank=2, pid=4296, ip=172.0.211.97)\x1b[0m [rank21]:[E1209 06:05:00.3 x.cpp:1] boom"
    who, rest = speaker_and_body(line, Who())
    assert (who.rank, who.host, who.pid, rest) == (21, "172.0.211.97", None, "[E1209 06:05:00.3 x.cpp:1] boom")
    assert read_speaker("(worker1, rank=1, pid=7, ip=10.0.0.2) hello", Who()).rank is None


def test_nccl_header_gives_host_pid_and_device_but_not_rank() -> None:
    who = read_speaker("gpu12:889:912 [5] misc/socket.cc:538 NCCL WARN socketProgressOpt: x", Who())
    assert (who.host, who.pid, who.device, who.rank) == ("gpu12", 889, 5, None)


def test_an_nccl_header_whose_host_a_paste_elided_still_names_that_host() -> None:
    """NCCL's header is "%s:%d:%d [%d] " (NVIDIA/nccl src/debug.cc: host name, pid, tid, cudaDev); a paste that cuts
    the head of the host's name ("...-48") names each host by what is left, consistently: one host, not none.
    Dots alone name nothing."""
    who = read_speaker("...-48:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port "
                       "error", Who())
    assert (who.host, who.pid, who.device) == ("...-48", 34050, 0)
    assert read_speaker("...:34050:34121 [0] NCCL WARN x", Who()).host is None


def test_two_elided_hosts_are_two_hosts() -> None:
    from correlator.hostnames import aliases

    names = aliases(["...-48", "...-51", "node48"], [], [], [], [], [])
    assert len({names["...-48"], names["...-51"]}) == 2


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
        ("logs/a100-56.log", None, "a100-56"),  # a node named after its GPU model, one log per host
        ("h100-133.log", None, "h100-133"),
        ("slurm-123456.out", None, None),
        ("trainjob-worker-6/dmesg.log", None, "trainjob-worker-6"),  # Kubeflow {job}-{replica type}-{index}
        ("myjob-workers-0-3/console.log", None, "myjob-workers-0-3"),  # a JobSet pod
        ("train_logs/out.log", None, None),
        ("dmesg/10.113.175.164.log", None, "10.113.175.164"),  # a node's kernel log named by its address
        ("syslog/10.0.0.1", None, "10.0.0.1"),
        ("logs/10.1.2.3.log", None, None),  # not a system log: an address alone says no more than a number
        # a number running on into letters is a generated suffix, not an index: a node pool's hex hash (GKE's
        # gke-<cluster>-<pool>-<8 hex>-<4>), a ReplicaSet pod's template hash and suffix from Kubernetes'
        # alphabet "bcdfghjklmnpqrstvwxz2456789" (k8s.io/apimachinery pkg/util/rand SafeEncodeString)
        ("health/gpu-0f9b-node1.csv", None, "gpu-0f9b-node1"),
        ("gpu-6c9f7d8b5-x2kq9.log", None, "gpu-6c9f7d8b5-x2kq9"),
        ("gpu3.log", 3, None),
        ("rank_3_of_8.log", 3, None),
    ],
)
def test_file_names_name_rank_and_host(path: str, rank: int | None, host: str | None) -> None:
    who = who_from_path(path)
    assert (who.rank, who.host) == (rank, host)


@pytest.mark.parametrize(
    ("path", "rank", "local", "host"),
    [
        # NVIDIA/NeMo nemo/utils/exp_manager.py: <exp_dir>/<name>/<version>/, every rank's
        # nemo_log_globalrank-{global_rank}_localrank-{local_rank}.txt, global rank zero's nemo_error_log.txt,
        # lightning_logs.txt and cmd-args.log; the name and version folders are no host's
        ("results/nemotron_15b/2026-12-08_16-27-27/nemo_log_globalrank-11_localrank-3.txt", 11, 3, None),
        ("nemo_experiments/gpt3-5b/version_2/nemo_log_globalrank-0_localrank-0.txt", 0, 0, None),
        ("results/nemotron_15b/2026-12-08_16-27-27/lightning_logs.txt", 0, None, None),
        ("results/nemotron_15b/2026-12-08_16-27-27/nemo_error_log.txt", 0, None, None),
        # sbatch --output filename patterns (SchedMD/slurm doc/man/man1/sbatch.1): %x-%j, %A_%a, log-%x_%j
        ("log-nemotron_15b_8714528.out", None, None, None),
        ("logs/llama-70b-3131215.err", None, None, None),
        ("logs/gpt3-175b-5439011_8.out", None, None, None),
        # srun --output=%x-%j-%t.out / %x-%j-%n.out: a task's or a node's index after the job id, no host's name;
        # %x-%j-%N.out: the node's short host name after the job id is the host
        ("logs/moe-8x-6233227-11.out", None, None, None),
        ("logs/gpt-4002729-1.out", None, None, None),
        ("logs/sft-run-3505731-gpu234.out", None, None, "gpu234"),
        # ... however few GPUs its number could count: gpu01 there is node gpu01, not its GPU 1 (a device index
        # names a rank only in a file of its own: gpu3.log)
        ("slurm-123456-gpu01.out", None, None, "gpu01"),
        ("logs/llama-3505731-gpu3.err", None, None, "gpu3"),
        ("logs/rank3-3505731-node01.out", 3, None, None),
        ("dit-xl-7240095-a3-highgpu-389.err", None, None, "a3-highgpu-389"),
        # RFC 1123: a name with an underscore is no host's
        ("megatron_run7/stdout.log", None, None, None),
        ("node-0148/stdout.log", None, None, "node-0148"),  # a host's number is not a job id
    ],
)
def test_run_and_job_file_names_name_no_host(path: str, rank: int | None, local: int | None,
                                             host: str | None) -> None:
    who = who_from_path(path)
    assert (who.rank, who.local_rank, who.host) == (rank, local, host)


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


def _every_prefix_tried(line: str, base: Who) -> tuple[Who, str]:
    """read_prefixes as it was before it chose candidates by the first character: every prefix, in order."""
    from correlator.speakers import _PREFIXES, _looks_like_host, prefix_step

    who, rest = base, line
    for _ in range(4):
        for name, rx in _PREFIXES:
            m = rx.match(rest)
            if not m or (name == "pdsh" and not _looks_like_host(m["host"])):
                continue
            who = prefix_step(who, name, m.groupdict(), base)
            rest = rest[m.end():]
            break
        else:
            break
    return who, rest


def test_prefixes_read_by_first_character_as_when_every_one_was_tried() -> None:
    import random

    rng = random.Random(7)
    parts = ["(RayWorkerWrapper pid=12, ip=10.0.0.2) ", "(head, rank=0, pid=5) ",
             "\x1b[36m(worker1, rank=1, pid=7, ip=10.0.0.2)\x1b[0m ", "(pid=3) ", "(VllmWorker rank=3 pid=9) ",
             "[rank7]: ", "[default3]:", "[12]: ", "12: ", "٣: ", "[٣]: ", "node-3: ", "gpu12.cluster: ", "Error: ",
             "x: ", "[W1129 10:00:00] ", "(", "[", "", " ", "node017:2201:2201 [3] NCCL INFO x", "ERROR 04-15 x"]
    base = Who(None, "fromfile", None, None)
    for _ in range(3000):
        line = "".join(rng.choice(parts) for _ in range(rng.randint(0, 4))) + rng.choice(["", "boom", ": tail"])
        assert read_prefixes(line, base) == _every_prefix_tried(line, base), line


def test_a_line_that_starts_with_an_nccl_header_reads_as_when_its_prefixes_were_tried_first() -> None:
    import random

    from correlator.speakers import _NCCL, _NCCL_HINT, _RANK_IN_TEXT, _SYSLOG_HOST, speaker_and_body

    def reference(line: str, base: Who) -> tuple[Who, str]:
        who, rest = _every_prefix_tried(line, base)
        head = rest[:200]
        if _NCCL_HINT.search(head) and (m := _NCCL.search(head)):
            who = Who(who.rank, m["host"], int(m["pid"]), int(m["dev"]), who.local_rank)
        elif m := _SYSLOG_HOST.match(rest):
            who = Who(who.rank, m["host"], who.pid, who.device, who.local_rank)
        if who.rank is None and (m := _RANK_IN_TEXT.search(rest)):
            who = Who(int(m["rank"]), who.host, who.pid, who.device, who.local_rank)
        return who, rest

    rng = random.Random(11)
    heads = ["node017:2201:2202 [3] ", " node017:1:2 [0] ", "]h:1:2 [0] ", "12:34:56 [7] ", "12: 3:4 [5] ",
             "n" * 190 + ":1:2 [3] ", "[rank4]:node1:5:6 [1] ", "node1: node2:5:6 [1] ", "a:1:2 [x] ", ""]
    tails = ["NCCL INFO comm 0x5 rank 3 nranks 8", "[Rank 9] failed", "NCCL WARN x [PG ID 1 PG GUID 2 Rank 4]",
             "Nov 29 10:02:03 node3 kernel: y", ""]
    for _ in range(3000):
        line = rng.choice(heads) + rng.choice(heads[-3:]) + rng.choice(tails)
        for base in (Who(), Who(5, "fromfile")):
            assert speaker_and_body(line, base) == reference(line, base), line


def _who_from_path_by_pathlib(path: str) -> Who:
    """who_from_path as it was before it remembered folders: every part read by pathlib, for every file."""
    from pathlib import PurePath

    from correlator.speakers import (
        _ATTEMPT,
        _FILE_RANK,
        _HOSTISH,
        _JOB_ID_THEN_HOST,
        _NOT_HOST_DIRS,
        _POD_NAME,
        _SYSTEM_LOG,
        MAX_DEVICES,
        _names_host,
    )

    def rank_of(m: re.Match[str] | None) -> int | None:
        return None if m is None or (m["word"].lower() == "gpu" and int(m["rank"]) >= MAX_DEVICES) else int(m["rank"])

    pure = PurePath(path)
    rank = host = None
    folders = list(reversed(pure.parts[:-1]))
    runs = {i + 1 for i, part in enumerate(folders) if _ATTEMPT.match(part)}  # the folder above attempt_<n>

    def hostish(i: int, part: str) -> bool:
        return (i not in runs and bool(_HOSTISH.match(part)) and rank_of(_FILE_RANK.match(part)) is None
                and (not _NOT_HOST_DIRS.match(part) or bool(_POD_NAME.search(part))) and _names_host(part))

    base = pure.name.split(".")[0]
    if _SYSTEM_LOG.search(path) or _POD_NAME.search(base):
        named = base if _HOSTISH.match(base) and not _NOT_HOST_DIRS.match(base) else None
        leading = [m is not None and m.start() == 0 and rank_of(m) is not None for m in map(_FILE_RANK.search, folders)]
        return Who(host=named or next((p for i, p in enumerate(folders) if hostish(i, p) and not leading[i]), None))
    node_file = _JOB_ID_THEN_HOST.search(base)  # <name>-<job id>-<%N host>: a rank only before the host
    rank = rank_of(_FILE_RANK.search(pure.name if node_file is None else base[:node_file.start("host")]))
    for i, part in enumerate(folders):
        m = _FILE_RANK.search(part)
        if rank is None and m and m.start() == 0 and rank_of(m) is not None:
            rank = rank_of(m)
            continue
        if hostish(i, part):
            host = part
            break
    if host is None and rank is None:
        base = pure.name.split(".")[0]
        if m := re.search(r"[-_]\d{5,}-([A-Za-z][A-Za-z0-9-]*\d)$", base):
            host = m[1]
        elif re.match(r"^[A-Za-z]{2,}[\w-]*\d", base) and not _NOT_HOST_DIRS.match(base) and _names_host(base):
            host = base
    return Who(rank=rank, host=host)


def test_file_names_read_with_remembered_folders_as_pathlib_reads_them() -> None:
    folders = ["", "/", ".", "..", "logs", "node017", "rank3", "worker_2", "job-88", "gpu-a12.cluster.local",
               "slurm-5", "a001", "run_1", "n1", "proc7x", ".hidden", "tmp", "attempt_0", "j7_1234", "syslog",
               "trainjob-worker-3", "gpu288", "gpu7", "k8s"]
    names = ["rank3.log", "dmesg.log", "node017.dmesg", "stdout", "a001.log", "worker-4.out", "gpu12", "", ".", "..",
             "x.log/", "rank1.log/.", "slurm-123.out", "trainer.log", "gpu300.log", "llm-worker-14.log", "kern.log",
             "gpu15.log", "gpu16.log", "moe-8x-6233227-11.out", "sft-3505731-gpu234.out", "dit-7240095-a3-hg-389.out",
             "slurm-123456-gpu01.out"]
    rng = random.Random(7)
    paths = {f"{d}/{n}" if d else n for d in folders for n in names}
    for _ in range(3000):
        depth = rng.randint(0, 4)
        paths.add("/".join([*rng.choices(folders, k=depth), rng.choice(names)]).replace("///", "/"))
    for path in sorted(paths):
        assert who_from_path(path) == _who_from_path_by_pathlib(path), path
