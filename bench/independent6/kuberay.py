"""KubeRay RayJob: a Ray Train TorchTrainer submitted by the RayJob's submitter Kubernetes Job.

Files: `submitter.log` (`kubectl logs job/<rayjob>`: `ray job submit` — dashboard/modules/job/cli.py, read: the
`Job '…' submitted successfully` banner, `Tailing logs until the job exits (disable with --no-wait):`, then the
driver's output, then `Job '…' failed` and `Status message: Job entrypoint command failed with exit code 1, last
available logs (truncated to 20,000 chars):` + the log tail, as job_manager / public logs print them; the cli_logger
lines carry `%Y-%m-%d %H:%M:%S,%f LEVEL cli.py:N -- ` in a non-TTY pod, as public KubeRay logs show),
`describe-rayjob.txt` (events: ray-operator rayjob_controller.go `Created RayCluster %s/%s`, `Created Kubernetes Job
%s/%s`, read), `pods.txt` (`kubectl get pods -o wide`: pod ↔ IP ↔ node), `nodes/<gke-node>.log` (journalctl -k).

Worker lines reach the driver prefixed `(RayTrainWorker pid=P, ip=IP) ` (ray _private/worker.py print_worker_logs);
`(TorchTrainer pid=…, ip=…) Started distributed worker processes:` maps `(node_id=…, ip=…, pid=…) world_rank=R,
local_rank=L, node_rank=N` (train/_internal/backend_executor.py, read). The driver surfaces the first worker failure
that reaches it — a RayTaskError for a raised exception, ActorDiedError for a process that died — then tears the
worker group down; TrainingFailedError's text is base_trainer.py's (read); the RayTaskError / ActorDiedError
headers as in public Ray logs."""

from __future__ import annotations

from . import clocks, render
from .render import cut, rank_lines
from .story import Job


def setup(job: Job) -> None:
    """Pod names are the hosts (NCCL's hostname); pod IPs are what Ray prints; GKE nodes hold the kernel logs."""
    rng = job.rng
    job.extra["app"] = app = rng.choice(("llama3-8b-sft", "mistral-ft", "gpt-neox-pt", "qwen2-7b-dpo", "vit-h-pt"))
    cl = f"{app}-raycluster-{''.join(rng.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))}"
    job.extra["cluster"] = cl
    job.extra["host_pid_offset"] = rng.randint(200000, 2000000)
    ips = sorted({f"10.{rng.randint(8, 120)}.{rng.randint(0, 255)}.{rng.randint(2, 250)}"
                  for _ in range(job.nodes * 2)})
    ips = sorted(ips[:job.nodes], key=lambda s: tuple(int(x) for x in s.split(".")))
    for i, h in enumerate(job.hosts):
        h.name = f"{cl}-gpu-group-worker-{''.join(rng.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))}"
        h.ip = ips[i]  # Ray Train orders workers by node IP, so node rank follows the IP order
        h.alias = f"gke-train-a3-pool-{rng.randint(0, 0xffffffff):08x}-{rng.choice('abcdefgh')}{rng.randint(0, 9)}x{i}"
    job.extra["head"] = (f"{cl}-head-{''.join(rng.choice('bcdfghjklmnpqrstvwxz') for _ in range(5))}",
                         f"10.{rng.randint(8, 120)}.{rng.randint(0, 255)}.{rng.randint(2, 250)}")


def _worker_prefix(job: Job, r: int) -> str:
    return f"(RayTrainWorker pid={job.pids[r]}, ip={job.hosts[job.node_of(r)].ip}) "


def _failure(job: Job) -> tuple[float, int]:
    t, r = min((e[0], r) for r, e in job.exits.items())
    return t, r


def write_kuberay(job: Job) -> dict[str, str]:
    rng = job.rng
    render.progress(job, 0, "plain")
    t_fail, first = _failure(job)
    t_det = t_fail + rng.uniform(0.5, 2.0)
    for r in range(job.world):
        if r != first:
            cut(job, r, t_det + 0.2, -15)
    head_ip = job.extra["head"][1]
    sub = job.extra["submission"] = f"{job.extra['app']}-{rng.randint(10000, 99999)}"
    skew = rng.uniform(-1.5, 1.5)
    tp = rng.randint(300, 900)

    def cli(t: float, lvl: str, line: int, msg: str) -> tuple[float, str]:
        return (t, f"{clocks.asctime(t + skew)} {lvl} cli.py:{line} -- {msg}")

    t = job.t0 - 8
    dash = "-" * (len(f"Job '{sub}' submitted successfully") + 0)
    lines = [(t, f"{clocks.asctime(t + skew)} INFO cli.py:39 -- Job submission server address: "
              f"http://{job.extra['cluster']}-head-svc.default.svc.cluster.local:8265"),
             cli(t, "SUCC", 33, dash), cli(t, "SUCC", 34, f"Job '{sub}' submitted successfully"),
             cli(t, "SUCC", 35, dash),
             cli(t, "INFO", 245, "Tailing logs until the job exits (disable with --no-wait):"),
             (t + 3, f"{clocks.asctime(t + 3 + skew)}\tINFO job_manager.py:531 -- Runtime env is setting up."),
             (t + 9, f"{clocks.asctime(t + 9 + skew)}\tINFO worker.py:1520 -- Using address {head_ip}:6379 set in the "
              "environment variable RAY_ADDRESS"),
             (t + 15, f"(RayTrainWorker pid={job.pids[0]}, ip={job.hosts[0].ip}) Setting up process group for: env:// "
              f"[rank=0, world_size={job.world}]"),
             (t + 16, f"(TorchTrainer pid={tp}, ip={head_ip}) Started distributed worker processes: ")]
    for r in range(job.world):
        h = job.hosts[job.node_of(r)]
        nid = h.extra.setdefault("nid", _hex(rng))
        lines.append((t + 16, f"(TorchTrainer pid={tp}, ip={head_ip}) - (node_id={nid}, "
                      f"ip={h.ip}, pid={job.pids[r]}) world_rank={r}, local_rank={job.local(r)}, "
                      f"node_rank={job.node_of(r)}"))
    for r in range(job.world):
        lines += [(tt, _worker_prefix(job, r) + s) for tt, s in rank_lines(job, r)]
    lines.sort(key=lambda x: x[0])
    drv = _driver_error(job, first, tp, head_ip)
    lines += [(t_det + 1, s) for s in drv]
    tail = [s for _, s in lines][-18:]
    bar = "-" * len(f"Job '{sub}' failed")
    t_end = t_det + rng.uniform(2, 6)
    lines += [cli(t_end, "ERRO", 33, bar), cli(t_end, "ERRO", 34, f"Job '{sub}' failed"), cli(t_end, "ERRO", 35, bar),
              cli(t_end, "INFO", 273, "Status message: Job entrypoint command failed with exit code 1, last "
                  "available logs (truncated to 20,000 chars):")]
    lines += [(t_end, s) for s in tail]
    files = {"submitter.log": "\n".join(s for _, s in lines) + "\n",
             "describe-rayjob.txt": _describe(job, sub, t_end), "pods.txt": _pods(job, t_end)}
    if job.kernel_logs:
        for n in range(job.nodes):
            files[f"nodes/{job.hosts[n].alias}.log"] = render.kernel_file(job, n, "journal")
    return files


