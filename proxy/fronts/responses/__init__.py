"""The Responses API front (`/v1/responses`)."""

from .handler import Responses, error_body
from .records import ResponseRecords

__all__ = ["ResponseRecords", "Responses", "error_body"]
