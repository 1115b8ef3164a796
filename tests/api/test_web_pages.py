"""The web pages as a browser receives them: filters, the incident page's timeline, escaping, the catalog."""

from __future__ import annotations

import re
from pathlib import Path

from httpx import Client

from schemas.incident import Incident


def _page(client: Client, url: str, status: int = 200) -> str:
    r = client.get(url)
    assert r.status_code == status, r.text[:400]
    assert r.headers["content-type"].startswith("text/html")
    return r.text


def _listed(html: str) -> list[str]:
    return re.findall(r'href="/incidents/(inc-[0-9a-f]+)"', html)


def test_the_list_filters_like_the_api(client: Client, history: dict[str, Incident]) -> None:
    ecc = _listed(_page(client, "/incidents?tag=ecc"))
    assert ecc == [history["k8s-xid-2"].id, history["train-ecc-1"].id]
    everything = _page(client, "/incidents")
    assert len(_listed(everything)) == 6 and "6 of 6 incidents" in everything
    assert 'value="nccl.*"' in _page(client, "/incidents?signature=nccl.*")  # the form keeps what was asked
    bad = _page(client, "/incidents?since=whenever", status=400)
    assert "use 7d, 24h" in bad


def test_the_incident_page_draws_the_timeline_with_the_initiator_on_its_rank(client: Client,
                                                                             history: dict[str, Incident]) -> None:
    html = _page(client, f"/incidents/{history['train-oom-1'].id}")
    svg = html[html.index("<svg"):html.index("</svg>")]
    initiating = re.findall(r'<g class="event initiating" data-rank="(\d*)" data-host="([^"]*)" data-time="([^"]*)" '
                            r'data-signature="([^"]*)"', svg)
    # the OOM kill, at its corrected time, on rank 37's row; and rank 37's absence from the collective the 63
    # others time out in (derived from their sequence numbers: no time of its own, so in the no-clock lane)
    assert sorted((rank, host, sig, when == "no clock") for rank, host, when, sig in initiating) == [
        ("37", "node004", "host.oom_killer", False), ("37", "node004", "pytorch.c10d.desync_not_joined", True)]
    assert len(re.findall(r'class="event collateral"', svg)) >= 63
    assert "no clock" in svg  # two connection resets carry no timestamp: they get their own lane
    assert 'id="verify-cmd"' in html and "dmesg -T | grep -c &#39;Out of memory: Killed process&#39;" in html


def test_log_text_is_escaped_everywhere(client: Client, history: dict[str, Incident]) -> None:
    html = _page(client, f"/incidents/{history['train-ecc-1'].id}")
    assert "<script>alert(1)</script>" not in html
    assert "name=&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script") == 1  # only our own app.js


def test_a_revised_incident_shows_what_changed(client: Client, history: dict[str, Incident]) -> None:
    html = _page(client, f"/incidents/{history['train-xid-1'].id}")
    revisions = html[html.index('<ol class="revisions">'):]
    # before its kernel log came, rank 9 (the seed's victim) was known by its absence from the collective the
    # others time out in; the Xid then named why, on the same rank
    assert "first diagnosis" in revisions
    assert "pytorch.c10d.desync_not_joined (rank 9 on node001) → xid.79 (rank 9 on node001)" in revisions


def test_offenders_and_catalog_pages(client: Client) -> None:
    offenders = _page(client, "/offenders")
    assert "kubectl cordon node003" in offenders
    assert "scontrol update nodename=node001 state=drain reason=&#34;firstfault: xid.79 in 2 jobs&#34;" in offenders
    catalog = _page(client, "/catalog?q=Connection+reset+by+peer")
    assert 'href="/catalog/nccl.bootstrap.connection_reset"' in catalog
    entry = _page(client, "/catalog/xid.79")
    assert "fallen off the bus" in entry and 'data-copy-target="verify-cmd"' in entry
    assert "No catalog entry" in _page(client, "/catalog/no.such", status=404)
    assert "No incident" in _page(client, "/incidents/inc-missing", status=404)


def test_pages_need_nothing_from_the_internet(client: Client) -> None:
    html = _page(client, "/incidents")
    assets = re.findall(r'(?:src|href)="([^"#]+)"', html)
    assert all(a.startswith("/") for a in assets), [a for a in assets if not a.startswith("/")]
    for path in ("/static/app.css", "/static/app.js"):
        assert client.get(path).status_code == 200
    static = Path(__file__).resolve().parents[2] / "api" / "static"
    assert not re.search(r"https?://", (static / "app.css").read_text() + (static / "app.js").read_text())
