"""Credentials printed by jobs never leave firstfault: realistic log lines in, secrets out."""

from __future__ import annotations

import pytest

from notifiers.redact import MASK, redact, redact_incident
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
