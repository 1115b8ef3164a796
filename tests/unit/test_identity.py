"""build_identity reads records kind by kind: it must build the map a pass over the records in their order builds
(the reference below is that pass, as it stood before), on random mixes of every kind it reads."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest

from correlator import identity
from correlator.identity import ExitRecord, IdentityMap, build_identity
from correlator.kept import ContextRecord
from correlator.speakers import Who


def _one_pass(records: Sequence[ContextRecord]) -> IdentityMap:
    """The record-by-record loop build_identity replaced, then the same steps after it (the table cells in
    record order, where build_identity gives them kind by kind)."""
    ids = IdentityMap()
    interfaces: defaultdict[str, set[str]] = defaultdict(set)
    comm_size: dict[tuple[str | None, int], int] = {}
    rings, comms, tables = [], [], []
    nodes_named: dict[str, set[str]] = {}  # a file naming several nodes is no one node's (`kubectl get events`)
    for rec in records:
        who, kind = rec.who, rec.kind
        if kind == "nccl_ring":
            rings.append(rec)
        elif kind == "nccl_comm":
            comms.append(rec)
        elif kind.startswith("table_"):
            tables.append(rec)
        bus = rec.fields.get("bus") if kind == "nccl_comm" else None
        if who.host is not None and isinstance(bus, str) and all(ch in "0123456789abcdefABCDEF" for ch in bus):
            ids.rank_of_bus[(who.host, int(bus, 16) >> 12)] = int(rec.fields["rank"])
        if kind == "nccl_comm" and who.pid is not None:
            rank, nranks = int(rec.fields["rank"]), int(rec.fields["nranks"])
            key = (who.host, who.pid)
            if nranks >= comm_size.get(key, 0):
                comm_size[key] = nranks
                if who.host is not None:
                    ids.by_host_pid[(who.host, who.pid)] = rank
                    ids.host_of_rank[rank] = who.host
                ids.by_pid[who.pid] = rank
            ids.world_size = max(ids.world_size or 0, nranks)
        elif kind == "nccl_using" and who.host is not None:
            detail = str(rec.fields.get("detail", ""))
            for m in identity._ADDR.finditer(detail):
                ids.host_of_ip.setdefault(m["ip"], who.host)
            if "OOB" not in detail:
                interfaces[who.host].update(m["name"] for m in identity._IFACE.finditer(detail))
        elif kind == "store_remote":
            ids.store_hosts.append((str(rec.fields["host"]), rec))
        elif kind == "worker_failed":
            ids.exits.append(ExitRecord(None, int(rec.fields["local_rank"]), who.host, int(rec.fields["pid"]),
                                        int(rec.fields["exit_code"]), rec.source, rec.line_no))
        elif kind == "k8s_node":
            nodes_named.setdefault(rec.source, set()).add(str(rec.fields["host"]))
        if who.rank is not None and who.host is not None:
            ids.host_of_rank.setdefault(who.rank, who.host)
    ids.interfaces = dict(interfaces)
    ids.host_of_source.update((src, next(iter(named))) for src, named in nodes_named.items() if len(named) == 1)
    identity._ring_ranks(ids, rings)
    identity._table_exits(ids, tables)  # unchanged: build_identity calls it with the tables of each kind
    identity._device_offsets(ids, comms)
    identity._fill_exit_ranks(ids)
    return ids


def _records(rng: random.Random) -> list[ContextRecord]:
    hosts = [None, "node1", "node2", "node3"]
    speakers = [Who(rng.choice([None, 0, 1, 2, 5]), rng.choice(hosts), rng.choice([None, 11, 12, 13]),
                    rng.choice([None, 0, 1])) for _ in range(8)]
    make: dict[str, Any] = {
        # NCCL's init line, with its bus where the format prints one (nvmlDev ... busId: context.py)
        "nccl_comm": lambda: {"rank": rng.randrange(6), "nranks": rng.choice([2, 8, 16]), "device": rng.randrange(2),
                              **({"bus": b} if (b := rng.choice([None, "1b000", "3d000", "zz", "3e000"])) else {})},
        "nccl_ring": lambda: {"rank": rng.randrange(6)},
        "nccl_using": lambda: {"detail": rng.choice(["eth0:10.0.0.1<0>", "[0]ib0:10.0.1.2<0>", "OOB eth1:10.0.0.9",
                                                      "[1]eth2:10.0.0.3<0>"])},
        "worker_sigterm": lambda: {"pid": rng.choice([11, 12]), "signal": "SIGTERM"},
        "worker_failed": lambda: {"exit_code": rng.choice([1, -9]), "local_rank": rng.randrange(2),
                                  "pid": rng.choice([11, 12, 13])},
        "k8s_node": lambda: {"host": rng.choice(hosts[1:])},
        "store_remote": lambda: {"host": rng.choice(hosts[1:]), "port": 29500},
        "table_rank": lambda: {"rank": rng.randrange(6), "local_rank": rng.randrange(2)},
        "table_host": lambda: {"host": rng.choice(hosts[1:])},
        "table_exit": lambda: {"exit_code": rng.choice([1, -9]), "pid": rng.choice([11, 12, 13])},
        "errorish": lambda: {},
        "pg_status": lambda: {"enqueued": 3, "completed": 2},
    }
    kinds = list(make)
    out = []
    for line_no in range(rng.randrange(1, 200)):
        kind = rng.choice(kinds)
        out.append(ContextRecord(kind, make[kind](), rng.choice(["a.log", "b.log", "c.log"]), line_no,
                                 rng.choice(speakers), None))
    return out


@pytest.mark.parametrize("seed", range(60))
def test_reading_kind_by_kind_builds_the_map_one_pass_builds(seed: int) -> None:
    records = _records(random.Random(seed))
    assert vars(build_identity(records)) == vars(_one_pass(records))


def test_a_peer_named_by_a_dns_name_carrying_an_address_is_the_host_advertising_it() -> None:
    """NCCL names a peer by getnameinfo's name (src/misc/socket.cc, numericHostForm=0): on EC2
    ip-10-0-0-2.ec2.internal, the host whose `Bootstrap : Using eth0:10.0.0.2<0>` line advertises 10.0.0.2,
    whatever the logs call that host."""
    from correlator.identity import IdentityMap

    ids = IdentityMap(host_of_ip={"10.0.0.2": "gpu-st-p4d-2"})
    assert ids.host_of("ip-10-0-0-2.ec2.internal") == "gpu-st-p4d-2"
    assert ids.host_of("ip-10-0-0-9.ec2.internal") is None
