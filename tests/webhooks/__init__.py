"""Tests of inbound taps: LINE and Slack webhooks through the real app and the fake platforms."""
