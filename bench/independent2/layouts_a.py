"""Launch layouts, part 1: DeepSpeed/pdsh, accelerate, Open MPI mpirun --tag-output, horovodrun, mp.spawn.

Each render(topo, story) returns {relative path: text} for one job directory.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

from . import render as R
from .story import Story
from .topo import Topo

SIGTEXT = {9: "Killed", 6: "Aborted", 11: "Segmentation fault", 15: "Terminated"}


def _dmesg(topo: Topo, st: Story) -> dict[str, str]:
    rng = topo.rng
    return R.dmesg_files(topo, st, rng.choice(["raw", "raw", "human", "journal"]),
                         rng.choice(["short", "fqdn", "ip"]), rng.random() < 0.4)


def deepspeed_pdsh(topo: Topo, st: Story) -> dict[str, str]:
    """deepspeedai/DeepSpeed deepspeed/launcher/runner.py main + multinode_runner.py PDSHRunner.get_cmd (pdsh -S
    -f 1024 -w), pdsh's 'host: ' line prefix, launcher/launch.py main (WORLD INFO DICT, global_rank_mapping) and
    sigkill_handler ('Killing subprocess %s', '%s exits with return code = %s', where cmd is the last-built
    per-rank command line: always the highest local rank's)."""
    st = R.cut_nodes(topo, st, 1.0)
    h0 = topo.hosts[0]
    hl = ",".join(topo.hosts)
    lines: list[R.Line] = []

    def at(t: float, text: str, node: int = 0, pre: str = "") -> None:
        lines.append((t, pre + topo.stamp(text, t, node)))

    at(0.1, f"[@PYTS@] [INFO] [runner.py:463:main] Using IP address of {topo.ips[0]} for node {h0}")
    at(0.11, f"[@PYTS@] [INFO] [multinode_runner.py:80:get_cmd] Running on the following workers: {hl}")
    at(0.12, f"[@PYTS@] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w {hl} export NCCL_DEBUG="
       f"{'INFO' if topo.nccl_info else 'WARN'}; cd /workspace; /usr/bin/python3 -u -m deepspeed.launcher.launch "
       f"--world_info=eyJ... --node_rank=%n --master_addr={topo.ips[0]} --master_port=29500 train.py --deepspeed "
       "--deepspeed_config ds_config.json")
    mapping = {h: topo.ranks_on(i) for i, h in enumerate(topo.hosts)}
    for n, h in enumerate(topo.hosts):
        p = f"{h}: "
        at(1.5 + n * 0.01, f"[@PYTS@] [INFO] [launch.py:146:main] WORLD INFO DICT: "
           f"{ {k: list(range(topo.nproc)) for k in topo.hosts} }", n, p)
        at(1.51 + n * 0.01, f"[@PYTS@] [INFO] [launch.py:152:main] nnodes={len(topo.hosts)}, num_local_procs="
           f"{topo.nproc}, node_rank={n}", n, p)
        at(1.52 + n * 0.01, f"[@PYTS@] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict(<class 'list'>, "
           f"{mapping})", n, p)
        at(1.53 + n * 0.01, f"[@PYTS@] [INFO] [launch.py:164:main] dist_world_size={topo.world}", n, p)
    lines += R.rank_lines(topo, st, lambda r: f"{topo.hosts[topo.node(r)]}: ")
    end = st.end
    for n, h in enumerate(topo.hosts):
        mine = {r: st.exits[r] for r in topo.ranks_on(n) if r in st.exits}
        bad = {r: v for r, v in mine.items() if v[1] != 0}
        if not mine:
            at(end + 45 + n, f"pdsh@{h0}: {h}: ssh exited with exit code 255")
            continue
        if not bad:
            continue
        seen = math.ceil(min(t for t, _ in bad.values()))
        first = min(r for r, (t, _) in bad.items() if t <= seen)
        for r in topo.ranks_on(n):
            at(seen + 0.01 * topo.local(r), f"[@PYTS@] [INFO] [launch.py:315:sigkill_handler] Killing subprocess "
               f"{topo.pids[r]}", n, f"{h}: ")
        cmd = ["/usr/bin/python3", "-u", "train.py", f"--local_rank={topo.nproc - 1}", "--deepspeed",
               "--deepspeed_config", "ds_config.json"]
        rc = bad[first][1]
        at(seen + 0.2, f"[@PYTS@] [ERROR] [launch.py:321:sigkill_handler] {cmd} exits with return code = {rc}", n,
           f"{h}: ")
        at(seen + 0.5, f"pdsh@{h0}: {h}: ssh exited with exit code {rc % 256}")
    files = {"deepspeed_train.log": R.join(lines),
             "hostfile": "".join(f"{h} slots={topo.nproc}\n" for h in topo.hosts)}
    files.update(_dmesg(topo, st))
    return files


_ACCEL_TB = [
    ("/usr/local/bin/accelerate", 8, "<module>", "sys.exit(main())"),
    ("/usr/local/lib/python3.10/dist-packages/accelerate/commands/accelerate_cli.py", 48, "main", "args.func(args)"),
    ("/usr/local/lib/python3.10/dist-packages/accelerate/commands/launch.py", 1097, "launch_command",
     "multi_gpu_launcher(args)"),
    ("/usr/local/lib/python3.10/dist-packages/accelerate/commands/launch.py", 734, "multi_gpu_launcher",
     "distrib_run.run(args)"),
    ("/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", 892, "run", "elastic_launch("),
    ("/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", 133, "__call__",
     "return launch_agent(self._config, self._entrypoint, list(args))"),
    ("/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", 264, "launch_agent",
     "raise ChildFailedError("),
]


def accelerate_nodes(topo: Topo, st: Story) -> dict[str, str]:
    """huggingface/accelerate accelerate/commands/launch.py multi_gpu_launcher -> torch.distributed.run: without
    --tee rank output is unprefixed on each node's console; with --tee 3 torchelastic's tail_log.py TailLog prefixes
    each line '[<role><local_rank>]:' ('[default3]:'); then the elastic ChildFailedError table."""
    from .lines import traceback

    files: dict[str, str] = {}
    poll = 5.0 if not topo.torch_new else 0.1
    st = R.cut_nodes(topo, st, poll)
    naming = topo.rng.choice(["fqdn", "node"])
    tee = topo.rng.random() < 0.5
    for n in range(len(topo.hosts)):
        lines: list[R.Line] = [(0.2, "The following values were not passed to `accelerate launch` and had defaults "
                                     "used instead:"), (0.21, "\t`--dynamo_backend` was set to a value of `'no'`")]
        lines += R.rank_lines(topo, st, lambda r: f"[default{topo.local(r)}]:" if tee else "", keep=R.on_node(topo, n))
        lines += R.elastic_agent_lines(topo, st, n, poll)
        tab = R.elastic_table(topo, st, n, poll, "train.py")
        if tab:
            lines.append((tab[0] + 1, traceback(_ACCEL_TB, tab[1])))
        name = topo.fqdn[n] if naming == "fqdn" else f"node{n}"
        files[f"logs/{name}.log"] = R.join(lines)
    files.update(_dmesg(topo, st))
    return files


def _stream(text: str) -> str:
    return "stdout" if " NCCL INFO " in text or " iteration " in text else "stderr"


def mpirun_tag(topo: Topo, st: Story) -> dict[str, str]:
    """open-mpi/ompi v4.1 orte/mca/iof (--tag-output '[jobid,rank]<stream>:'), orte/tools/orterun/help-orterun.txt
    [orterun:proc-aborted-signal] / [orterun:non-zero-exit], orte/mca/errmgr/base/help-errmgr-base.txt
    [node-died]. mpirun reports the first process death its daemons relay to it."""
    rng = topo.rng
    story, st = st, R.cut_all(topo, st, 1.5)
    naming = rng.choice(["short", "ip", "fqdn"])
    name = {"short": topo.hosts, "ip": topo.ips, "fqdn": topo.fqdn}[naming]
    jid = rng.randint(10000, 65000)
    out: list[R.Line] = []
    for ev in st.events:
        if ev.src == "rank" and ev.rank is not None:
            for i, ln in enumerate(topo.stamp(ev.text, ev.t, ev.host).split("\n")):
                out.append((ev.t + i * 1e-6, f"[1,{ev.rank}]<{_stream(ln)}>:{ln}"))
    lag = [rng.uniform(0, 2.5) for _ in topo.hosts]
    dash = "-" * 74
    lost = [n for n in range(len(topo.hosts)) if not any(r in st.exits for r in topo.ranks_on(n))]
    bad = [(t + lag[topo.node(r)], r, rc) for r, (t, rc) in st.exits.items() if rc != 0]
    if lost:
        n = lost[0]
        t = min([b[0] for b in bad] + [st.end]) - rng.uniform(0, 5)
        txt = (f"{dash}\nORTE has lost communication with a remote daemon.\n\n  HNP daemon   : [[{jid},0],0] on node "
               f"{name[0]}\n  Remote daemon: [[{jid},0],{n + 1}] on node {name[n]}\n\nThis is usually due to either a "
               "failure of the TCP network\nconnection to the node, or possibly an internal failure of\nthe daemon "
               "itself. We cannot recover from this failure, and\ntherefore will terminate the job.\n" + dash)
        out.append((t, txt))
        if story.evidence.startswith("(no line"):
            story.present = True
            story.evidence = f"Remote daemon: [[{jid},0],{n + 1}] on node {name[n]}"
    elif bad:
        t, r, rc = min(bad)
        if rc < 0:
            txt = (f"{dash}\nmpirun noticed that process rank {r} with PID {topo.pids[r]} on node {name[topo.node(r)]}"
                   f" exited on signal {-rc} ({SIGTEXT.get(-rc, 'Unknown signal')}).\n{dash}")
        else:
            txt = (f"{dash}\nPrimary job  terminated normally, but 1 process returned\na non-zero exit code. Per "
                   f"user-direction, the job has been aborted.\n{dash}\n{dash}\nmpirun detected that one or more "
                   "processes exited with non-zero status, thus causing\nthe job to be terminated. The first process "
                   f"to do so was:\n\n  Process name: [[{jid},1],{r}]\n  Exit code:    {rc}\n{dash}")
        out.append((t, txt))
    files = {"mpirun.out": R.join(out),
             "hosts.txt": "".join(f"{name[n]} slots={topo.nproc}\n" for n in range(len(topo.hosts)))}
    files.update(_dmesg(topo, st))
    return files


def horovodrun(topo: Topo, st: Story) -> dict[str, str]:
    """horovod/horovod horovod/runner/common/util/safe_shell_exec.py prefix_stream ('[%d]<%s>:', with
    --prefix-output-with-timestamp the launcher's own time first) and horovod/runner/gloo_run.py launch_gloo
    ('Process %d exit with status code %d.', 'Terminating remaining workers after failure of Process %d.',
    the RuntimeError 'Horovod detected that one or more processes exited with non-zero status ...')."""
    from .lines import traceback

    stamp = topo.rng.random() < 0.4
    st = R.cut_all(topo, st, 0.3)
    out: list[R.Line] = []
    for ev in st.events:
        if ev.src == "rank" and ev.rank is not None:
            for i, ln in enumerate(topo.stamp(ev.text, ev.t, ev.host).split("\n")):
                t = ev.t + topo.rng.uniform(0.001, 0.05)
                pre = datetime.fromtimestamp(topo.t0 + t, tz=UTC).strftime("%a %b %d %H:%M:%S %Y") if stamp else ""
                out.append((t + i * 1e-6, f"{pre}[{ev.rank}]<{_stream(ln)}>:{ln}"))
    bad = sorted((t, r, rc) for r, (t, rc) in st.exits.items() if rc != 0)
    lost = [r for r in range(topo.world) if r not in st.exits]
    if lost and (not bad or bad[0][0] > st.end - 1):
        bad.insert(0, (st.end + 30, lost[0], 255))
    if bad:
        t, r, rc = bad[0]
        out.append((t + 0.1, f"Process {r} exit with status code {rc}."))
        out.append((t + 0.2, f"Terminating remaining workers after failure of Process {r}."))
        tb = traceback([("/usr/local/bin/horovodrun", 8, "<module>", "sys.exit(run_commandline())"),
                        ("/usr/local/lib/python3.10/dist-packages/horovod/runner/gloo_run.py", 287, "launch_gloo",
                         "raise RuntimeError('Horovod detected that one or more processes exited with non-zero '")],
                       "RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus "
                       f"causing the job to be terminated. The first process to do so was:\nProcess name: {r}\n"
                       f"Exit code: {rc}\n")
        out.append((t + 5, tb))
    files = {"horovodrun.log": R.join(out)}
    files.update(_dmesg(topo, st))
    return files


def mp_spawn(topo: Topo, st: Story) -> dict[str, str]:
    """pytorch/pytorch torch/multiprocessing/spawn.py: _wrap sends a child's traceback to the parent instead of
    printing it; ProcessContext.join raises for the first process it finds dead: ProcessRaisedException
    ('-- Process %d terminated with the following error:'), ProcessExitedException ('process %d terminated with
    signal %s' / 'with exit code %d'), after 'Terminating process %s via signal SIGTERM' (torch >= 2.3)."""
    from .lines import traceback

    st = R.cut_all(topo, st, 0.2)
    held: dict[int, str] = {}
    for ev in st.events:
        if ev.src == "rank" and ev.rank is not None and ev.text.startswith("Traceback") and ev.rank not in held:
            held[ev.rank] = topo.stamp(ev.text, ev.t, ev.host)
    out = R.rank_lines(topo, st, lambda r: "")
    out = [(t, ln) for t, ln in out if not any(ln in h.split("\n") for h in held.values()) or " NCCL " in ln]
    bad = sorted((t, r, rc) for r, (t, rc) in st.exits.items() if rc != 0)
    if bad:
        t, r, rc = bad[0]
        if topo.torch_new:
            for q in range(topo.world):
                if q != r:
                    out.append((t + 0.1 + q * 1e-3, topo.stamp(f"W@GLOG@ {140_000_000_000_000 + topo.pids[0]} torch/"
                                f"multiprocessing/spawn.py:160] Terminating process {topo.pids[q]} via signal SIGTERM",
                                t + 0.1, 0)))
        frames = [("/workspace/train.py", 301, "<module>", "mp.spawn(main, args=(world_size,), nprocs=world_size, "
                   "join=True)"),
                  ("/usr/local/lib/python3.10/dist-packages/torch/multiprocessing/spawn.py", 284, "start_processes",
                   "while not context.join():"),
                  ("/usr/local/lib/python3.10/dist-packages/torch/multiprocessing/spawn.py", 203, "join",
                   "raise ProcessRaisedException(msg, error_index, failed_process.pid)" if rc > 0 and r in held
                   else "raise ProcessExitedException(")]
        if rc < 0:
            exc = (f"torch.multiprocessing.spawn.ProcessExitedException: process {r} terminated with signal "
                   f"{R.sig_name(rc)}")
        elif r in held:
            inner = held[r].replace("Traceback (most recent call last):\n", "Traceback (most recent call last):\n"
                                    '  File "/usr/local/lib/python3.10/dist-packages/torch/multiprocessing/spawn.py", '
                                    "line 75, in _wrap\n    fn(i, *args)\n", 1)
            inner = inner.replace('  File "/workspace/train.py", line 412, in <module>\n    main()\n', "")
            exc = f"torch.multiprocessing.spawn.ProcessRaisedException: \n\n-- Process {r} terminated with the " \
                  f"following error:\n{inner}"
        else:
            exc = f"torch.multiprocessing.spawn.ProcessExitedException: process {r} terminated with exit code {rc}"
        out.append((t + 0.5, traceback(frames, exc)))
    files = {"train.log": R.join(out), "env.json": json.dumps({"hostname": topo.hosts[0], "nprocs": topo.world}) + "\n"}
    files.update(_dmesg(topo, st))
    return files
