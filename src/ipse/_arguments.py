"""Tool arguments checked against the JSON Schema subset ipse's tool definitions use.

Every tool ipse offers a model (the checkpoint, the twin transitions, the MCP server's tools)
declares its arguments as a JSON Schema object with ``type`` (object, array, string, integer,
boolean), ``properties``, ``required``, ``additionalProperties: false``, ``items``, ``enum`` and
``minimum``. `check_arguments` enforces exactly that subset and raises `InputError` naming the
first argument that does not fit, so a model's malformed call becomes one line it can act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ipse.errors import InputError


def check_arguments(arguments: Any, schema: Mapping[str, Any], where: str = "") -> None:
    """`InputError` when ``arguments`` does not follow ``schema``; None when it does."""
    _check(arguments, schema, where)


def _name(where: str) -> str:
    return where or "arguments"


def _check(value: Any, spec: Mapping[str, Any], where: str) -> None:
    kind = spec.get("type")
    if kind == "object":
        _object(value, spec, where)
    elif kind == "array":
        _array(value, spec, where)
    elif kind == "string" and not isinstance(value, str):
        raise InputError(f"{_name(where)}: expected a string")
    elif kind == "integer":
        _integer(value, spec, where)
    elif kind == "boolean" and not isinstance(value, bool):
        raise InputError(f"{_name(where)}: expected true or false")
    if "enum" in spec and value not in spec["enum"]:
        choices = ", ".join(str(v) for v in spec["enum"])
        raise InputError(f"{_name(where)}: must be one of {choices}")


def _array(value: Any, spec: Mapping[str, Any], where: str) -> None:
    if not isinstance(value, list):
        raise InputError(f"{_name(where)}: expected a list")
    items = spec.get("items")
    if items is not None:
        for i, item in enumerate(value):
            _check(item, items, f"{where}[{i}]")


def _integer(value: Any, spec: Mapping[str, Any], where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{_name(where)}: expected an integer")
    if "minimum" in spec and value < spec["minimum"]:
        raise InputError(f"{_name(where)}: must be at least {spec['minimum']}")
    if "maximum" in spec and value > spec["maximum"]:
        raise InputError(f"{_name(where)}: must be at most {spec['maximum']}")


def _object(value: Any, spec: Mapping[str, Any], where: str) -> None:
    if not isinstance(value, Mapping):
        raise InputError(f"{_name(where)}: expected an object")
    properties: Mapping[str, Any] = spec.get("properties", {})
    prefix = f"{where}." if where else ""
    if spec.get("additionalProperties") is False:
        for key in value:
            if key not in properties:
                raise InputError(f"{_name(where)}: unknown argument {key!r}")
    for key in spec.get("required", ()):
        if key not in value:
            raise InputError(f"{_name(where)}: missing argument {key!r}")
    for key, item in value.items():
        if key in properties:
            _check(item, properties[key], prefix + str(key))


__all__ = ["check_arguments"]
