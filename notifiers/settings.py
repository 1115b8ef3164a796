"""Notifier settings: one validated object, passed explicitly; read from the environment only by ``from_env``."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, SecretStr


class NotifySettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = "http://localhost:8000"  # incident links: {base_url}/incidents/{id}
    slack_token: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    pagerduty_url: str = "https://events.pagerduty.com"
    webhook_secret: SecretStr | None = None
    timeout_s: float = 10.0
    slack_per_second: float = 1.0  # chat.postMessage allows about one message per second per channel
    slack_burst: int = 3

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> NotifySettings:
        def get(name: str) -> str | None:
            return env.get(f"FIRSTFAULT_{name}") or None

        values: dict[str, object] = {
            "base_url": get("BASE_URL"), "slack_token": get("SLACK_TOKEN"), "slack_api_url": get("SLACK_API_URL"),
            "pagerduty_url": get("PAGERDUTY_URL"), "webhook_secret": get("WEBHOOK_SECRET"),
        }
        return cls.model_validate({k: v for k, v in values.items() if v is not None})

    def incident_url(self, incident_id: str) -> str:
        return f"{self.base_url.rstrip('/')}/incidents/{incident_id}"
