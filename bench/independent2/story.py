"""A failed job's story: what each rank, kernel and scheduler printed, when each rank exited, and its label.

collateral() plays out what the healthy ranks print once some ranks are gone: ring neighbours see the dead
peer's socket close (named by address only), the rest hit the collective watchdog timeout ten minutes later.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import lines as L
from .topo import Ev, Topo

TIMEOUT_S = 600.0


@dataclass
class Story:
    events: list[Ev] = field(default_factory=list)
    exits: dict[int, tuple[float, int]] = field(default_factory=dict)  # rank -> (t, rc); rc < 0 is -signal
    failure_class: str = ""
    rank: int | None = None
    host: int | None = None  # index into topo.hosts
    evidence: str = ""
    root_cause: str = ""
    present: bool = True
    end: float = 0.0  # when the job was over
    pod_state: dict[int, tuple[str, int]] = field(default_factory=dict)  # k8s: rank -> (reason, exit code)
    files: dict[str, str] = field(default_factory=dict)  # extra files a user collected (name -> text)

    def say(self, t: float, rank: int, text: str, topo: Topo) -> None:
        self.events.append(Ev(t, "rank", text, rank=rank, host=topo.node(rank)))

    def kern(self, t: float, host: int, text: str) -> None:
        self.events.append(Ev(t, "kernel", text, host=host))

    def sched(self, t: float, text: str, host: int | None = None) -> None:
        self.events.append(Ev(t, "sched", text, host=host))

    def exit(self, rank: int, t: float, rc: int) -> None:
        if rank not in self.exits or self.exits[rank][0] > t:
            self.exits[rank] = (t, rc)
        self.end = max(self.end, t)


def prelude(topo: Topo, st: Story, fw: str, megatron: bool) -> float:
    """Start-up and training chatter; returns the time training broke."""
    rng = topo.rng
    for r in range(topo.world):
        if fw == "torch" and topo.nccl_info:
            st.say(rng.uniform(8, 20), r, L.nccl_init(topo, r), topo)
    t_fail = rng.uniform(400, 6000)
    if not megatron and fw == "torch":  # the training script's own progress print on rank 0
        step, t = 0, rng.uniform(30, 90)
        while t < t_fail - 5:
            step += 50
            st.say(t, 0, f"[@PYTS@] step {step} | loss {2.2 + 6.0 / (1 + step / 500):.4f} | lr 3.00e-04 | "
                   f"{rng.uniform(9e4, 1.1e5):.0f} tok/s", topo)
            t += rng.uniform(60, 600)
    if megatron:
        # NVIDIA/Megatron-LM megatron/training/training.py training_log: printed by the last rank only.
        last = topo.world - 1
        it, t = 0, 60.0
        while t < t_fail - 5:
            it += 10
            loss = 8.0 / (1 + it / 400) + rng.uniform(-0.05, 0.05)
            st.say(t, last, f" [@PYTS@] iteration {it:8d}/  500000 | consumed samples: {it * 512:12d} | elapsed time "
                   f"per iteration (ms): {rng.uniform(900, 1100):.1f} | learning rate: 2.999E-04 | global batch size: "
                   f"  512 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {rng.uniform(0.2, 2):.3f} | number of "
                   "skipped iterations:   0 | number of nan iterations:   0 |", topo)
            t += rng.uniform(30, 300)
    return t_fail


def neighbours(topo: Topo, dead: set[int]) -> list[tuple[int, int]]:
    """(survivor, dead peer) pairs along the NCCL ring (rank order) that cross from a live to a dead rank."""
    out = []
    for d in sorted(dead):
        for r in ((d - 1) % topo.world, (d + 1) % topo.world):
            if r not in dead and r != d:
                out.append((r, d))
    return out


def collateral(topo: Topo, st: Story, dead: set[int], t_fail: float, fw: str, silent: set[int] | None = None) -> None:
    """What the healthy ranks print and how they exit after the ranks in `dead` stopped at t_fail.

    Ranks in `silent` neither print nor time out (a hung rank); they are SIGTERMed by the launcher at the end.
    """
    rng = topo.rng
    silent = silent or set()
    near: dict[int, int] = {}
    for r, d in neighbours(topo, dead | silent):
        if d in dead:
            near.setdefault(r, d)
    short = topo.world > 64
    for r in range(topo.world):
        if r in dead or r in silent:
            continue
        if r in near:
            d = near[r]
            t = t_fail + rng.uniform(0.05, 3.0)
            warn = L.conn_closed(topo, r, topo.ips[topo.node(d)], rng.randint(30000, 60000))
            if fw == "horovod":
                if topo.nccl_info:
                    st.say(t, r, warn, topo)
                # horovod/horovod horovod/common/ops/nccl_operations.cc nccl_context error + common/exceptions.py
                st.say(t + 0.01, r, "horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: remote "
                       "process exited or there was a network error", topo)
                st.exit(r, t + rng.uniform(0.5, 2), 1)
            elif fw == "torch":
                if topo.nccl_info:
                    st.say(t, r, warn, topo)
                st.say(t + 0.01, r, L.remote_error(topo, r, warn), topo)
                st.exit(r, t + rng.uniform(0.5, 2), -6)
            else:
                st.say(t, r, "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: external/xla/xla/service/gpu/nccl_api.cc:"
                       "580: NCCL operation ncclGroupEnd() failed: remote process exited or there was a network error. "
                       "Last NCCL warning(error) log entry (may be unrelated) '"
                       + warn.split(" NCCL WARN ", 1)[1] + "'.", topo)
                st.exit(r, t + 1, 1)
            continue
        t = t_fail + TIMEOUT_S + rng.uniform(0.0, 4.0)
        if fw == "horovod":
            # horovod/horovod horovod/common/operations.cc SHUT_DOWN_ERROR
            t = t_fail + (rng.uniform(2, 8) if dead else TIMEOUT_S + rng.uniform(0, 3))
            st.say(t, r, "horovod.common.exceptions.HorovodInternalError: Horovod has been shut down. This was caused "
                   "by an exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor "
                   "after one of the ranks finished execution. If the shutdown was caused by an exception, you should "
                   "see the exception in the log before the first shutdown message.", topo)
            st.exit(r, t + rng.uniform(0.2, 1), 1)
        elif fw == "torch":
            st.say(t, r, L.watchdog_timeout(topo, r, topo.seq, int((t - t_fail) * 1000), short), topo)
            st.exit(r, t + rng.uniform(0.2, 3), -6)
        else:
            # openxla/xla xla/pjrt/distributed/client.h + tsl coordination_service.cc heartbeat check (absl log form)
            t = t_fail + rng.uniform(100, 110)
            tasks = "\n".join(f"/job:jax_worker/replica:0/task:{d}" for d in sorted(dead | silent))
            st.say(t, r, f"F@GLOG@ {topo.pids[r] % 100000:6d} client.h:77] Terminating process because the JAX "
                   "distributed service detected fatal errors. This most likely indicates that another task died; see "
                   "the other task logs for more details. Disable Python buffering, i.e. `python -u`, to be sure to "
                   "see all the previous output. absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped "
                   f"sending heartbeats):\n{tasks}\nThe tasks have crashed. Check the task logs for an earlier error "
                   "to debug further.", topo)
            st.exit(r, t + 0.5, -6)
    if fw == "horovod" and silent and not dead:
        rep = min(set(range(topo.world)) - silent)
        missing = "\n".join(f"{m}: [DistributedAdamW.Allreduce.grad_transformer.h.{m % 24}.mlp.c_fc.weight_0]"
                             for m in sorted(silent))
        for k in range(1, 4):  # horovod/horovod horovod/common/stall_inspector.cc CheckForStalledTensors
            st.say(t_fail + 60 * k, rep, f"[@ISO@.{k * 137:06d}: W /tmp/pip-req-build/horovod/common/stall_inspector."
                   "cc:107] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of "
                   "ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that "
                   "different ranks are trying to submit different tensors or that only subset of ranks is submitting "
                   f"tensors, which will cause deadlock. \nMissing ranks:\n{missing}", topo)
    end = max([t for t, _ in st.exits.values()] + [t_fail + 1])
    for r in silent:
        st.exit(r, end + rng.uniform(1, 5), -15)


def fw_of(caps: set[str]) -> str:
    return "jax" if "jax" in caps else "horovod" if "horovod" in caps else "torch"


def start(topo: Topo, caps: set[str]) -> tuple[Story, float, int]:
    st = Story()
    t = prelude(topo, st, fw_of(caps), "megatron" in caps)
    return st, t, topo.rng.randrange(topo.world)
