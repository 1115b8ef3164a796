"""One renderer per launch layout. Each returns {relative path: text or bytes} for the job directory.

Layouts (README.md has the table): lightning_slurm, nemo_exp_manager, deepspeed_rank_logs, torchrun_logdir,
k8s_kubectl_prefix, slurm_split_megatron.
"""

from __future__ import annotations

import pickle

from . import lines, render, topo
from .story import Label, Story


class Ctx:
    def __init__(self, rng, spec, hosts, stories: list[Story], label: Label, job_id: str, extra: dict):
        self.rng, self.spec, self.hosts, self.stories, self.label = rng, spec, hosts, stories, label
        self.job_id, self.extra = job_id, extra
        self.files: dict[str, str | bytes] = {}
        self.ev: dict = {}

    @property
    def st(self) -> Story:
        return self.stories[-1]


def _kernel_files(c: Ctx, folder: str, style: str, name) -> None:
    if not c.spec.kernel_collected:
        return
    for h in c.hosts:
        if h.index in c.st.dead_hosts and c.rng.random() < 0.8:
            continue  # the dead host's kernel log was never collected
        c.files[f"{folder}/{name(h)}"] = render.kernel_text(c.stories, h.index, style)


def _fr_files(c: Ctx, folder: str) -> None:
    """Flight recorder dumps (torch/csrc/distributed/c10d/FlightRecorder: pickled dict with version, pg_config,
    pg_status, entries); TORCH_NCCL_DEBUG_INFO_TEMP_FILE=<folder>/nccl_trace_rank_ ."""
    st = c.st
    for r, d in sorted(st.fr_dump.items()):
        entries = []
        first = st.seq - 7
        for k, seq in enumerate(range(first, d["last_enq"] + 1)):
            done = seq <= d["last_done"]
            entries.append(
                {
                    "record_id": k,
                    "pg_id": 0,
                    "process_group": ("0", "default_pg"),
                    "collective_seq_id": seq,
                    "p2p_seq_id": 0,
                    "op_id": seq,
                    "profiling_name": "nccl:" + st.op.lower().strip("_"),
                    "time_created_ns": int((d["t"] - 60 + k) * 1e9),
                    "input_sizes": [[st.numel]],
                    "input_dtypes": ["BFloat16"],
                    "output_sizes": [[st.numel]],
                    "output_dtypes": ["BFloat16"],
                    "state": "completed" if done else "started",
                    "time_discovered_started_ns": None,
                    "time_discovered_completed_ns": int((d["t"] - 59 + k) * 1e9) if done else None,
                    "retired": done,
                    "timeout_ms": st.spec.timeout_s * 1000,
                    "is_p2p": False,
                    "frames": [],
                }
            )
        dump = {
            "version": "2.4",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(st.world)))}},
            "pg_status": {
                "0": {
                    "last_enqueued_collective": d["last_enq"],
                    "last_started_collective": d["last_enq"],
                    "last_completed_collective": d["last_done"],
                }
            },
            "entries": entries,
        }
        c.files[f"{folder}/nccl_trace_rank_{r}"] = pickle.dumps(dump, protocol=2)


# ---------------------------------------------------------------- Slurm + Lightning (+ array jobs)


def _slurm_combined(c: Ctx, label: bool, streams=("out", "err", "nlog"), srun_too=True) -> list[str]:
    st = c.st
    w = len(str(st.world - 1))
    evs = []
    for r in range(st.world):
        for t, ln in render.rank_events(st, r, streams):
            evs.append((t, (f"{r:0{w}d}: " if label else "") + ln))
    if srun_too:
        evs += render.srun_lines(st, c.extra["slurm_job"], c.ev)
    return [ln for _, ln in render.stamp_sort(evs)]


