"""The wire formats clients speak, each parsed into the loop's `Turn` and rendered back."""

from .chat import ChatCompletions
from .chat import error_body as chat_error_body
from .messages import CountTokens, Messages
from .messages import error_body as anthropic_error_body
from .responses import ResponseRecords, Responses
from .responses import error_body as responses_error_body

__all__ = [
    "ChatCompletions",
    "CountTokens",
    "Messages",
    "ResponseRecords",
    "Responses",
    "anthropic_error_body",
    "chat_error_body",
    "responses_error_body",
]
