"""Errors of the policy layer."""

from __future__ import annotations


class PolicyError(Exception):
    """Root of the policy layer's errors."""


class HandlerError(PolicyError, ValueError):
    """A `policy.handler` that cannot be imported or is not callable (a ValueError too, so
    that the `policy:` section's validation reports it)."""
