"""Tests of the domain: policy, shell parsing, the gate."""