def lightning_slurm(c: Ctx) -> None:
    ex = c.extra
    hdr = [
        f"SLURM_JOB_ID={ex['slurm_job']} SLURM_JOB_NODELIST={ex['nodelist']} SLURM_NTASKS={c.st.world}",
        f"srun {'--label ' if ex['label'] else ''}python train.py trainer.num_nodes={c.spec.nodes} "
        f"trainer.devices={c.spec.nproc}",
    ]
    name = f"slurm-{ex['array']}.out" if ex.get("array") else f"slurm-{ex['slurm_job']}.out"
    c.files[name] = render.join(hdr + _slurm_combined(c, ex["label"]))
    _kernel_files(c, "kernel", "dmesg_T", lambda h: f"{h.short}.dmesg")


def nemo_exp_manager(c: Ctx) -> None:
    st, ex = c.st, c.extra
    app = st.app
    c.files[f"log-{app.name}_{ex['slurm_job']}.out"] = render.join(_slurm_combined(c, ex["label"]))
    base = f"results/{app.name}/{app.version}"
    per_node_only = st.world > 32
    for r in range(st.world):
        if per_node_only and st.local(r) != 0:
            continue
        evs = render.rank_events(st, r, ("nlog",))
        c.files[f"{base}/nemo_log_globalrank-{r}_localrank-{st.local(r)}.txt"] = render.join([ln for _, ln in evs])
    errs = [ln for _, ln in render.rank_events(st, 0, ("nlog",)) if ln.startswith(("[NeMo W", "[NeMo E"))]
    c.files[f"{base}/nemo_error_log.txt"] = render.join(errs)
    c.files[f"{base}/lightning_logs.txt"] = render.join(
        [ln for _, ln in render.rank_events(st, 0, ("err",)) if "distributed" in ln or "LOCAL_RANK" in ln]
    )
    c.files[f"{base}/cmd-args.log"] = (
        f"/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py "
        f"trainer.num_nodes={c.spec.nodes} trainer.devices={c.spec.nproc}"
    )
    _kernel_files(c, "syslog", "syslog", lambda h: f"{h.short}.log")


def slurm_split_megatron(c: Ctx) -> None:
    ex = c.extra
    stem = f"logs/{ex['name']}-{ex['array'] or ex['slurm_job']}"
    c.files[stem + ".out"] = render.join(_slurm_combined(c, True, ("out",), srun_too=False))
    c.files[stem + ".err"] = render.join(_slurm_combined(c, True, ("err", "nlog"), srun_too=True))
    _kernel_files(c, "kern", "syslog", lambda h: f"{h.short}.log")
    if c.st.fr_dump:
        _fr_files(c, "fr")


# ---------------------------------------------------------------- DeepSpeed launcher with --enable_each_rank_log