def _hex(rng: object) -> str:
    import random as _r
    assert isinstance(rng, _r.Random)
    return "".join(rng.choice("0123456789abcdef") for _ in range(56))


def _driver_error(job: Job, r: int, tp: int, head_ip: str) -> list[str]:
    ip = job.hosts[job.node_of(r)].ip
    aid = "".join(job.rng.choice("0123456789abcdef") for _ in range(32))
    if job.exits[r][1] == 1:
        remote = [s.split(": ", 1)[1] if s.startswith(f"[rank{r}]: ") else s for _, s in rank_lines(job, r, ("py",))]
        exc = next((s for s in reversed(remote) if s and not s.startswith((" ", "CUDA kernel", "For debugging",
                                                                             "Compile with"))), "RuntimeError")
        name = exc.split(":", 1)[0].rsplit(".", 1)[-1]
        body = [f"ray.exceptions.RayTaskError({name}): ray::_RayTrainWorker__execute.get_next() (pid={job.pids[r]}, "
                f"ip={ip}, actor_id={aid}, repr=<ray.train._internal.worker_group.RayTrainWorker object at "
                f"0x7f{job.rng.randint(0x10000000, 0xffffffff):08x}>)", *remote]
    else:
        body = ["ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
                "\tclass_name: RayTrainWorker", f"\tactor_id: {aid}", f"\tpid: {job.pids[r]}",
                f"\tnamespace: {job.rng.randint(10**7, 10**8):x}-0000-4000-8000-{job.rng.randint(10**11, 10**12):x}",
                f"\tip: {ip}", "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
                "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are "
                "some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory "
                "usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other "
                "unexpected errors."]
    fit = [f'  File "/home/ray/{job.script}", line 201, in <module>', "    result = trainer.fit()"]
    return (["Traceback (most recent call last):", *fit, *body, "",
             "The above exception was the direct cause of the following exception:", "",
             "Traceback (most recent call last):", *fit,
             "ray.train.base_trainer.TrainingFailedError: The Ray Train run failed. Please inspect the previous error "
             "messages for a cause. After fixing the issue (assuming that the error is not caused by your own "
             "application logic, but rather an error such as OOM), you can restart the run from scratch or continue "
             "this run.", "To continue this run, you can use: `trainer = TorchTrainer.restore(\"/home/ray/ray_results/"
             f"{job.extra['app']}\")`."])


def _describe(job: Job, sub: str, t_end: float) -> str:
    cl = job.extra["cluster"]
    ev = [("Normal", "CreatedRayCluster", t_end - job.t0 + 120, f"Created RayCluster default/{cl}"),
          ("Normal", "CreatedRayJobSubmitter", t_end - job.t0 + 20,
           f"Created Kubernetes Job default/{job.extra['app']}")]
    out = [f"Name:         {job.extra['app']}", "Namespace:    default", "API Version:  ray.io/v1",
           "Kind:         RayJob", "Status:", "  Job Deployment Status:  Failed", "  Job Id:                 " + sub,
           "  Job Status:             FAILED",
           "  Message:                Job entrypoint command failed with exit code 1",
           f"  Ray Cluster Name:       {cl}", "Events:", "  Type    Reason                  Age    From               "
           "Message", "  ----    ------                  ----   ----               -------"]
    for typ, reason, a, msg in ev:
        out.append(f"  {typ:<7} {reason:<23} {clocks.age(a):<6} rayjob-controller  {msg}")
    return "\n".join(out) + "\n"


def _pods(job: Job, t_end: float) -> str:
    head, hip = job.extra["head"]
    rows = [("NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"),
            (head, "1/1", "Running", "0", clocks.age(t_end - job.t0 + 150), hip, "gke-train-cpu-pool-1c2d3e4f-x0q1")]
    for h in job.hosts:
        rows.append((h.name, "1/1", "Running", "0", clocks.age(t_end - job.t0 + 140), h.ip, h.alias))
    w = [max(len(r[i]) for r in rows) + 3 for i in range(7)]
    return "\n".join("".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows) + "\n"
