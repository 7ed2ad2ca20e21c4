"""The interface between a channel and a model provider, and the data that crosses it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AITool"]


class AITool(BaseModel):
    """A tool offered to the model: its name, what it does and its JSON Schema parameters."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The name the model calls the tool by."""
    description: str = ""
    """What the tool does, for the model."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """A JSON Schema for the call's arguments."""
