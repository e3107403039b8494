"""Tests of the agent side: RemoteGate, guard, the Claude Code hook, tapgate run."""
