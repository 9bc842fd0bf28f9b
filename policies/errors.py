"""Errors of the policy layer."""

from __future__ import annotations


class PolicyError(Exception):
    """Root of the policy layer's errors (bad rules, bad limits)."""
