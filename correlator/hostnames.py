"""One host, many names: the names a job's logs give one machine, and the one a diagnosis reports. Pure.

- NCCL's line header prints the host name cut at its first dot (NVIDIA/nccl src/debug.cc: getHostName(hostname,
  1024, '.')), torchrun's failure table the fully qualified one (socket.getfqdn()), syslog and pdsh whatever the
  host list or the machine says: `node003`, `node003.hpc.internal`. A Kubernetes pod's DNS name is its hostname,
  then its subdomain (the headless Service), namespace and `svc.<cluster domain>`
  (`worker-5.job.default.svc.cluster.local`; a JobSet pod `job-worker-0-3.job`): the first label is the pod's
  hostname, the one NCCL prints. So names whose first DNS label is the same (case aside) are one host.
- An IPv4 address is the host whose NCCL `Bootstrap : Using eth0:10.1.2.3<0>` / `NET/Socket : Using` line
  advertises it (when only that host does: containers on a bridge network may all say 172.17.0.2), and AWS's
  private DNS names carry their address (`ip-10-1-2-3.ec2.internal`, `ip-10-1-2-3.us-west-2.compute.internal`:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-naming.html), and so do a pod's A records
  (`10-244-0-8.default.pod.cluster.local`: kubernetes/website, content/en/docs/concepts/services-networking/
  dns-pod-service.md).
A host is reported as the scheduler names it: the scheduler's own name where the job's metadata gives one, else
a short name (Slurm's node names, a pod's hostname), else the most specific name seen (an FQDN before an address).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
# AWS's ip-10-1-2-3.ec2.internal, and Kubernetes' pod A records 10-244-0-8.<namespace>.pod.<cluster domain> (and a
# Service endpoint's 10-244-0-8.<service>.<namespace>.svc.<cluster domain>): the address, dashed, as first label
_DASHED_ADDRESS = re.compile(r"^(?:ip-)?(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})(?:\.|$)", re.I)
_NOT_A_HOST_ADDRESS = ("127.", "0.0.0.0", "169.254.")  # loopback, unspecified, link-local: every host has them


def is_address(name: str) -> bool:
    return bool(_IPV4.match(name))


def address_in_name(name: str) -> str | None:
    """The IPv4 address a DNS name carries as its first label (AWS's ip-10-1-2-3.ec2.internal, a pod's
    10-244-0-8.<namespace>.pod.cluster.local), else None."""
    m = _DASHED_ADDRESS.match(name)
    return ".".join(m.groups()) if m else None


class _Groups:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def aliases(names: Iterable[str], advertised: Iterable[tuple[str, str]] = (),
            scheduler_names: Iterable[str] = (), same: Iterable[tuple[str, str]] = (),
            folder_names: Iterable[str] = (), file_names: Iterable[str] = (),
            canonical_names: Iterable[str] = ()) -> dict[str, str]:
    """Every name seen -> the name to report its host by. ``names`` in the order they were seen (ties go to the
    first); ``advertised``: (host, address) pairs from NCCL's interface lines; ``scheduler_names``: the hosts the
    job's metadata names (its rank -> host map); ``same``: pairs of names known to be one host (a node's folder
    and the host its files' lines name; the scheduler's host of a rank and the one its lines name);
    ``folder_names``: hosts named by the folders logs were collected into, preferred after the scheduler's;
    ``file_names``: hosts named by a log's file name alone, whose lines name another: reported last;
    ``canonical_names``: a machine's own name where another names it too, preferred as a folder's: a hosts file's
    first name (correlator/hosts_file.py), a pod's full name beside its cut hostname (correlator/pod_hostnames.py)."""
    same, canonical_names = list(same), tuple(canonical_names)
    order: dict[str, int] = {}
    for name in (*scheduler_names, *folder_names, *names, *(n for pair in same for n in pair), *canonical_names):
        order.setdefault(name, len(order))
    groups = _Groups()
    by_label: dict[str, str] = {}
    for name in list(order):  # an AWS name adds its address
        if is_address(name):
            groups.find(name)
            continue
        label = name.lstrip(".").split(".")[0].lower()  # an elided name ("...-48") by what is left of it
        groups.join(name, by_label.setdefault(label, name))
        if address := address_in_name(name):
            order.setdefault(address, len(order))
            groups.join(address, name)
    owners: dict[str, set[str]] = {}
    for host, address in advertised:
        if not address.startswith(_NOT_A_HOST_ADDRESS):
            owners.setdefault(address, set()).add(groups.find(host))
    for address, hosts in owners.items():
        if len(hosts) == 1 and address in order:
            groups.join(address, next(iter(hosts)))
    for a, b in same:
        groups.join(a, b)
    members: dict[str, list[str]] = {}
    for name in order:
        members.setdefault(groups.find(name), []).append(name)
    preferred = {**dict.fromkeys(file_names, 5), **dict.fromkeys(canonical_names, 1), **dict.fromkeys(folder_names, 1),
                 **dict.fromkeys(scheduler_names, 0)}
    out: dict[str, str] = {}
    for group in members.values():
        best = min(group, key=lambda n: _rank(n, preferred, order))
        out.update(dict.fromkeys(group, best))
    return out


def _rank(name: str, preferred: Mapping[str, int], order: Mapping[str, int]) -> tuple[int, int, int]:
    """How a name ranks as the one to report (lowest first): the scheduler's, a folder's, a short name, the most
    dotted name, an address, a file's name; then the first seen."""
    if name in preferred:
        kind = preferred[name]
    elif is_address(name):
        kind = 4
    else:
        kind = 2 if "." not in name else 3
    return kind, -name.count(".") if kind == 3 else 0, order[name]

