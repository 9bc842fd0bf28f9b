"""The Responses API front (`/v1/responses`)."""

from .handler import ResponseRecords, Responses, error_body

__all__ = ["ResponseRecords", "Responses", "error_body"]
