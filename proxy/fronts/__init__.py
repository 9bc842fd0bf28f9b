"""The wire formats clients speak, each parsed into the loop's `Turn` and rendered back."""

from .chat import ChatCompletions
from .responses import ResponseRecords, Responses

__all__ = ["ChatCompletions", "ResponseRecords", "Responses"]
