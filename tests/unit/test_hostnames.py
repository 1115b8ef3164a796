"""One host, many names (correlator.hostnames): grouped as the formats that print them say, reported as the
scheduler names the node. Formats: NCCL's header cuts the host name at its first dot (NVIDIA/nccl src/debug.cc,
getHostName(hostname, 1024, '.')); a Kubernetes pod's DNS name is hostname.subdomain.namespace.svc.<cluster
domain> (kubernetes/website content/en/docs/concepts/services-networking/dns-pod-service.md), a JobSet pod's
hostname <jobset>-<replicated job>-<job index>-<pod index> under the JobSet's subdomain; AWS private DNS names
are ip-<address with dashes>.<region>.compute.internal (ec2.internal in us-east-1)."""

from __future__ import annotations

from correlator.hostnames import aliases


def test_fqdns_and_short_names_are_one_host_reported_short() -> None:
    got = aliases(["node003.hpc.internal", "node003", "node004.hpc.internal"])
    assert got == {"node003.hpc.internal": "node003", "node003": "node003",
                   "node004.hpc.internal": "node004.hpc.internal"}


def test_kubernetes_pod_dns_names_are_the_pods_hostname() -> None:
    got = aliases(["worker-5.job.default.svc.cluster.local", "worker-5", "job-worker-0-3.job", "job-worker-0-3"])
    assert got["worker-5.job.default.svc.cluster.local"] == "worker-5"
    assert got["job-worker-0-3.job"] == "job-worker-0-3"


def test_an_aws_private_dns_name_carries_its_address() -> None:
    got = aliases(["ip-10-1-2-3.ec2.internal", "10.1.2.3", "ip-10-1-2-4.us-west-2.compute.internal"])
    assert got["10.1.2.3"] == "ip-10-1-2-3.ec2.internal"
    assert got["ip-10-1-2-4.us-west-2.compute.internal"] == "ip-10-1-2-4.us-west-2.compute.internal"


def test_an_address_joins_the_one_host_that_advertises_it() -> None:
    got = aliases(["gpu-a7", "10.1.2.3", "172.17.0.2", "gpu-a8"],
                  advertised=[("gpu-a7", "10.1.2.3"), ("gpu-a7", "172.17.0.2"), ("gpu-a8", "172.17.0.2")])
    assert got["10.1.2.3"] == "gpu-a7"
    assert got["172.17.0.2"] == "172.17.0.2"  # a bridge address every container has names none of them


def test_the_schedulers_name_wins() -> None:
    assert aliases(["node003.hpc.internal"], scheduler_names=["NODE003"])["node003.hpc.internal"] == "NODE003"


def test_names_of_different_hosts_stay_apart() -> None:
    got = aliases(["node1", "node10", "10.0.0.1", "10.0.0.10"])
    assert got == {n: n for n in ("node1", "node10", "10.0.0.1", "10.0.0.10")}


def test_a_pods_dashed_address_record_is_its_address() -> None:
    got = aliases(["trainjob-worker-6", "10-244-0-8.trainjob.default.svc.cluster.local", "10.244.0.8"],
                  advertised=[("trainjob-worker-6", "10.244.0.8")])
    assert got["10-244-0-8.trainjob.default.svc.cluster.local"] == "trainjob-worker-6"


def test_a_name_carrying_its_address_gives_the_address() -> None:
    """AWS's private DNS names (ip-10-1-2-3.ec2.internal, docs.aws.amazon.com ec2-instance-naming) and a pod's A
    record (10-244-0-8.default.pod.cluster.local, kubernetes/website dns-pod-service.md) carry the address; a
    node name with digits and dashes does not."""
    from correlator.hostnames import address_in_name

    assert address_in_name("ip-10-1-2-3.ec2.internal") == "10.1.2.3"
    assert address_in_name("ip-10-1-2-3") == "10.1.2.3"
    assert address_in_name("10-244-0-8.trainjob.default.svc.cluster.local") == "10.244.0.8"
    assert address_in_name("gpu-st-p4d24xlarge-13") is None
    assert address_in_name("node003.hpc.internal") is None
