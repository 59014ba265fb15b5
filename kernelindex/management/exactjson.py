"""Django's JSON serialization with times kept to the microsecond, for site moves.

Django's own JSON encoder cuts datetimes and times to milliseconds (ECMA-262 style), so a
`dumpdata`/`loaddata` move would change every timestamp a little. This format writes the same
JSON structure with full ``isoformat()``: Django's JSON deserializer reads it back exactly.
Registered by kernelindex.management.sitebackup under the name ``exact-json``.
"""

from __future__ import annotations

import datetime
from typing import Any

from django.core.serializers.json import (
    Deserializer,  # noqa: F401 - a serialization module has both
    DjangoJSONEncoder,
)
from django.core.serializers.json import Serializer as JSONSerializer


class ExactJSONEncoder(DjangoJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, (datetime.datetime, datetime.time)):
            if isinstance(o, datetime.time) and o.utcoffset() is not None:
                raise ValueError("JSON can't represent timezone-aware times.")
            return o.isoformat()
        return super().default(o)


class Serializer(JSONSerializer):
    def _init_options(self) -> None:
        super()._init_options()
        self.json_kwargs["cls"] = ExactJSONEncoder