def deepspeed_rank_logs(c: Ctx) -> None:
    """deepspeed/launcher/runner.py (pdsh command), launcher/launch.py (WORLD INFO DICT, global_rank_mapping,
    per-rank files `<dir>/<%Y%m%d%H%M%S>_rank<R>.log`, sigkill_handler), pdsh's `ssh exited with exit code`."""
    st, rng = c.st, c.rng
    head = c.hosts[0].short
    out = []
    t0 = st.t0
    ds_ts = lambda h, t: topo.iso_ms(h.clock(t))  # noqa: E731
    names = [h.short for h in sorted(c.hosts, key=lambda h: h.node_rank)]
    out.append(
        (
            t0 - 5,
            f"[{ds_ts(c.hosts[0], t0 - 5)}] [INFO] [runner.py:607:main] cmd = pdsh -S -f 1024 -w "
            f"{','.join(names)} export PYTHONPATH=/workspace; cd /workspace; /usr/bin/python3 -u -m "
            f"deepspeed.launcher.launch --world_info=eyJ... --node_rank=%n --master_addr={c.hosts[0].ip} "
            f"--master_port=29500 --enable_each_rank_log=/fsx/rank_logs {st.app.script} --deepspeed "
            f"--deepspeed_config ds_z3.json",
        )
    )
    mapping = ", ".join(
        f"'{n}': {list(range(i * st.spec.nproc, (i + 1) * st.spec.nproc))}" for i, n in enumerate(names)
    )
    for h in c.hosts:

        def L(t, lvl, where, msg, h=h):
            out.append((t, f"{h.short}: [{ds_ts(h, t)}] [{lvl}] [{where}] {msg}"))

        L(
            t0 - 2,
            "INFO",
            "launch.py:146:main",
            "WORLD INFO DICT: {" + ", ".join(f"'{n}': {list(range(st.spec.nproc))}" for n in names) + "}",
        )
        L(
            t0 - 2,
            "INFO",
            "launch.py:152:main",
            f"nnodes={st.spec.nodes}, num_local_procs={st.spec.nproc}, node_rank={h.node_rank}",
        )
        L(t0 - 2, "INFO", "launch.py:163:main", f"global_rank_mapping=defaultdict(<class 'list'>, {{{mapping}}})")
        L(t0 - 2, "INFO", "launch.py:164:main", f"dist_world_size={st.world}")
        L(
            t0 - 2,
            "INFO",
            "launch.py:168:main",
            "Setting CUDA_VISIBLE_DEVICES=" + ",".join(map(str, range(st.spec.nproc))),
        )
        ranks = st.ranks_on(h.index)
        if h.index in st.dead_hosts:
            td = st.dead_hosts[h.index]
            tt = td + rng.uniform(40, 300)
            out.append((tt, f"pdsh@{head}: {h.short}: ssh exited with exit code 255"))
            c.ev["evidence"] = f"pdsh@{head}: {h.short}: ssh exited with exit code 255"
            continue
        det = st.agent_fail.get(h.index)
        if st.external is not None:
            te = st.external[0]
            for r in ranks:
                L(te + 0.01, "INFO", "launch.py:319:sigkill_handler", f"Killing subprocess {st.pid(r)}")
            L(te + 0.2, "INFO", "launch.py:328:sigkill_handler", "Main process received SIGTERM, exiting")
            c.ev["evidence"] = "Main process received SIGTERM, exiting"
            out.append((te + 0.5, f"pdsh@{head}: {h.short}: ssh exited with exit code 1"))
            continue
        if det is None:
            continue
        first = min((r for r in ranks if st.deaths[r].t <= det + 1e-9), key=lambda r: st.deaths[r].t, default=None)
        if first is None:
            continue
        code = st.deaths[first].code or 1
        for r in ranks:
            L(det + 0.001, "INFO", "launch.py:319:sigkill_handler", f"Killing subprocess {st.pid(r)}")
        last_local = st.spec.nproc - 1
        cmd = [
            "/usr/bin/python3",
            "-u",
            st.app.script,
            f"--local_rank={last_local}",
            "--deepspeed",
            "--deepspeed_config",
            "ds_z3.json",
        ]
        L(det + 0.3, "ERROR", "launch.py:325:sigkill_handler", f"{cmd} exits with return code = {code}")
        out.append((det + 0.6, f"pdsh@{head}: {h.short}: ssh exited with exit code {code & 255}"))
    c.files["ds_launch.log"] = render.join([ln for _, ln in render.stamp_sort(out)])
    c.files["hostfile"] = "".join(f"{n} slots={st.spec.nproc}\n" for n in names)
    for r in range(st.world):
        h = st.host(r)
        stamp = topo.stamp_compact(h.clock(st.t0 - 1))
        c.files[f"rank_logs/{stamp}_rank{r}.log"] = render.join([ln for _, ln in render.rank_events(st, r)])
    # named by IP when the collector used the hostfile's addresses (NCCL's Bootstrap lines map them back)
    _kernel_files(c, "dmesg", "dmesg", lambda h: f"{h.ip}.txt" if c.spec.nccl_debug else f"{h.short}.txt")


# ---------------------------------------------------------------- torchrun --log-dir / --redirects, restarts


