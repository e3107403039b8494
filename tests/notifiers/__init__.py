"""Tests of outbound messages: rendering, LINE, Slack, console, the dispatcher,
delivery under faults."""
