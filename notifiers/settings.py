"""What the notifiers need, passed explicitly (built from config.settings.Settings by notifiers.wiring)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, SecretStr

from notifiers.webhook_policy import WebhookPolicy


class NotifySettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = "http://localhost:8000"  # incident links: {base_url}/incidents/{id}
    slack_token: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    slack_actions: bool = False  # the posts carry action buttons (a signing secret is set: someone can answer them)
    pagerduty_url: str = "https://events.pagerduty.com"
    webhook_secret: SecretStr | None = None
    webhook_allow_hosts: tuple[str, ...] = ()  # notifiers/webhook_policy.py: empty allows no webhook
    webhook_allow_http_loopback: bool = False
    timeout_s: float = 10.0
    slack_per_second: float = 1.0  # chat.postMessage allows about one message per second per channel
    slack_burst: int = 3

    def webhook_policy(self) -> WebhookPolicy:
        return WebhookPolicy(self.webhook_allow_hosts, self.webhook_allow_http_loopback)

    def incident_url(self, incident_id: str) -> str:
        return f"{self.base_url.rstrip('/')}/incidents/{incident_id}"
