"""Subscriptions: their ids. They are stored through the NotifyStore port (store/ports.py: ``tx.subscriptions()``,
``tx.add_subscription``, ``tx.remove_subscription``), the same for the CLI, the API and routing."""

from __future__ import annotations

import secrets


def new_id() -> str:
    return f"sub-{secrets.token_hex(4)}"
