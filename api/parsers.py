"""JSON request parsers with a size bound and no way to crash the server.

DRF reads the request stream itself, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE (which guards
``request.body``) does not apply: the bound is enforced here, from Content-Length and while
reading. A deeply nested document makes Python's json module recurse until RecursionError;
that is a malformed body (400), not a server error.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from kernelindex import canonical


def read_bounded(stream: Any, parser_context: Any) -> bytes:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if stream is None:
        return b""
    request = (parser_context or {}).get("request")
    declared = request.META.get("CONTENT_LENGTH") if request is not None else None
    if limit is not None and declared and str(declared).isdigit() and int(declared) > limit:
        raise RequestDataTooBig("Request body exceeded settings.DATA_UPLOAD_MAX_MEMORY_SIZE.")
    raw = stream.read(limit + 1) if limit is not None else stream.read()
    if limit is not None and len(raw) > limit:
        raise RequestDataTooBig("Request body exceeded settings.DATA_UPLOAD_MAX_MEMORY_SIZE.")
    return raw


class BoundedJSONParser(JSONParser):
    """Plain JSON (the community posts), bounded."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = read_bounded(stream, parser_context)
        try:
            return json.loads(raw)
        except RecursionError:
            raise ParseError("The body is nested too deeply.")
        except (ValueError, UnicodeDecodeError) as error:
            raise ParseError(f"The body is not valid JSON: {error}")


class CanonicalJSONParser(JSONParser):
    """Strict JSON for manifests: no NaN/Infinity, no duplicate keys, nothing JCS cannot carry."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = read_bounded(stream, parser_context)
        try:
            return canonical.loads(raw)
        except RecursionError:
            raise ParseError("The body is nested too deeply.")
        except canonical.CanonicalError as error:
            raise ParseError(f"The body is JSON that canonical JSON cannot carry: {error}")
        except (ValueError, UnicodeDecodeError) as error:
            raise ParseError(f"The body is not valid JSON: {error}")
