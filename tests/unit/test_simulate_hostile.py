"""The simulator's hostile knobs (issue 22, patterns 1-5) write what the upstream tools print.

Each regex below is transcribed from the format string of the source that prints it (simulate/
sources.py has the table): NVIDIA/nccl v2.21.5-1 src/debug.cc ncclDebugLog (``%s:%d:%d [%d] NCCL INFO``),
src/init.cc (``comm %p rank %d nranks %d cudaDev %d``), src/misc/socket.cc socketProgress, src/transport/
net_ib.cc ncclIbTest; pytorch/pytorch torch/distributed/elastic/multiprocessing/tail_log.py TailLog.start
(``[{name}{local_rank}]:``) and errors/__init__.py _FAILURE_FORMAT_TEMPLATE; SchedMD/slurm src/srun/launch.c
_task_finish and src/common/write_labelled_message.c; torvalds/linux kernel/printk/printk.c print_time.
"""

from __future__ import annotations

import re
from pathlib import Path

from simulate import Knobs, Truth, generate, hostile_lines, lines
from simulate.sources import SOURCES

NCCL_HEAD = re.compile(r"^(?P<host>[^:\s]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ")
NCCL_COMM = re.compile(r"comm 0x[0-9a-f]+ rank (?P<rank>\d+) nranks \d+ cudaDev (?P<dev>\d+)")
TORCHRUN = re.compile(r"^\[(?P<role>[a-z]+)(?P<local>\d+)\]:")
TABLE_RANK = re.compile(r"^  rank      : (?P<rank>\d+) \(local_rank: (?P<local>\d+)\)$", re.M)
TABLE_HOST = re.compile(r"^  host      : (?P<host>\S+)$", re.M)
SRUN = re.compile(r"^srun: error: (?P<host>\S+): tasks? (?P<tasks>[\d,-]+): (Exited with exit code \d+|Killed|"
                  r"Aborted \(core dumped\)|Segmentation fault \(core dumped\)|Terminated)$")
STEPD = re.compile(r"^slurmstepd: error: \*\*\* STEP \d+\.0 ON \S+ CANCELLED AT \d{4}-\d\d-\d\dT[\d:]{8} \*\*\*$")


def _job(tmp_path: Path, kind: str, knobs: Knobs, want: str = "") -> tuple[Truth, Path]:
    """The first seed whose initiating rank is off node 0 (so its local rank is not its rank), when ``want``."""
    for seed in range(40):
        out = tmp_path / f"s{seed}"
        truth = generate(kind, out, seed, knobs)
        if want != "off_node0" or (truth.rank is not None and truth.rank >= 8):
            return truth, out
    raise AssertionError("no seed put the initiator off node 0")


def _text(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and "trace" not in p.name and p.suffix != ".json"}


def test_torchrun_console_prefixes_are_local_ranks_on_every_node(tmp_path: Path) -> None:
    """--tee: one console per node, every worker line behind [default<local>]: ; node 1's first GPU prints
    [default0]: too. The global rank is only in NCCL's comm line and torchrun's table."""
    truth, root = _job(tmp_path, "cuda_oom", Knobs(world_size=32, local_prefix="default"), "off_node0")
    files = _text(root)
    consoles = {k: v for k, v in files.items() if k.endswith("console.log")}
    assert len(consoles) == 4 and not any(k.endswith(".log") and "rank" in k for k in files)
    for text in consoles.values():
        assert any(line.startswith("[default0]:") for line in text.splitlines())
    console = files[f"{truth.host}/console.log"]
    local = truth.rank % 8 if truth.rank is not None else -1
    oom = [line for line in console.splitlines() if "OutOfMemoryError" in line]
    assert oom and all(TORCHRUN.match(x) and TORCHRUN.match(x)["local"] == str(local) for x in oom)  # type: ignore[index]
    assert local != truth.rank
    comm = [NCCL_COMM.search(x) for x in console.splitlines() if x.startswith(f"[default{local}]:")]
    assert {m["rank"] for m in comm if m} == {str(truth.rank)}
    assert {m["dev"] for m in comm if m} == {str(local)}  # NCCL's [cudaDev] and cudaDev: the local device too
    table = TABLE_RANK.findall(console)
    assert (str(truth.rank), str(local)) in table


def test_role_rank_and_template_prefixes(tmp_path: Path) -> None:
    """--role rank (TorchTitan) prints [rank<LOCAL>]: ; a TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE of
    [rank${rank}]: the global rank."""
    truth, root = _job(tmp_path / "role", "cuda_oom", Knobs(world_size=16, local_prefix="role"), "off_node0")
    local = (truth.rank or 0) % 8
    console = _text(root)[f"{truth.host}/console.log"]
    assert any(x.startswith(f"[rank{local}]:") and "OutOfMemoryError" in x for x in console.splitlines())
    truth, root = _job(tmp_path / "tpl", "cuda_oom", Knobs(world_size=16, local_prefix="template"), "off_node0")
    console = _text(root)[f"{truth.host}/console.log"]
    assert any(x.startswith(f"[rank{truth.rank}]: ") and "OutOfMemoryError" in x for x in console.splitlines())


