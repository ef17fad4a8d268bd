"""A tool call's arguments checked against that tool's own input schema (mcp_tools), with ``jsonschema`` (the MCP
SDK's dependency), and refused in the engine's wording: ``'limit' must be an integer from 1 to 50, got 0``,
``unknown argument 'colour' for search; it takes query, workspace, ...``, ``'query' is required: words, ...``.

The schema the agent reads is the one that is enforced: an argument it allows is taken, one it refuses is
refused with what it must be, from the same schema. A JSON null is an argument not given (models send one for
"none"); a bounded integer left out takes its schema's default.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match
from mcp import types

from autodoc_core.errors import invalid_params


def _whole_number(checker: Any, value: Any) -> bool:
    """JSON Schema lets 5.0 be an integer; the engine (errors.whole_number) does not."""
    return isinstance(value, int) and not isinstance(value, bool)


Validator = validators.extend(Draft202012Validator,
                              type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole_number))
_VALIDATORS: dict[str, Any] = {}


def checked_arguments(arguments: dict[str, Any], tool: types.Tool) -> dict[str, Any]:
    """``arguments`` as the tool's handler takes them, or an invalid-params error naming the first wrong one."""
    given = {key: value for key, value in arguments.items() if value is not None}
    error = best_match(_validator(tool).iter_errors(given))
    if error is not None:
        raise invalid_params(refusal(error, given, tool), **_argument_of(error))
    defaults = {key: spec["default"] for key, spec in tool.input_schema["properties"].items()
                if "default" in spec and key not in given}
    return {**given, **defaults}


def _validator(tool: types.Tool) -> Any:
    if tool.name not in _VALIDATORS:
        _VALIDATORS[tool.name] = Validator(tool.input_schema)
    return _VALIDATORS[tool.name]


def _argument_of(error: ValidationError) -> dict[str, str]:
    return {"argument": str(error.absolute_path[0])} if error.absolute_path else {}


def refusal(error: ValidationError, given: dict[str, Any], tool: types.Tool) -> str:
    """The sentence for ``error``: about the whole call (an unknown or missing argument) or about one argument
    (what its schema says it must be)."""
    properties = tool.input_schema["properties"]
    if error.absolute_path:
        key = str(error.absolute_path[0])
        return f"'{key}' must be {must_be(properties[key])}, got {given[key]!r}"
    if error.validator == "additionalProperties":
        unknown = sorted(set(given) - set(properties))
        return (f"unknown argument {', '.join(map(repr, unknown))} for {tool.name}; "
                f"it takes {', '.join(properties) or 'no arguments'}")
    if error.validator == "required":
        missing = next(name for name in tool.input_schema["required"] if name not in given)
        return f"'{missing}' is required: {properties[missing].get('description', missing)}"
    return f"the arguments of {tool.name} must be {must_be(tool.input_schema)}"


def must_be(spec: dict[str, Any]) -> str:
    """What a value of ``spec`` is, in words: "an integer from 1 to 50", "a list drawn from lexical, semantic"."""
    if "anyOf" in spec:
        return " or ".join(must_be(alternative) for alternative in spec["anyOf"])
    kind = spec.get("type")
    if "enum" in spec:
        return "one of " + ", ".join(map(str, spec["enum"]))
    if kind == "integer":
        low, high = spec.get("minimum"), spec.get("maximum")
        if low is not None and high is not None:
            return f"an integer from {low} to {high}"
        return f"an integer, {low} or more" if low is not None else "an integer"
    if kind == "array":
        items = spec.get("items", {})
        size = "a non-empty list" if spec.get("minItems") else "a list"
        if "enum" in items:
            return f"{size} drawn from {', '.join(map(str, items['enum']))}"
        return f"{size} of {_plural(items.get('type', 'value'))}"
    return {"string": "a string", "object": "an object", "boolean": "true or false", "number": "a number"}.get(
        kind, f"a {kind}")


def _plural(kind: str) -> str:
    return {"string": "strings", "integer": "integers", "object": "objects"}.get(kind, f"{kind}s")
