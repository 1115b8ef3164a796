# ruff: noqa: E501  (the citation table is wider than a line)
"""Where every simulated line format comes from: the upstream repository, file and function that prints it.

The default simulator's NCCL lines mix versions (noted per row: its init line is 2.18-2.20's, its "closed by
remote peer" carries 2.18's line number, its "reset by peer" an older one); any hostile knob rewrites them to
2.21.5's exact text (hostile._one_nccl_version). Read from the sources themselves (NVIDIA/nccl and SchedMD/slurm at the tags named, pytorch/pytorch and
torvalds/linux at their main branch of late 2025), not from the correlator or the catalog, so that the
simulator does not share the reader's assumptions. Each entry names the simulator function that writes the
format, so tests/unit/test_simulate_sources.py can check that every writer has one.

| writer | upstream | file | function | what it prints |
|---|---|---|---|---|
| lines.head | NVIDIA/nccl v2.21.5-1 | src/debug.cc | ncclDebugLog | ``host:pid:tid [cudaDev] NCCL INFO`` / ``... file:line NCCL WARN``; host is gethostname() cut at the first '.' (src/misc/utils.cc getHostName), cudaDev the LOCAL device (cudaGetDevice) |
| lines.nccl_init | NVIDIA/nccl v2.21.5-1 | src/bootstrap.cc, src/init.cc | bootstrapNetInit, initTransportsRank | ``Bootstrap : Using ifname:ip<0>``; ``comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE`` (rank = GLOBAL rank); default: 2.18-2.20's text, 2.21.5 prepends ``ncclCommInitRank`` |
| lines.reset_by_peer | NVIDIA/nccl v2.21.5-1 | src/misc/socket.cc | socketProgressOpt | ``Call to recv from ip<port> failed : Connection reset by peer`` (numeric host); default line number 538 is pre-2.18, 2.21.5's is 30 |
| lines.closed_by_peer, hostile_lines.closed_by_peer | NVIDIA/nccl v2.21.5-1 | src/misc/socket.cc | socketProgress | ``Connection closed by remote peer host<port>``: ncclSocketToString(..., numericHostForm=0), so getnameinfo's reverse-DNS name (hostile: resolved; default: numeric, and 2.18's :49 where 2.21.5 has :50) |
| lines.ib_completion, hostile_lines.ib_completion | NVIDIA/nccl v2.21.5-1 | src/transport/net_ib.cc:1909 | ncclIbTest | ``NET/IB : Got completion from peer ip<port> with status=%d opcode=%d len=%d vendor err %d (%s)`` then `` localGid %s remoteGids %s`` on RoCE (link layer Ethernet) only |
| hostile_lines.nccl_remote_error | NVIDIA/nccl v2.21.5-1; pytorch/pytorch | src/init.cc; torch/csrc/distributed/c10d/NCCLUtils.cpp | ncclGetErrorString; getNcclErrorDetailStr | ``remote process exited or there was a network error``; ``ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.`` |
| lines.watchdog | pytorch/pytorch | torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp | WorkNCCL::checkTimeout; Watchdog::runLoop | ``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=..., OpType=..., NumelIn=..., NumelOut=..., Timeout(ms)=600000) ran for N milliseconds before timing out.``; ``failure detected by watchdog at work sequence id: N PG status: last enqueued work: N, last completed work: M`` |
| lines.dump_signal | pytorch/pytorch | torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp | HeartbeatMonitor::getNCCLWatchdogTimeoutErrorMsg | ``Received a dump signal due to a collective timeout from rank N ... Last enqueued NCCL work: N, last completed NCCL work: M.`` |
| hostile_lines.work_update | pytorch/pytorch | torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp | Watchdog::runLoop (C10_LOG_EVERY_MS INFO) | ``NCCL Work update periodically: last enqueued NCCL work: N, last completed NCCL work: M.`` |
| (the ``[rankN]:`` on C++ lines) | pytorch/pytorch | torch/distributed/distributed_c10d.py; torch/csrc/distributed/c10d/init.cpp | _update_default_pg; _set_global_rank -> c10::SetGlobalRank | C++ log lines prefixed with the default group's GLOBAL rank |
| hostile.local_prefix "default"/"role" | pytorch/pytorch | torch/distributed/elastic/multiprocessing/tail_log.py | TailLog.start | ``[{role}{local_rank}]:`` before every worker line (torchrun --tee); role "default", or "rank" with ``--role rank`` (TorchTitan's run_train.sh): LOCAL rank either way |
| hostile.local_prefix "template" | pytorch/pytorch | torch/distributed/elastic/agent/server/local_elastic_agent.py | LocalElasticAgent._start_workers | TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, e.g. ``[rank${rank}]: `` -> the GLOBAL rank |
| hostile.local_prefix "logdir" | pytorch/pytorch | torch/distributed/elastic/multiprocessing/api.py | DefaultLogsSpecs.reify | ``--log-dir``/``--redirects``: ``attempt_0/{local_rank}/stderr.log``, no prefix |
| lines.agent, hostile_lines.failure_entry, hostile_lines.signal_why, hostile_events.agent_table | pytorch/pytorch | torch/distributed/elastic/multiprocessing/errors/__init__.py | ChildFailedError.format_msg, _format_failure; ProcessFailure | ``rank : 50 (local_rank: 2)`` (GLOBAL rank), ``exitcode : -9 (pid: N)``, ``error_file: <N/A>``, ``traceback : Signal 9 (SIGKILL) received by PID N``; host is socket.getfqdn(); siblings SIGTERMed on the way down are listed under Failures |
| lines.agent | pytorch/pytorch | torch/distributed/elastic/multiprocessing/api.py | SubprocessContext._poll, _close | ``failed (exitcode: %s) local_rank: %s (pid: %s) of binary: %s``; ``Sending process %s closing signal %s`` |
| hostile_lines.srun_exit | SchedMD/slurm slurm-24-11-7-1 | src/srun/launch.c | _task_finish | ``srun: error: host: task N: Exited with exit code C``; ``... task N: Killed`` / ``Aborted (core dumped)`` (strsignal) |
| hostile_lines.srun_label | SchedMD/slurm slurm-24-11-7-1 | src/common/write_labelled_message.c | _write_label | ``srun -l``: ``%*d: `` the task id, right-aligned to the widest |
| lines.slurm_node_failure, hostile_lines.step_cancelled | SchedMD/slurm slurm-24-11-7-1 | src/slurmd/slurmstepd/req.c | _handle_signal_container | ``slurmstepd: error: *** STEP j.s ON host CANCELLED AT time ***`` (and DUE TO NODE FAILURE) |
| lines.dmesg_oom | torvalds/linux | mm/oom_kill.c | __oom_kill_process | ``Out of memory: Killed process PID (comm) total-vm:..kB, anon-rss:..kB, file-rss:..kB, shmem-rss:..kB, UID:.. pgtables:..kB oom_score_adj:..`` |
| lines.dmesg_segfault | torvalds/linux | arch/x86/mm/fault.c | show_signal_msg | ``comm[pid]: segfault at ADDR ip IP sp SP error E in lib.so[base+size]`` |
| lines.dmesg_xid | NVIDIA/open-gpu-kernel-modules | src/nvidia/src/kernel/gpu/rc/kernel_rc.c | krcReportXid_IMPL (portDbgPrintf ``NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s``) | ``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., GPU has fallen off the bus.`` |
| hostile_lines.dmesg_raw | torvalds/linux | kernel/printk/printk.c | print_time | raw dmesg ``[%5lu.%06lu]``: seconds since boot, no host, no wall clock |
| hostile_lines.journal_line | systemd/systemd | src/shared/logs-show.c | output_short | ``journalctl -k``: ``Nov 29 10:02:03 hostname kernel: msg``, the kernel's hostname |
| hostile_events.survivors_report | NVIDIA/nccl v2.21.5-1 | (the three NCCL rows above) | | survivors' IB completion error / closed socket, then ncclRemoteError |
"""