def test_log_dir_files_are_named_by_local_rank_and_the_table_can_be_missing(tmp_path: Path) -> None:
    knobs = Knobs(world_size=16, local_prefix="logdir", failure_table=False)
    truth, root = _job(tmp_path, "sigsegv", knobs, "off_node0")
    files = _text(root)
    logs = {re.sub(r"/881234_[0-9a-f]{8}/", "/RUN/", k) for k in files if k.endswith("stderr.log")}
    assert logs == {f"node00{n}/RUN/attempt_0/{local}/stderr.log" for n in range(2) for local in range(8)}
    everything = "\n".join(files.values())
    assert "Root Cause (first observed failure)" not in everything
    assert f"failed (exitcode: -11) local_rank: {(truth.rank or 0) % 8}" in everything


def test_one_node_many_names(tmp_path: Path) -> None:
    """slurm: NCCL prints gethostname() up to the first '.', torchrun's table socket.getfqdn(), the kernel log
    is kept under the kernel's hostname, a closed peer is its reverse-DNS name; the truth is Slurm's name."""
    knobs = Knobs(world_size=16, aliases="slurm", survivor_transport=True, launcher_reports=True)
    truth, root = _job(tmp_path, "oom_killer", knobs)
    files = _text(root)
    assert truth.host in truth.aliases and f"{truth.host}.cluster.internal" in truth.aliases[truth.host]
    heads = {m["host"] for text in files.values() for line in text.splitlines() if (m := NCCL_HEAD.match(line))}
    assert heads == {"node000", "node001"}
    assert {m["host"] for text in files.values() for m in TABLE_HOST.finditer(text)} <= {
        "node000.cluster.internal", "node001.cluster.internal"}
    assert any(k.startswith(f"{truth.host}.cluster.internal/") for k in files)  # the kernel log, by hostname
    kernel = next(v for k, v in files.items() if k.startswith(f"{truth.host}.cluster.internal/"))
    assert re.search(r"^(\[ *\d+\.\d{6}\] |\w{3} \d\d [\d:]{8} node\d{3}\.cluster\.internal kernel: )Out of memory: "
                     r"Killed process \d+ \(python\)", kernel, re.M)
    closed = re.findall(r"Connection closed by remote peer (\S+)<\d+>", "\n".join(files.values()))
    assert closed and all(x.endswith(".cluster.internal") for x in closed)


def test_kubernetes_pods(tmp_path: Path) -> None:
    truth, root = _job(tmp_path, "nic_failure", Knobs(world_size=16, aliases="k8s"))
    everything = "\n".join(_text(root).values())
    assert truth.host is not None and truth.host.startswith("trainjob-worker-")
    assert f"{truth.host}.trainjob.default.svc.cluster.local" in everything or "Root Cause" not in everything
    assert "node00" not in everything and re.search(r"Using eth0:10\.244\.\d+\.\d+<0>", everything)


def test_launcher_reports_name_task_0_first(tmp_path: Path) -> None:
    """srun hears from task 0 first; the initiator is elsewhere. torchrun's table lists the siblings it
    SIGTERMed under Failures, as SubprocessContext._poll records them."""
    truth, root = _job(tmp_path, "cuda_oom", Knobs(world_size=16, launcher_reports=True), "off_node0")
    files = _text(root)
    srun = files["slurm-881234.out"].splitlines()
    assert SRUN.match(srun[0]) and SRUN.match(srun[0])["tasks"].split("-")[0] == "0"  # type: ignore[index]
    assert SRUN.match(srun[0])["host"] != truth.host  # type: ignore[index]
    assert any(STEPD.match(x) for x in srun)
    assert any(SRUN.match(x) and SRUN.match(x)["host"] == truth.host for x in srun)  # type: ignore[index]
    assert not any(k.endswith("torchrun.log") for k in files)  # srun started the ranks: no torchrun
    truth, root = _job(tmp_path / "torchrun", "cuda_oom", Knobs(world_size=16, launcher_reports=True,
                                                                local_prefix="default"), "off_node0")
    console = _text(root)[f"{truth.host}/console.log"]
    failures = console.split("Failures:")[1].split("Root Cause")[0]
    assert failures.count("exitcode  : -15") == 7 and "Signal 15 (SIGTERM) received by PID" in failures


