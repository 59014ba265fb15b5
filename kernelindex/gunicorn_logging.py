"""gunicorn's access log without secrets in URLs (``logger_class`` in gunicorn's settings).

The first request of a password-reset link carries its token in the path; Django then moves it
into the session, but the access log would already hold a working link.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from kernelindex.logfilters import redact


class RedactingLogger(Logger):
    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        return {key: redact(value) if isinstance(value, str) else value for key, value in atoms.items()}