def torchrun_logdir(c: Ctx) -> None:
    """torch/distributed/run.py (--log-dir, --redirects, --tee, --max-restarts), elastic/agent/server/api.py
    (restart bookkeeping), multiprocessing/api.py (`<log_dir>/<run_id>_<rand>/attempt_<k>/<local_rank>/
    {stdout,stderr}.log`, error.json), tail_log.py (`[defaultN]:` console prefix when teeing)."""
    ex = c.extra
    run_id = ex["run_id"]
    tee = ex["tee"]
    n_att = len(c.stories)
    for h in c.hosts:
        con: list[tuple[float, str]] = []
        fails_final: list[dict] = []
        for k, st in enumerate(c.stories):
            left = c.spec.max_restarts - k if k < n_att - 1 else 0
            al, fails = render.agent_lines(st, h.index, left, ex["record"], run_id, k == n_att - 1, ev_out=c.ev)
            con += al
            if k == n_att - 1:
                fails_final = fails
            rdir = f"logs/{h.short}/{run_id}_{ex['rand']}/attempt_{k}"
            for r in st.ranks_on(h.index):
                L = st.local(r)
                c.files[f"{rdir}/{L}/stdout.log"] = render.join([ln for _, ln in render.rank_events(st, r, ("out",))])
                c.files[f"{rdir}/{L}/stderr.log"] = render.join([ln for _, ln in render.rank_events(st, r, ("err",))])
                if r in st.pyerr and ex["record"] and st.deaths[r].code == 1:
                    c.files[f"{rdir}/{L}/error.json"] = render.error_json(st, r)
                if tee:
                    con += [(t, f"[default{L}]:{ln}") for t, ln in render.rank_events(st, r, ("err",))]
        if fails_final:
            tend = max(f["t"] for f in fails_final) + 2
            con.append((tend, lines.elastic_main_tb("torchrun")))
            con.append((tend + 0.001, render.table_for(fails_final, c.st.app.script)))
        evs = render.stamp_sort(con)
        text = render.join([ln for _, ln in evs for ln in ln.split("\n")])
        if h.index in c.st.dead_hosts and text:
            text = text[: max(1, len(text) - c.rng.randint(5, 60))]
        c.files[f"console/{h.short}.log"] = text
    _kernel_files(c, "journal", "journal", lambda h: f"{h.short}.log")
    if c.st.fr_dump:
        _fr_files(c, "fr_dumps")


# ---------------------------------------------------------------- Kubernetes: TrainJob / JobSet / Volcano pods


