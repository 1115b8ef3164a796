"""One writer per launcher layout: what OUT/<job>/ holds and how each line names its rank and host.

- flux: ``flux batch`` output ``flux-<id>.out`` (flux-core's default ``flux-{{id}}.out``) holding ``flux run
  --label-io`` (``R: ``) and the shell/exception lines; ``kernel/<host or FQDN>.log`` (journalctl -k);
  ``fabricmanager/<host>.log``.
- pbs_hydra: PBS Pro ``<name>.o<seq>`` / ``<name>.e<seq>`` from ``mpiexec -l`` (``[R] ``), ``nodefile``
  ($PBS_NODEFILE: FQDNs), ``hosts`` (an /etc/hosts excerpt: IP, xname, nid), ``console/<nid>.log`` (console
  log lines name the node by its nid only).
- prterun_efa: ``mpirun.log`` (``[1,R]<stdout>: `` / ``[1,R]<stderr>: ``, prterun's help blocks), ``hostfile``,
  ``run.sh`` (the mapping policy), ``dmesg/<host>.txt`` (raw dmesg).
- pyxis_slurm: ``slurm-<jobid>.out`` from ``srun -l --container-image=…`` (``%0*d: `` labels, SchedMD/slurm
  src/common/write_labelled_message.c), ``job.sbatch``, ``kern/<host>.log`` (syslog), ``fabricmanager/<host>.log``.

Every host stamps with its own skewed clock; lines are written in the order the collector received them (true
time), which is not the order of their stamps."""

from __future__ import annotations

from pathlib import Path

from .apps import kernel_stamp
from .clocks import fm_stamp, local
from .story import Job


def _rank_stream(job: Job, fmt, only_err: bool | None = None) -> list[tuple[float, str]]:
    out = []
    for r in range(job.world):
        for o in job.lines.get(r, []) + job.task_lines.get(r, []):
            if only_err is None or o.err == only_err:
                out.append((o.t, fmt(r, o)))
    return out


def _write(path: Path, rows: list[tuple[float, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda x: x[0])
    path.write_text("".join(x + "\n" for _, x in rows))


def _launcher(job: Job) -> list[tuple[float, str]]:
    return [(o.t, o.text) for o in job.launcher]


def _kernel_files(job: Job, d: Path, sub: str, style: str, name_of, ext: str) -> None:
    if not job.kernel_logs:
        return
    for hi, h in enumerate(job.hosts):
        rows = [(h.boot + 3.2 + i, kernel_stamp(job, hi, h.boot + 3.2 + i, style) + x)
                for i, x in enumerate(job.label["boot_noise"])]
        rows += [(t, kernel_stamp(job, hi, t, style) + x) for t, x in job.kern.get(hi, [])]
        _write(d / sub / f"{name_of(h)}.{ext}", rows)
        if hi in job.fm:
            _write(d / "fabricmanager" / f"{h.name}.log",
                   [(t, f"{fm_stamp(local(h, t))} {x}") for t, x in job.fm[hi]])


def flux(job: Job, d: Path) -> None:
    rows = _rank_stream(job, lambda r, o: f"{r}: {o.text}") + _launcher(job)
    _write(d / f"flux-{job.label['flux_id']}.out", rows)
    fqdn = job.rng.random() < 0.5
    _kernel_files(job, d, "kernel", "journal", lambda h: h.alias if fqdn else h.name, "log")


def _hydra_block(x: str) -> bool:
    """mpiexec prints its BAD TERMINATION block on stdout; PBS's and mpiexec's error lines go to stderr."""
    return x == "" or (x.startswith("=") and not x.startswith("=>>"))


def pbs_hydra(job: Job, d: Path) -> None:
    name, seq = job.label["pbs_name"], job.label["pbs_seq"]
    out = _rank_stream(job, lambda r, o: f"[{r}] {o.text}", only_err=False)
    err = _rank_stream(job, lambda r, o: f"[{r}] {o.text}", only_err=True)
    blocks = [(o.t, o.text) for o in job.launcher if _hydra_block(o.text)]
    rest = [(o.t, o.text) for o in job.launcher if not _hydra_block(o.text)]
    _write(d / f"{name}.o{seq}", out + blocks)
    _write(d / f"{name}.e{seq}", err + rest)
    domain = job.label["domain"]
    (d / "nodefile").write_text("".join(f"{h.name}.{domain}\n" for h in job.hosts))
    (d / "hosts").write_text("".join(f"{h.ip}\t{h.name}.{domain} {h.name} {h.alias}\n" for h in job.hosts))
    _kernel_files(job, d, "console", "console", lambda h: h.alias, "log")


def prterun_efa(job: Job, d: Path) -> None:
    rows = _rank_stream(job, lambda r, o: f"[1,{r}]<{'stderr' if o.err else 'stdout'}>: {o.text}")
    _write(d / "mpirun.log", rows + _launcher(job))
    (d / "hostfile").write_text("".join(f"{h.name} slots={job.nproc}\n" for h in job.hosts))
    policy = "node" if job.by_node else f"ppr:{job.nproc}:node"
    (d / "run.sh").write_text("#!/bin/bash\nexport FI_PROVIDER=efa FI_EFA_USE_DEVICE_RDMA=1\n"
                              f"mpirun -np {job.world} --hostfile hostfile --map-by {policy} --tag-output -x "
                              "FI_PROVIDER -x NCCL_DEBUG -x LD_LIBRARY_PATH python train.py --bf16\n")
    _kernel_files(job, d, "dmesg", "raw", lambda h: h.name, "txt")


def pyxis_slurm(job: Job, d: Path) -> None:
    width = len(str(job.world - 1))
    rows = _rank_stream(job, lambda r, o: f"{r:0{width}d}: {o.text}") + _launcher(job)
    _write(d / f"slurm-{job.jid}.out", rows)
    kob = " --kill-on-bad-exit=1" if job.kill_on_bad_exit else ""
    (d / "job.sbatch").write_text(
        f"#!/bin/bash\n#SBATCH --job-name={job.label['pbs_name']}\n#SBATCH --nodes={len(job.hosts)}\n"
        f"#SBATCH --ntasks-per-node={job.nproc}\n#SBATCH --gpus-per-node={job.nproc}\n"
        f"#SBATCH --time={job.label['limit_s'] // 3600:02d}:{job.label['limit_s'] % 3600 // 60:02d}:00\n\n"
        f"srun -l{kob} --container-image=nvcr.io#nvidia/pytorch:24.10-py3 --container-mounts=/lustre:/lustre "
        "--no-container-mount-home python pretrain_gpt.py --tensor-model-parallel-size 8 \"${ARGS[@]}\"\n")
    _kernel_files(job, d, "kern", "syslog", lambda h: h.name, "log")


WRITERS = {"flux": flux, "pbs_hydra": pbs_hydra, "prterun_efa": prterun_efa, "pyxis_slurm": pyxis_slurm}
