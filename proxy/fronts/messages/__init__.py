"""The Anthropic Messages front (`/v1/messages`)."""

from .errors import error_body
from .handler import CountTokens, Messages

__all__ = ["CountTokens", "Messages", "error_body"]