def test_srun_labels_in_one_file(tmp_path: Path) -> None:
    """srun -l: ``%*d: `` task labels, right-aligned; under torchrun a task is a node."""
    _, root = _job(tmp_path / "a", "xid79", Knobs(world_size=32, interleaved=True, launcher_reports=True))
    labels = {m[1] for line in (root / "job.log").read_text().splitlines() if (m := re.match(r"^( ?\d+): ", line))}
    assert {" 0", " 9", "31"} <= labels
    knobs = Knobs(world_size=32, interleaved=True, local_prefix="default")
    _, root = _job(tmp_path / "b", "xid79", knobs)
    text = (root / "job.log").read_text()
    assert re.search(r"^3: \[default7\]:", text, re.M) and not re.search(r"^\[rank\d+\]: ", text, re.M)


def test_survivors_report_the_dead_peer(tmp_path: Path) -> None:
    truth, root = _job(tmp_path, "cuda_oom", Knobs(world_size=32, survivor_transport=True))
    dead_ip = f"10.0.0.{(truth.rank or 0) // 8 + 1}"
    hits = []
    for name, text in _text(root).items():
        if name.startswith(f"{truth.host}/") or "rank" not in name:
            continue
        hits += [x for x in text.splitlines() if "NCCL WARN" in x
                 and re.search(rf"Connection closed by remote peer {re.escape(dead_ip)}<\d+>|Got completion from peer "
                              r"\S+ with status=12 opcode=\d+ len=0 vendor err 129", x)]
    assert hits and all(NCCL_HEAD.match(x) for x in hits)
    assert "ncclRemoteError: A call failed possibly due to a network error" in "\n".join(_text(root).values())


def test_a_silent_straggler_prints_nothing(tmp_path: Path) -> None:
    """No dump signal, no desync report naming it; the others' watchdogs time out on a SeqNum past its last."""
    truth, root = _job(tmp_path, "straggler", Knobs(world_size=16, silent_straggler=True, desync_debug=True))
    files = _text(root)
    own = files[f"{truth.host}/rank{truth.rank}.log"]
    assert "Received a dump signal" not in own and "Watchdog caught" not in own
    assert "lagging/dead/mismatched ranks" not in "\n".join(files.values())
    steps = {k: re.findall(r"\] step (\d+) ", v) for k, v in files.items() if k.endswith(".log") and "rank" in k}
    assert max(steps[f"{truth.host}/rank{truth.rank}.log"]) < max(max(v) for v in steps.values())
    seqs = {int(x) for v in files.values() for x in re.findall(r"WorkNCCL\(SeqNum=(\d+),", v)}
    done = [int(x) for x in re.findall(r"last completed NCCL work: (\d+)", own)]
    assert seqs and (not done or min(seqs) > max(done))


def test_every_writer_names_its_source() -> None:
    for name, source in SOURCES.items():
        module, _, func = name.partition(".")
        if module in ("lines", "hostile_lines"):
            assert callable(getattr({"lines": lines, "hostile_lines": hostile_lines}[module], func)), name
        assert source.repo and source.path and source.function
    public = [n for n in dir(hostile_lines) if not n.startswith("_") and callable(getattr(hostile_lines, n))
              and getattr(getattr(hostile_lines, n), "__module__", "") == hostile_lines.__name__]
    helpers = {"ranges"}  # srun_exit's task list, cited with it
    assert {f"hostile_lines.{n}" for n in public if n not in helpers} <= set(SOURCES)


def test_knobs_off_write_what_they_wrote_before(tmp_path: Path) -> None:
    """With every hostile knob off, a scenario draws nothing from their generator: the same seed, the same bytes."""
    a = _text(_job(tmp_path / "a", "nic_failure", Knobs(world_size=16))[1])
    b = _text(_job(tmp_path / "b", "nic_failure", Knobs(world_size=16, local_prefix=None, aliases=None))[1])
    assert a == b and any("rank" in k for k in a)


def test_a_hostile_job_speaks_one_nccl_version(tmp_path: Path) -> None:
    """NCCL 2.21.5 prints ``ncclCommInitRank comm %p rank ...`` (src/init.cc) and its socket WARNs from
    misc/socket.cc:30 and :50; the default lines mix older versions' text and line numbers."""
    _, root = _job(tmp_path, "oom_killer", Knobs(world_size=16, survivor_transport=True))
    text = "\n".join(_text(root).values())
    inits = re.findall(r"NCCL INFO (\S+ )?comm 0x[0-9a-f]+ rank", text)
    assert inits and set(inits) == {"ncclCommInitRank "}
    assert set(re.findall(r" misc/socket\.cc:(\d+) NCCL WARN", text)) <= {"30", "50"}
