"""Credentials printed by jobs never leave firstfault: realistic log lines in, secrets out."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import correlator.redact
from correlator.redact import MASK, redact
from notifiers.redact import redact_incident
from tests.notifiers.conftest import make_incident

# (log line as a job prints it, the secret that must disappear, what must stay readable)
LINES = [
    ("[rank0]: SLACK_BOT_TOKEN=xoxb-2814-9923001-aZ3kQ8vLm1PdX0rT9wE7yB5c",
     "xoxb-2814-9923001-aZ3kQ8vLm1PdX0rT9wE7yB5c", "SLACK_BOT_TOKEN="),
    ("posting to https://hooks.slack.com/services/T0123/B0456/XyZ7abc123def", "XyZ7abc123def", "hooks.slack.com"),
    ("botocore: AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE region=us-east-1", "AKIAIOSFODNN7EXAMPLE", "region=us-east-1"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key"),
    ('requests: headers={"Authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqb2IifQ.sgn"}',
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqb2IifQ.sgn", "Bearer"),
    ("torch.distributed: init_method=tcp://10.0.0.1:29500 --db postgresql://trainer:hunter2@db-0:5432/runs",
     "hunter2", "db-0:5432/runs"),
    ("mlflow: connecting to https://admin:S3cr3t!pass@mlflow.internal/api", "S3cr3t!pass", "mlflow.internal"),
    ("launcher: python train.py --password=Tr0ub4dor&3 --lr 3e-4", "Tr0ub4dor", "--lr 3e-4"),
    ("wandb: WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567 wandb: Tracking run", "0123456789abcdef0123456789",
     "Tracking run"),
    ("huggingface_hub: token hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 is valid", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
     "is valid"),
    ("git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/org/repo", "ghp_16C7e42F292c6912E7710c8",
     "github.com/org/repo"),
    ("env: GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG0123456789", "env:"),
    ("OPENAI_API_KEY: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34", "OPENAI_API_KEY"),
    # each of these leaked before the rules were extended (found with tests/fixtures/planted_secrets.py)
    ("launcher: python train.py --password Tr0ub4dor&3 --lr 3e-4", "Tr0ub4dor", "--lr 3e-4"),
    ("srun --wandb-key 8f3a9c1d7e2b4f6a0c5d9e8f7a6b5c4d3e2f1a0b -N 2", "8f3a9c1d7e2b", "-N 2"),
    ("db: postgresql://app:p@ss@word9@db-0:5432/x", "word9", "db-0:5432/x"),
    ('config: password="correct horse battery" user=x', "horse battery", "user=x"),
    ('wandb.login(key="8f3a9c1d7e2b4f6a0c5d9e8f7a6b5c4d3e2f1a0b")', "8f3a9c1d7e2b", "wandb.login(key="),
    ("netrc: machine api.wandb.ai login user password 8f3a9c1d7e2b4f6a0c5d9e8f7a6b5c4d3e2f1a0b", "8f3a9c1d7e2b",
     "machine api.wandb.ai"),
    ("POST https://hooks.slack.com/workflows/T01ABC/A02DEF/123456/abcDEF456ghi", "abcDEF456ghi", "workflows/"),
    ("mysql --user root --password 12345678 -h db", "12345678", "-h db"),
]


@pytest.mark.parametrize(("line", "secret", "kept"), LINES, ids=[line[:40] for line, _, _ in LINES])
def test_a_secret_in_a_log_line_is_redacted_and_the_line_stays_readable(line: str, secret: str, kept: str) -> None:
    out = redact(line)
    assert secret not in out
    assert MASK in out
    assert kept in out


def test_a_private_key_block_is_removed_whole() -> None:
    text = ("ssh: loaded key\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
            "QyNTUxOQAAACBhc2RmYXNkZmFzZGZhc2RmYXNkZg\n-----END OPENSSH PRIVATE KEY-----\nnext line")
    out = redact(text)
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in out and "QyNTUxOQ" not in out
    assert out.startswith("ssh: loaded key\n") and out.endswith("\nnext line")


@pytest.mark.parametrize("line", [
    "NCCL WARN socketProgressOpt: Call to recv from 10.1.2.3<41235> failed : Connection reset by peer",
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "iteration 1200 | max_tokens=4096 | tokens_per_sec: 15321.5 | loss 2.31",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=31844, GPU has fallen off the bus.",
    "https://github.com/NVIDIA/nccl/issues/1234",
    "vllm: --max-num-batched-tokens 8192 --num-tokens 12 max_tokens=4096 --token-budget 100",
])
def test_ordinary_log_lines_are_left_alone(line: str) -> None:
    assert redact(line) == line


def test_an_incident_is_redacted_everywhere_log_text_appears() -> None:
    token = "xoxb-1111-2222-abcdefghijkl"
    incident = make_incident(evidence=[f"export SLACK_TOKEN={token}"], changes=[f"new line {token}"])
    incident.diagnosis.root_cause.explanation.append(f"saw {token}")  # type: ignore[union-attr]
    dumped = redact_incident(incident).model_dump_json()
    assert token not in dumped
    assert token in incident.model_dump_json()  # the stored incident is untouched


@pytest.mark.parametrize(("line", "_secret", "_kept"), LINES, ids=[line[:40] for line, _, _ in LINES])
def test_redaction_is_idempotent(line: str, _secret: str, _kept: str) -> None:
    """Diagnoses are redacted when made and the notifiers redact again at the edge: twice must equal once."""
    once = redact(line)
    assert redact(once) == once


def test_a_token_cut_by_the_explanation_is_redacted_before_the_cut(tmp_path: Path) -> None:
    """The explanation quotes the first 100 characters of a suspect's first error line; cut first, a token
    across the 100th character was too short for its rule, and 19 of its characters reached every output."""
    from correlator.diagnose import diagnose
    from scan.engine import default_matcher, scan_sources
    from sources.files import expand
    from tests.fixtures.planted_secrets import HF, write_jobs

    token = HF.value  # rank 2's third line in the `cause` job starts it at the 82nd character
    matcher = default_matcher()
    job = write_jobs(tmp_path)["cause"]
    d = diagnose(scan_sources(matcher, expand([str(job)]), 2026).results, matcher.catalog)
    quoted = [e for e in d.root_cause.explanation if "first: " in e]  # type: ignore[union-attr]
    assert quoted and "retry with hf_[REDACTED]" in quoted[0]
    assert token[3:13] not in d.model_dump_json()


# pieces of every rule's trigger, so that generated text often holds secrets or near-misses of them
PIECES = st.sampled_from(["password", "=", ":", " ", "--", "token", "xoxb-", "hf_", "AKIA", "://", "@", "Bearer ",
                          "-----BEGIN RSA PRIVATE KEY-----", "ghp_", "github_pat_", "sk-", "wandb login ", "key=",
                          "0123456789abcdef" * 3, "aZ3kQ8vLm1PdX0rT9wE7", '"', "'", "\n", "max_tokens", "4096"])


@settings(max_examples=1000, deadline=None, database=None)
@given(text=st.lists(PIECES | st.text(max_size=6), max_size=12).map("".join))
def test_the_screen_never_changes_what_redaction_answers(text: str) -> None:
    unscreened = text
    for _name, pattern, replacement in correlator.redact._RULES:
        unscreened = pattern.sub(replacement, unscreened)
    assert redact(text) == unscreened
