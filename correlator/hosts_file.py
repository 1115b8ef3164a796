"""Files that list a job's hosts: which names are one machine, and in which order ranks fill them. Pure.

- An /etc/hosts excerpt (hosts(5): "IP_address canonical_hostname [aliases...]", one machine a line) names each
  node every way the system knows it. On HPE Cray EX systems a node has a location name, its xname
  (x3076c0s3b0n1: cabinet, chassis, slot, board, node), a node id, its nid (nid001901, the name the console and
  the kernel log give it), and its high-speed network FQDN; the hosts file lists them on one line, while PBS's
  $PBS_NODEFILE names the xname's FQDN and the console log the nid. The names of one line are one host, reported
  by the line's first (canonical) name where nothing names it for the scheduler. Read from a source whose file
  name says it is a hosts file (hosts, etc_hosts.txt, hosts.txt): a log line of an address and two names is no
  such claim.
- A hostfile's "host slots=N" line (Open MPI's and DeepSpeed's hostfile): the order ranks fill the hosts in
  (correlator/hostfile.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from correlator.kept import ContextRecord

HOSTS_FILE_PATTERNS: dict[str, str] = {
    "etc_hosts": r"^[ \t]*(?P<ip>\d{1,3}(?:\.\d{1,3}){3})[ \t]+(?P<names>[A-Za-z][\w.-]{0,252}"
    r"(?:[ \t]+[A-Za-z][\w.-]{0,252}){1,8})[ \t]*(?:#[^\n]*)?$",
    "hostfile_slots": r"^[ \t]*(?P<host>[A-Za-z0-9][\w.-]*)[ \t]+slots[ \t]*=[ \t]*(?P<slots>\d{1,4})"
    r"(?:[ \t]+max_slots[ \t]*=[ \t]*\d+)?[ \t]*(?:#[^\n]*)?$",
}
HOSTS_FILE_PREFILTERS: dict[str, str] = {"hostfile_slots": r"[ \t]slots[ \t]*=[ \t]*\d"}
HOSTS_FILE_EXAMPLES: dict[str, tuple[str, ...]] = {
    "etc_hosts": ("10.140.12.68\tx3076c0s3b0n1.hsn.cluster.local x3076c0s3b0n1 nid001901",
                  "10.0.3.17  gpu-node-17.cluster.internal gpu-node-17"),
    "hostfile_slots": ("trn-e-38 slots=2", "worker-1 slots=8 max_slots=8"),
}
_LOOPBACK = ("127.", "0.0.0.0")  # localhost lines: every machine's own
_NOT_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def _is_hosts_file(source: str) -> bool:
    name = source.rsplit("/", 1)[-1].lower()
    return name == "hosts" or name.startswith(("hosts.", "etc_hosts", "etc-hosts")) or name.endswith("_hosts.txt")


def hosts_file_names(of_kind: Mapping[str, Sequence[ContextRecord]]) -> tuple[list[tuple[str, str]], list[str]]:
    """(pairs of names one hosts-file line gives one machine, its address among them; each line's canonical name,
    cut at its first dot as NCCL and Slurm print a host)."""
    pairs: list[tuple[str, str]] = []
    canonical: list[str] = []
    for rec in of_kind.get("etc_hosts", ()):
        if str(rec.fields["ip"]).startswith(_LOOPBACK) or not _is_hosts_file(rec.source):
            continue
        names = [n for n in str(rec.fields["names"]).split() if n.lower() not in _NOT_NAMES]
        if len(names) < 2:
            continue
        canonical.append(names[0].split(".")[0])  # its host name, as a short name is reported
        pairs.extend((names[0], other) for other in (*names[1:], str(rec.fields["ip"])))
    return pairs, canonical
