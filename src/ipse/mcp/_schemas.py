"""The JSON schema of a tool's arguments: an object of named properties, nothing else."""

from __future__ import annotations

from typing import Any


def object_schema(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required or [],
        "additionalProperties": False,
    }


__all__ = ["object_schema"]