from __future__ import annotations

from typing import NamedTuple


class Source(NamedTuple):
    repo: str
    path: str
    function: str


SOURCES: dict[str, Source] = {
    "lines.head": Source("NVIDIA/nccl@v2.21.5-1", "src/debug.cc", "ncclDebugLog"),
    "lines.nccl_init": Source("NVIDIA/nccl@v2.21.5-1", "src/init.cc", "initTransportsRank"),
    "lines.reset_by_peer": Source("NVIDIA/nccl@v2.21.5-1", "src/misc/socket.cc", "socketProgressOpt"),
    "lines.closed_by_peer": Source("NVIDIA/nccl@v2.21.5-1", "src/misc/socket.cc", "socketProgress"),
    "lines.ib_completion": Source("NVIDIA/nccl@v2.21.5-1", "src/transport/net_ib.cc", "ncclIbTest"),
    "lines.watchdog": Source("pytorch/pytorch", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
                             "WorkNCCL::checkTimeout"),
    "lines.watchdog_error": Source("pytorch/pytorch", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
                                   "Watchdog::runLoop"),
    "lines.dump_signal": Source("pytorch/pytorch", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
                                "HeartbeatMonitor::getNCCLWatchdogTimeoutErrorMsg"),
    "lines.agent": Source("pytorch/pytorch", "torch/distributed/elastic/multiprocessing/errors/__init__.py",
                          "ChildFailedError.format_msg"),
    "lines.slurm_node_failure": Source("SchedMD/slurm@slurm-24-11-7-1", "src/slurmd/slurmstepd/req.c",
                                       "_handle_signal_container"),
    "lines.dmesg_oom": Source("torvalds/linux", "mm/oom_kill.c", "__oom_kill_process"),
    "lines.dmesg_segfault": Source("torvalds/linux", "arch/x86/mm/fault.c", "show_signal_msg"),
    "lines.dmesg_xid": Source("NVIDIA/open-gpu-kernel-modules", "src/nvidia/src/kernel/gpu/rc/kernel_rc.c",
                              "krcReportXid_IMPL"),
    "hostile_lines.ib_completion": Source("NVIDIA/nccl@v2.21.5-1", "src/transport/net_ib.cc", "ncclIbTest"),
    "hostile_lines.closed_by_peer": Source("NVIDIA/nccl@v2.21.5-1", "src/misc/socket.cc", "socketProgress"),
    "hostile_lines.nccl_remote_error": Source("pytorch/pytorch", "torch/csrc/distributed/c10d/NCCLUtils.cpp",
                                              "getNcclErrorDetailStr"),
    "hostile_lines.work_update": Source("pytorch/pytorch", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
                                        "Watchdog::runLoop"),
    "hostile_lines.failure_entry": Source("pytorch/pytorch",
                                          "torch/distributed/elastic/multiprocessing/errors/__init__.py",
                                          "ChildFailedError._format_failure"),
    "hostile_lines.signal_why": Source("pytorch/pytorch",
                                       "torch/distributed/elastic/multiprocessing/errors/__init__.py",
                                       "ProcessFailure.__post_init__"),
    "hostile_lines.srun_exit": Source("SchedMD/slurm@slurm-24-11-7-1", "src/srun/launch.c", "_task_finish"),
    "hostile_lines.srun_label": Source("SchedMD/slurm@slurm-24-11-7-1", "src/common/write_labelled_message.c",
                                       "_write_label"),
    "hostile_lines.step_cancelled": Source("SchedMD/slurm@slurm-24-11-7-1", "src/slurmd/slurmstepd/req.c",
                                           "_handle_signal_container"),
    "hostile_lines.dmesg_raw": Source("torvalds/linux", "kernel/printk/printk.c", "print_time"),
    "hostile_lines.journal_line": Source("systemd/systemd", "src/shared/logs-show.c", "output_short"),
    "hostile.torchrun_prefix": Source("pytorch/pytorch", "torch/distributed/elastic/multiprocessing/tail_log.py",
                                      "TailLog.start"),
    "hostile.template_prefix": Source("pytorch/pytorch",
                                      "torch/distributed/elastic/agent/server/local_elastic_agent.py",
                                      "LocalElasticAgent._start_workers"),
    "hostile.log_dir": Source("pytorch/pytorch", "torch/distributed/elastic/multiprocessing/api.py",
                              "DefaultLogsSpecs.reify"),
    "hostile.c10_rank_prefix": Source("pytorch/pytorch", "torch/distributed/distributed_c10d.py",
                                      "_update_default_pg"),
}
