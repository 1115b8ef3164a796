"""Notifiers (Slack, PagerDuty, webhook, console), routing by subscription, outbox delivery."""
