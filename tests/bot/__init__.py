"""Tests of the deployable app: agent API, HumanLayer API, config, CLI, metrics, heartbeat."""
