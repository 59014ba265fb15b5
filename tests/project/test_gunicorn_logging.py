"""gunicorn's access log never holds a password-reset token (kernelindex.gunicorn_logging)."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

from gunicorn.config import Config

from kernelindex.gunicorn_logging import RedactingLogger


def test_the_access_log_atoms_have_the_reset_token_cut_out() -> None:
    logger = RedactingLogger(Config())
    path = "/accounts/reset/MQ/cz5k2p-4f1e0c8a9b7d6e5f4a3b2c1d0e9f8a7b/"
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": path,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
    }
    request = SimpleNamespace(headers=[("REFERER", "https://kernelindex.example.org" + path)])
    response = SimpleNamespace(status="302 Found", headers=[], sent=0, response_length=0)
    atoms = logger.atoms(response, request, environ, datetime.timedelta(seconds=0.01))
    line = " ".join(str(value) for value in atoms.values())
    assert "4f1e0c8a9b7d6e5f4a3b2c1d0e9f8a7b" not in line
    assert "/accounts/reset/MQ/[redacted]/" in atoms["r"]
