"""The API's JSON renderer: DRF's ``JSONRenderer`` with orjson doing the encoding.

``json.dumps`` of a 50-run list page was a tenth of its CPU; orjson writes the same JSON in a
tenth of that. The output parses to the same values (``tests/api/test_renderers.py``); only the
spelling of some floats differs: ``0.00001`` and ``2.5e-7`` where Python writes ``1e-05`` and
``2.5e-07``. Whatever orjson will not write the way DRF would goes through DRF's own renderer:
an ``indent`` the client asked for, integers beyond 64 bits, keys that are not strings, and any
object orjson does not know that DRF's encoder does not turn into one it knows. One answer
changes on purpose: a float that is NaN or infinite, which no stored document can hold (they are
canonical JSON), is written as null where DRF's strict JSON raised, a 500.
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework import renderers
from rest_framework.utils.encoders import JSONEncoder


class RawJSON:
    """JSON text that goes into a response as it is (orjson.Fragment): an object the database
    holds as text (runs.summaries), which decoding and encoding again would only spell
    the same. ``text`` must be valid JSON; DRF's own encoder, where it renders, decodes it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"RawJSON({self.text!r})"


class Encoder(JSONEncoder):
    """DRF's JSON encoder, which also writes RawJSON (by its value)."""

    def default(self, obj: Any) -> Any:
        if isinstance(obj, RawJSON):
            return orjson.loads(obj.text)
        return super().default(obj)


# orjson writes dates as DRF's encoder does (isoformat, "Z" for a zero offset), in C: the two
# dates of each run were 7% of a list page's instructions through isoformat. It leaves out the
# seconds of an offset that has some (local mean time before 1900; every date the databases
# return is in UTC). The other types it knows (str and int subclasses, UUID, Enum) it writes as
# json.dumps does.
_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_PASSTHROUGH_DATACLASS
_ENCODER_DEFAULT = Encoder().default


def _default(obj: Any) -> Any:
    if isinstance(obj, RawJSON):
        return orjson.Fragment(obj.text)
    return _ENCODER_DEFAULT(obj)


class JSONRenderer(renderers.JSONRenderer):
    encoder_class = Encoder

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if data is None or self.ensure_ascii or not self.compact:
            return super().render(data, accepted_media_type, renderer_context)
        if self.get_indent(accepted_media_type, renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        try:
            text = orjson.dumps(data, default=_default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return super().render(data, accepted_media_type, renderer_context)
        # As DRF does: JSON that is also a strict subset of JavaScript. U+2028 and U+2029 are
        # E2 80 A8/A9 in UTF-8: a search for the one byte is memchr, one for two bytes a Python
        # loop over the whole body (0.1 ms of a 120 kB list page).
        if b"\xe2" in text:
            text = text.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
        return text
