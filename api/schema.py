"""OpenAPI post-processing: the error responses every operation can give, in one place.

Each operation documents the JSON error body for the statuses it can answer with, so clients
(and schemathesis) know every status and shape the API returns.
"""

from __future__ import annotations

from typing import Any

ERROR_REF = {"$ref": "#/components/schemas/Error"}

ERROR_SCHEMAS = {
    "ErrorDetail": {
        "type": "object",
        "properties": {
            "field": {"type": "string", "nullable": True},
            "message": {"type": "string"},
            "code": {"type": "string"},
        },
        "required": ["field", "message", "code"],
    },
    "ErrorBody": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Machine-readable error code."},
            "message": {"type": "string", "description": "What went wrong, for people."},
            "field": {"type": "string", "nullable": True, "description": "The offending field or parameter."},
            "details": {"type": "array", "items": {"$ref": "#/components/schemas/ErrorDetail"}},
        },
        "required": ["code", "message", "field", "details"],
    },
    "Error": {
        "type": "object",
        "properties": {"error": {"$ref": "#/components/schemas/ErrorBody"}},
        "required": ["error"],
    },
}

DESCRIPTIONS = {
    "400": "Invalid input; `error.field` names the parameter or body field.",
    "401": "Missing, unknown or revoked token.",
    "403": "The token may not do this.",
    "404": "No such object (or no such page: an unknown cursor).",
    "409": "Conflicts with a run the index already holds.",
    "413": "The request body is too large.",
    "415": "The body must be application/json.",
    "429": "Too many requests; see Retry-After.",
}


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    result.setdefault("components", {}).setdefault("schemas", {}).update(ERROR_SCHEMAS)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            # 404: an unknown object in the path, or a cursor the API never handed out.
            codes = ["400", "401", "404", "429"]
            if method == "post":
                codes += ["403", "409", "413", "415"]
            for code in codes:
                responses.setdefault(
                    code,
                    {"description": DESCRIPTIONS[code], "content": {"application/json": {"schema": ERROR_REF}}},
                )
            if method == "get" and "{" in path:
                _conditional(operation)
    return result


def _conditional(operation: dict[str, Any]) -> None:
    """Detail endpoints answer If-None-Match with 304 when the ETag matches."""
    parameters = operation.setdefault("parameters", [])
    if not any(p.get("name") == "If-None-Match" for p in parameters):
        parameters.append(
            {
                "in": "header",
                "name": "If-None-Match",
                "required": False,
                "schema": {"type": "string"},
                "description": "An ETag from an earlier answer; 304 when unchanged.",
            }
        )
    ok = operation["responses"].get("200")
    if ok is not None:
        ok.setdefault("headers", {})["ETag"] = {"schema": {"type": "string"}, "description": "Entity tag of the body."}
    operation["responses"].setdefault(
        "304",
        {
            "description": "Not modified: If-None-Match matched the current ETag.",
            "headers": {"ETag": {"schema": {"type": "string"}}},
        },
    )
