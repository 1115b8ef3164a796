"""A delivery worker in its own process, for the crash test: `python -m tests.notifiers.deliver_worker DB SLACK NOW`."""

from __future__ import annotations

import sys
from datetime import datetime

from pydantic import SecretStr

from notifiers.outbox import deliver_due
from notifiers.settings import NotifySettings
from notifiers.slack import SlackNotifier
from store.incidents import Store


def main(db_url: str, slack_url: str, now: str) -> None:
    store = Store.open(db_url, migrate_schema=False)
    settings = NotifySettings(slack_token=SecretStr("xoxb-test-token"), slack_api_url=slack_url)
    deliver_due(store, {"slack": SlackNotifier(settings)}, datetime.fromisoformat(now))
    print("recorded", flush=True)  # a killed worker never gets here


if __name__ == "__main__":
    main(*sys.argv[1:4])
