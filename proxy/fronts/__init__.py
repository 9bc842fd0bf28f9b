"""The wire formats clients speak, each parsed into the loop's `Turn` and rendered back."""

from .chat import ChatCompletions
from .messages import CountTokens, Messages
from .messages import error_body as anthropic_error_body
from .responses import ResponseRecords, Responses

__all__ = [
    "ChatCompletions",
    "CountTokens",
    "Messages",
    "ResponseRecords",
    "Responses",
    "anthropic_error_body",
]
