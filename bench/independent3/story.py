"""One attempt of one job as true-time events: what each rank printed, what each kernel logged, who died when.

Kinds (kinds.py) place the fault; `Story.finalize` plays out what the rest of the job does about it:
the launcher's reaction (a torchrun / DeepSpeed agent SIGTERMs the node's other workers; srun with
--kill-on-bad-exit kills the step), NCCL noticing closed sockets or dead IB peers on the hosts next to a dead
one in the ring, and the ProcessGroupNCCL watchdog timing out everywhere else. Layouts (layouts.py) render it.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from . import apps, lines
from .topo import Host


@dataclass
class Spec:
    job: str
    layout: str
    kind: str
    nodes: int
    nproc: int
    launcher: str  # agent (torchrun / accelerate), ds (deepspeed launch.py), srun (one task per GPU)
    kill_on_bad_exit: bool
    new_torch: bool
    nccl_debug: bool
    nccl_ver: str
    ib: bool
    iface: str
    timeout_s: int
    fr: bool  # flight recorder dumps on timeout (TORCH_NCCL_DUMP_ON_TIMEOUT)
    app: str
    kernel_collected: bool
    poll: float  # agent monitor interval
    libdir: str
    script: str
    max_restarts: int = 0
    elastic_info: bool = False

    @property
    def world(self) -> int:
        return self.nodes * self.nproc


@dataclass
class Death:
    t: float
    code: int | None  # >0 exit status, <0 signal, None = vanished with its host
    why: str


class Story:
    def __init__(self, rng: random.Random, spec: Spec, hosts: list[Host], t0: float, attempt: int = 0):
        self.rng, self.spec, self.hosts, self.t0, self.attempt = rng, spec, hosts, t0, attempt
        self.world = spec.world
        order = sorted(hosts, key=lambda h: h.node_rank)
        self.host_of = [order[r // spec.nproc].index for r in range(self.world)]
        self.out: dict[int, list[tuple[float, str, str]]] = {r: [] for r in range(self.world)}
        self.kern: dict[int, list[tuple[float, str]]] = {h.index: [] for h in hosts}
        self.deaths: dict[int, Death] = {}
        self.pyerr: dict[int, tuple[float, str]] = {}  # rank -> (time, traceback) for error.json / tables
        self.stuck_nocoll: set[int] = set()  # hung outside a collective: its watchdog never fires
        self.stuck_dstate: set[int] = set()  # ignores SIGTERM
        self.dead_hosts: dict[int, float] = {}
        self.external: tuple[float, str] | None = None
        self.sched: list[tuple[float, str, object]] = []  # (t, what, data) scheduler facts for layouts
        self.fr_dump: dict[int, dict] = {}
        self.agent_fail: dict[int, float] = {}  # host -> detection time of its group's failure
        self.label: dict = {}
        self.tids = {r: rng.randint(1000, 99999) for r in range(self.world)}
        self._pending: list[tuple[float, int, int, int | None, str]] = []
        self._n = 0
        self._notified: set[int] = set()
        self.init_phase = False
        self.app = apps.make(spec.app, self)
        self.t_train = t0 + rng.uniform(40, 150)
        self.t_fault = self.t_train + (rng.uniform(400, 6000) if attempt == 0 else rng.uniform(60, 600))
        self.iter_s = rng.uniform(0.8, 3.5)
        self.seq = int((self.t_fault - self.t_train) / self.iter_s) * rng.choice([2, 3, 4]) + rng.randint(3, 40)
        self.op = rng.choice(["ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "ALLREDUCE", "BROADCAST"])
        self.numel = rng.choice([1, 4096, 262144000, 131072000, 52428800, 33554432])
        self.t_coll = self.t_fault
        self.app.startup()
        self.app.progress(self.t_fault)

    # ---- helpers
    def host(self, r: int) -> Host:
        return self.hosts[self.host_of[r]]

    def local(self, r: int) -> int:
        return r % self.spec.nproc

    def pid(self, r: int) -> int:
        return self.host(r).pids[self.local(r)] + 977 * self.attempt

    def bus(self, r: int) -> str:
        return self.host(r).buses[self.local(r)]

    def nccl_host(self, r: int) -> str:
        h = self.host(r)
        return h.pod or h.short

    def ranks_on(self, h: int) -> list[int]:
        return [r for r in range(self.world) if self.host_of[r] == h]

    def say(self, r: int, t: float, text: str, stream: str = "err") -> None:
        self.out[r].append((t, stream, text))

    def say_c10(self, r: int, t: float, fn, *args) -> None:
        """Emit a c10-logged message: stamped with the rank's host clock, ordered by true time."""
        sk = self.host(r).skew
        res = fn(self.spec.new_torch, r, t + sk, *args)
        if isinstance(res, str):
            self.say(r, t, res)
        else:
            for tt, text in res:
                self.say(r, tt - sk, text)

    def truncate_after(self, t: float) -> None:
        """The job never got past time t (a failure at start-up): drop what the story had printed after it."""
        for r in self.out:
            self.out[r] = [e for e in self.out[r] if e[0] <= t]
        self.t_coll = t
        self.init_phase = t < self.t_train

    def kernel(self, h: int, t: float, text: str) -> None:
        self.kern[h].append((t, text))

    def nccl_warn(self, r: int, t: float, where: str, msg: str) -> None:
        if self.spec.nccl_debug:
            self.say(r, t, lines.nccl(self.nccl_host(r), self.pid(r), self.tids[r], self.local(r), msg, where), "out")

    # ---- fault placement API for kinds
    def kill(self, r: int, t: float, code: int, why: str = "fault") -> None:
        self._push(t, r, code, why)

    def hang(self, ranks: list[int], t: float, in_collective: bool, dstate: bool = False) -> None:
        for r in ranks:
            if not in_collective:
                self.stuck_nocoll.add(r)
            if dstate:
                self.stuck_dstate.add(r)
        self.t_coll = t

    def host_down(self, h: int, t: float) -> None:
        self.dead_hosts[h] = t
        for r in self.ranks_on(h):
            self.deaths[r] = Death(t, None, "host_down")
        self._notify_peers(h, t, vanished=True)

    def terminate_all(self, t: float, reason: str) -> None:
        self.external = (t, reason)
        for r in range(self.world):
            self._push(t + self.rng.uniform(0.01, 0.4), r, -15, "external")

    def _push(self, t: float, r: int, code: int | None, why: str) -> None:
        self._n += 1
        heapq.heappush(self._pending, (t, self._n, r, code, why))

    # ---- collateral
    def _notify_peers(self, h: int, t: float, vanished: bool) -> None:
        """NCCL ring: the ranks on the neighbouring hosts that talk to host h over the network notice."""
        if self.spec.nodes < 2:
            return
        rs = self.ranks_on(h)
        first, last = min(rs), max(rs)
        dead = self.hosts[h]
        for p, _peer_side in (((first - 1) % self.world, first), ((last + 1) % self.world, last)):
            if self.host_of[p] == h or p in self.deaths or p in self.stuck_nocoll:
                continue
            if self.rng.random() > (0.85 if vanished else 0.6):
                continue
            port = self.rng.randint(33000, 61000)
            if vanished or (self.spec.ib and self.rng.random() < 0.5):
                delay = self.rng.uniform(12, 45) if vanished else self.rng.uniform(0.5, 6)
                me = self.host(p)
                msg = lines.ib_completion(dead.ip, port, 12, me.ip, dead.ip, 129)
                where = "transport/net_ib.cc:1696"
            else:
                delay = self.rng.uniform(0.2, 3)
                msg = (lines.socket_closed if self.rng.random() < 0.6 else lines.socket_reset)(dead.ip, port)
                where = "misc/socket.cc:47" if "closed" in msg else "misc/socket.cc:580"
            self._push(t + delay, p, -6, "remote|" + where + "|" + msg)

    def finalize(self) -> None:
        sp, rng = self.spec, self.rng
        if self.external is None:
            for r in range(self.world):
                if r in self.stuck_nocoll or r in self.deaths:
                    continue
                self._push(self.t_coll + sp.timeout_s + rng.uniform(0.05, 2.5), r, -6, "watchdog")
        first_wd = None
        srun_kill = None
        while self._pending:
            t, _, r, code, why = heapq.heappop(self._pending)
            if r in self.deaths:
                continue
            h = self.host_of[r]
            if h in self.dead_hosts and t >= self.dead_hosts[h]:
                continue
            if why == "watchdog" and self.init_phase:
                self._store_timeout(r, t)
                code = 1
            elif why == "watchdog":
                self._watchdog(r, t)
                if first_wd is None:
                    first_wd = (t, r)
                    if sp.fr:
                        self._fr_dumps(t, r)
            elif why.startswith("remote|"):
                _, where, msg = why.split("|", 2)
                self.nccl_warn(r, t - 0.01, where, msg)
                self.say_c10(r, t, lines.watchdog_exception, lines.nccl_remote_error(sp.nccl_ver, msg), sp.libdir)
            elif why in ("term", "external", "srun"):
                if r in self.stuck_dstate and code == -15:
                    self._push(t + 30 + rng.uniform(0, 1), r, -9, "term")  # SIGKILL after the agent's wait
                    continue
                self.app.on_sigterm(r, t)
            self.deaths[r] = Death(t, code, why)
            # launcher reaction
            if sp.launcher in ("agent", "ds") and h not in self.agent_fail and why != "external":
                det = t + (sp.poll if sp.launcher == "agent" else 1.0) * rng.uniform(0.2, 1.0)
                self.agent_fail[h] = det
                for s in self.ranks_on(h):
                    if s not in self.deaths:
                        self._push(det + rng.uniform(0.01, 0.3), s, -15, "term")
            if sp.launcher == "srun" and sp.kill_on_bad_exit and srun_kill is None and code != 0 and why != "external":
                srun_kill = t + rng.uniform(0.5, 2.0)
                self.sched.append((srun_kill, "step_abort", r))
                for s in range(self.world):
                    if s not in self.deaths:
                        self._push(srun_kill + rng.uniform(0, 0.5), s, -15, "srun")
            if why != "external":
                self._notify_host_once(h, t)
        # whoever is still alive (a straggler nobody killed): the step ends at the time limit / by hand
        alive = [r for r in range(self.world) if r not in self.deaths]
        if alive:
            t_end = max(d.t for d in self.deaths.values()) + rng.uniform(600, 3600)
            self.sched.append((t_end, "time_limit", None))
            for r in alive:
                self.deaths[r] = Death(t_end + rng.uniform(0, 0.3), -15, "time_limit")

    def _notify_host_once(self, h: int, t: float) -> None:
        if h in self._notified:
            return
        self._notified.add(h)
        self._notify_peers(h, t, vanished=False)

    def _store_timeout(self, r: int, t: float) -> None:
        """Start-up never completed: init_process_group's store barrier times out instead of the NCCL watchdog
        (torch/csrc/distributed/c10d/TCPStore.cpp: `Timed out after {} seconds waiting for clients. {}/{} clients
        joined.` on the store host, `wait timeout after {}ms, keys: {}` on clients)."""
        s = self.spec.timeout_s
        if r == 0:
            msg = (
                f"torch.distributed.DistStoreError: Timed out after {s + 1} seconds waiting for clients. "
                f"{self.world - 1}/{self.world} clients joined."
            )
        else:
            msg = f"torch.distributed.DistStoreError: wait timeout after {s * 1000}ms, keys: /default_pg/0//cuda//0"
        py = "/usr/local/lib/python3.10/dist-packages/torch/distributed"
        tb = lines.traceback(
            [
                *self.app.frames(r, "init")[:-1],
                (f"{py}/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
                (
                    f"{py}/distributed_c10d.py",
                    1520,
                    "init_process_group",
                    "store, rank, world_size = next(rendezvous_iterator)",
                ),
                (f"{py}/rendezvous.py", 269, "_env_rendezvous_handler", "store = _create_c10d_store("),
            ],
            msg,
        )
        self.say(r, t, tb)
        self.pyerr[r] = (t, tb)

    def _watchdog(self, r: int, t: float) -> None:
        sp = self.spec
        enq = self.seq
        done = self.seq - 1
        self.say_c10(
            r, t, lines.watchdog_timeout, self.seq, self.op, self.numel, sp.timeout_s * 1000, enq, done, sp.libdir
        )

    def _fr_dumps(self, t: float, src: int) -> None:
        sp = self.spec
        for r in range(self.world):
            if r in self.deaths and r != src:
                continue
            h = self.host_of[r]
            if h in self.dead_hosts:
                continue
            tt = t + (0 if r == src else self.rng.uniform(0.05, 1.5))
            behind = r in self.stuck_nocoll
            if r != src and sp.new_torch:
                self.say_c10(r, tt, lines.dump_signal, src, self.seq - 1 if behind else self.seq, self.seq - 1)
            path = f"/shared/fr/nccl_trace_rank_{r}"
            self.say_c10(r, tt + 0.3, lines.fr_dump_written, path)
            self.fr_dump[r] = {
                "t": tt,
                "last_enq": self.seq - 1 if behind else self.seq,
                "last_done": self.seq - 1,
                "in_coll": not behind,
            }


@dataclass
class Label:
    failure_class: str
    rank: int | None
    host: str | None
    evidence: str
    root_cause: str
    extra: dict = field(default_factory=dict)