def k8s_kubectl_prefix(c: Ctx) -> None:
    """`kubectl logs -l <selector> --prefix --timestamps` (pods one after another,
    `[pod/<pod>/<container>] <RFC3339Nano> `),
    `kubectl get events` (kubernetes/kubernetes; Kueue pkg/scheduler/preemption `Preempted to accommodate a workload`),
    node lifecycle controller NodeNotReady, kubectl describe conventions."""
    st, rng, ex = c.st, c.rng, c.extra
    cont = ex["container"]
    blocks = []
    for h in sorted(c.hosts, key=lambda h: h.pod):
        if h.index in st.dead_hosts:
            continue  # the kubelet is gone with its node: kubectl gets nothing for this pod
        evs: list[tuple[float, str]] = []
        al, fails = render.agent_lines(st, h.index, 0, ex["record"], ex["run_id"], True, ex["launcher"])
        evs += al
        for r in st.ranks_on(h.index):
            pre = f"[default{st.local(r)}]:" if ex["tee"] else ""
            evs += [(t, pre + ln) for t, ln in render.rank_events(st, r)]
        if fails:
            tend = max(f["t"] for f in fails) + 2
            evs.append((tend, lines.elastic_main_tb(ex["launcher"])))
            evs.append((tend + 0.001, render.table_for(fails, st.app.script)))
        for t, text in render.stamp_sort(evs):
            for ln in text.split("\n"):
                blocks.append(f"[pod/{h.pod}/{cont}] {topo.rfc3339n(h.clock(t))} {ln.rstrip(chr(0))}")
    c.files["kubectl-logs.txt"] = "\n".join(blocks) + "\n"
    # events
    end = max(d.t for d in st.deaths.values())
    now = end + rng.uniform(120, 900)

    def ago(t: float) -> str:
        s = int(now - t)
        return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"

    ev = []
    wl = ex["workload"]  # Kueue workload (for Volcano pods: Kueue's pod-group integration)
    ev.append(
        (
            st.t0 - 40,
            "Normal",
            "QuotaReserved",
            f"workload/{wl}",
            "Quota reserved in ClusterQueue cluster-queue, wait time since queued was 3s",
        )
    )
    ev.append(
        (
            st.t0 - 40,
            "Normal",
            "Admitted",
            f"workload/{wl}",
            "Admitted by ClusterQueue cluster-queue, wait time since reservation was 0s",
        )
    )
    for h in c.hosts:
        ev.append(
            (
                st.t0 - 35,
                "Normal",
                "Scheduled",
                f"pod/{h.pod}",
                f"Successfully assigned default/{h.pod} to {h.k8s_node}",
            )
        )
        ev.append(
            (
                st.t0 - 20,
                "Normal",
                "Pulled",
                f"pod/{h.pod}",
                'Container image "nvcr.io/nvidia/pytorch:24.07-py3" already present on machine',
            )
        )
        ev.append((st.t0 - 19, "Normal", "Started", f"pod/{h.pod}", f"Started container {cont}"))
    if st.external is not None:
        te = st.external[0]
        msg = (
            f"Preempted to accommodate a workload (UID: {ex['uid1']}, JobUID: {ex['uid2']}) due to prioritization "
            f"in the ClusterQueue; preemptor path: /research; preemptee path: /research"
        )
        ev.append((te - 0.5, "Normal", "Preempted", f"workload/{wl}", msg))
        ev.append((te - 0.4, "Normal", "EvictedDueToPreempted", f"workload/{wl}", msg))
        c.ev["evidence"] = "Preempted to accommodate a workload"
        for h in c.hosts:
            ev.append((te - 0.2, "Normal", "Killing", f"pod/{h.pod}", f"Stopping container {cont}"))
    for h, td in st.dead_hosts.items():
        host = c.hosts[h]
        tn = td + rng.uniform(40, 60)
        ev.append(
            (tn, "Normal", "NodeNotReady", f"node/{host.k8s_node}", f"Node {host.k8s_node} status is now: NodeNotReady")
        )
        ev.append((tn + 0.1, "Warning", "NodeNotReady", f"pod/{host.pod}", "Node is not ready"))
        c.ev["evidence"] = "Node is not ready"
        ev.append(
            (
                tn + 300,
                "Warning",
                "TaintManagerEviction",
                f"pod/{host.pod}",
                f"Marking for deletion Pod default/{host.pod}",
            )
        )
    if st.external is None:
        first_fail = min((d.t for d in st.deaths.values() if d.code not in (None, -15)), default=end)
        # JobSet's FailedJobs reason/message as recalled from kubernetes-sigs/jobset constants (not checked here)
        ev.append(
            (
                end + 3,
                "Warning",
                "FailedJobs" if ex["flavor"] != "volcano" else "PodFailed",
                ex["owner"],
                "jobset failed due to one or more job failures"
                if ex["flavor"] != "volcano"
                else f"Task {ex['task']} has failed pods",
            )
        )
        ev.append((first_fail + 5, "Normal", "Killing", f"pod/{c.hosts[0].pod}", f"Stopping container {cont}"))
    rows = sorted(ev, key=lambda e: e[0])
    w_obj = max(len(e[3]) for e in rows) + 3
    out = [f"{'LAST SEEN':<12}{'TYPE':<10}{'REASON':<24}{'OBJECT':<{w_obj}}MESSAGE"]
    for t, typ, reason, obj, msg in rows:
        out.append(f"{ago(t):<12}{typ:<10}{reason:<24}{obj:<{w_obj}}{msg}")
    c.files["events.txt"] = "\n".join(out) + "\n"
    _kernel_files(c, "nodes", "journal", lambda h: f"{h.k8s_node}.log")


LAYOUTS = {
    "lightning_slurm": lightning_slurm,
    "nemo_exp_manager": nemo_exp_manager,
    "deepspeed_rank_logs": deepspeed_rank_logs,
    "torchrun_logdir": torchrun_logdir,
    "k8s_kubectl_prefix": k8s_kubectl_prefix,
    "slurm_split_megatron": slurm_split_megatron,
}
