"""The production settings the README documents, read the way production reads them: from the
environment and from `.env`, each case in a fresh interpreter."""

from __future__ import annotations

import logging
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from kernelindex.logfilters import RedactSecretsFilter, redact

REPO = Path(__file__).resolve().parent.parent.parent

# What the README's "Deploying" section sets (the secret is generated, 50 characters or more).
PRODUCTION = {
    "DEBUG": "0",
    "ALLOWED_HOSTS": "kernelindex.example.org",
    "CSRF_TRUSTED_ORIGINS": "https://kernelindex.example.org",
    "SITE_URL": "https://kernelindex.example.org",
    "DATABASE_URL": "postgres://kernelindex@127.0.0.1:5432/kernelindex",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
    "TRUSTED_PROXY_COUNT": "1",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SESSION_COOKIE_SECURE": "1",
    "CSRF_COOKIE_SECURE": "1",
    "EMAIL_HOST": "smtp.example.org",
}
# Variables the settings read; the test process's own values of these must not leak in.
SETTINGS_VARIABLES = {
    "DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "SITE_URL",
    "TRUSTED_PROXY_COUNT", "SECURE_PROXY_SSL_HEADER", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
    "EMAIL_BACKEND", "EMAIL_HOST", "PASSWORD_RESET", "ENV_FILE",
}  # fmt: skip


def run_python(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if key not in SETTINGS_VARIABLES}
    # An empty .env of the test's own, so a developer's .env in the checkout changes nothing.
    empty = tmp_path / "empty.env"
    empty.touch()
    clean.update({"ENV_FILE": str(empty), "DJANGO_SETTINGS_MODULE": "kernelindex.settings"}, **env)
    return subprocess.run([sys.executable, *args], cwd=REPO, env=clean, capture_output=True, text=True, timeout=120)


def setting(names: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    code = f"import django; django.setup(); from django.conf import settings as s; print(repr(({names},)))"
    return run_python(["-c", code], env, tmp_path)


def secret() -> str:
    return secrets.token_urlsafe(50)


def test_check_deploy_prints_no_warning_with_the_documented_settings(tmp_path: Path) -> None:
    result = run_python(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION | {"SECRET_KEY": secret()}, tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNING" not in result.stdout + result.stderr


def test_check_deploy_warns_without_https_settings(tmp_path: Path) -> None:
    """The guard above is real: leave out HSTS and the redirect and check --deploy complains."""
    env = {k: v for k, v in PRODUCTION.items() if not k.startswith("SECURE_")} | {"SECRET_KEY": secret()}
    result = run_python(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], env, tmp_path)
    assert result.returncode != 0
    assert "security.W004" in result.stderr and "security.W008" in result.stderr


def test_https_settings_come_from_the_environment(tmp_path: Path) -> None:
    result = setting(
        "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE",
        PRODUCTION | {"SECRET_KEY": secret(), "SECURE_HSTS_SECONDS": "600", "CSRF_COOKIE_SECURE": "0"},
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(True, 600, True, False)"


def test_a_trusted_proxy_does_not_make_every_request_https(tmp_path: Path) -> None:
    """TRUSTED_PROXY_COUNT is about X-Forwarded-For only; X-Forwarded-Proto is believed only when
    SECURE_PROXY_SSL_HEADER names it."""
    env = {"DEBUG": "0", "SECRET_KEY": secret(), "TRUSTED_PROXY_COUNT": "1"}
    alone = setting("s.TRUSTED_PROXY_COUNT, s.SECURE_PROXY_SSL_HEADER", env, tmp_path)
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.strip() == "(1, None)"
    named = setting(
        "s.TRUSTED_PROXY_COUNT, s.SECURE_PROXY_SSL_HEADER",
        {"DEBUG": "0", "SECRET_KEY": secret(), "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"},
        tmp_path,
    )
    assert named.stdout.strip() == "(0, ('HTTP_X_FORWARDED_PROTO', 'https'))"


# -- .env ----------------------------------------------------------------------------------------


def test_dot_env_turns_debug_off(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# copied from .env.example\nDEBUG=0\nSECRET_KEY=from-the-dot-env-file\n")
    result = setting("s.DEBUG, s.SECRET_KEY", {"ENV_FILE": str(env_file)}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(False, 'from-the-dot-env-file')"


def test_the_process_environment_wins_over_dot_env(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("DEBUG=0\nSECRET_KEY=from-the-dot-env-file\n")
    result = setting("s.DEBUG, s.SECRET_KEY", {"ENV_FILE": str(env_file), "DEBUG": "1"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(True, 'from-the-dot-env-file')"


def test_the_project_root_dot_env_is_the_default(tmp_path: Path) -> None:
    """Without ENV_FILE the settings read `.env` beside manage.py: shown on a copy of the settings."""
    package = tmp_path / "kernelindex"
    package.mkdir()
    (package / "__init__.py").touch()
    (package / "settings.py").write_text((REPO / "kernelindex" / "settings.py").read_text())
    (tmp_path / ".env").write_text("DEBUG=0\nSECRET_KEY=root-dot-env\n")
    clean = {key: value for key, value in os.environ.items() if key not in SETTINGS_VARIABLES}
    code = "import kernelindex.settings as s; print(s.DEBUG, s.SECRET_KEY)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False root-dot-env"


# -- password reset and mail -------------------------------------------------------------------


def test_password_reset_without_a_mail_server_is_refused_at_start_up(tmp_path: Path) -> None:
    result = setting(
        "s.PASSWORD_RESET_ENABLED", {"DEBUG": "0", "SECRET_KEY": secret(), "PASSWORD_RESET": "1"}, tmp_path
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured: PASSWORD_RESET=1 needs a mail server when DEBUG is off" in result.stderr


def test_the_console_backend_is_not_a_mail_server(tmp_path: Path) -> None:
    env = {
        "DEBUG": "0",
        "SECRET_KEY": secret(),
        "PASSWORD_RESET": "1",
        "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend",
        "EMAIL_HOST": "smtp.example.org",
    }
    result = setting("s.PASSWORD_RESET_ENABLED", env, tmp_path)
    assert result.returncode != 0 and "delivers no mail" in result.stderr


def test_password_reset_is_off_in_production_without_a_mail_server(tmp_path: Path) -> None:
    result = setting("s.PASSWORD_RESET_ENABLED, s.EMAIL_BACKEND", {"DEBUG": "0", "SECRET_KEY": secret()}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(False, 'django.core.mail.backends.smtp.EmailBackend')"


def test_password_reset_is_on_in_production_with_a_mail_server(tmp_path: Path) -> None:
    env = {"DEBUG": "0", "SECRET_KEY": secret(), "EMAIL_HOST": "smtp.example.org"}
    result = setting("s.PASSWORD_RESET_ENABLED", env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(True,)"


@pytest.mark.parametrize(
    "path",
    [
        "/accounts/password_reset/",
        "/accounts/password_reset/done/",
        "/accounts/reset/MQ/abc-def/",
        "/accounts/reset/done/",
    ],
)
def test_turned_off_password_reset_pages_are_not_found(path: str, settings, client: Client, db) -> None:
    settings.PASSWORD_RESET_ENABLED = False
    assert client.get(path).status_code == 404
    assert client.post(path, {"email": "alice@example.org"}).status_code == 404


def test_turned_off_password_reset_is_not_offered_and_sends_nothing(settings, client: Client, db) -> None:
    settings.PASSWORD_RESET_ENABLED = False
    User.objects.create_user("alice", "alice@example.org", "alice-password-1")
    assert "Forgot your password" not in client.get("/accounts/login/").content.decode()
    client.post("/accounts/password_reset/", {"email": "alice@example.org"})
    assert mail.outbox == []


def test_a_reset_token_never_reaches_the_log(client: Client, db, caplog: pytest.LogCaptureFixture) -> None:
    """The whole reset, a wrong link included, logged at DEBUG: the token is in the mail only."""
    User.objects.create_user("alice", "alice@example.org", "alice-password-1")
    handler_filter = RedactSecretsFilter()
    caplog.handler.addFilter(handler_filter)
    try:
        with caplog.at_level(logging.DEBUG):
            assert "Forgot your password" in client.get("/accounts/login/").content.decode()
            client.post("/accounts/password_reset/", {"email": "alice@example.org"})
            link = re.search(r"https?://[^/]+(/accounts/reset/\S+)", mail.outbox[0].body).group(1)
            token = link.rstrip("/").rsplit("/", 1)[1]
            form = client.get(link, follow=True)
            client.post(
                form.redirect_chain[-1][0],
                {"new_password1": "a-new-long-password-7", "new_password2": "a-new-long-password-7"},
            )
            client.get(link.replace(token, token[:-3] + "zzz"))
            logging.getLogger("django.request").warning("Not Found: %s", link)
    finally:
        caplog.handler.removeFilter(handler_filter)
    assert caplog.records, "the reset flow logged nothing: the check would prove nothing"
    assert all(token not in record.getMessage() for record in caplog.records)


def test_redact_cuts_the_token_out_of_reset_links() -> None:
    line = '"GET /accounts/reset/MQ/cz5k2p-4f1e0c8a9b7d6e5f4a3b2c1d0e9f8a7b/ HTTP/1.1" 302'
    assert redact(line) == '"GET /accounts/reset/MQ/[redacted]/ HTTP/1.1" 302'
    assert redact("/accounts/reset/MQ/set-password/") == "/accounts/reset/MQ/set-password/"


def test_the_console_log_handler_redacts(tmp_path: Path) -> None:
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('django.request').warning('Not Found: %s', '/accounts/reset/MQ/cz5k2p-0123456789abcdef/')"
    )
    result = run_python(["-c", code], {"DEBUG": "0", "SECRET_KEY": secret()}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "/accounts/reset/MQ/[redacted]/" in result.stderr
    assert "0123456789abcdef" not in result.stderr


def test_dot_env_example_loads_as_it_is(tmp_path: Path) -> None:
    result = setting("s.DEBUG, s.PASSWORD_RESET_ENABLED", {"ENV_FILE": str(REPO / ".env.example")}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(True, True)"


def test_dot_env_example_lists_every_variable_the_settings_read() -> None:
    source = (REPO / "kernelindex" / "settings.py").read_text()
    read = set(re.findall(r'(?:env_bool|env_int|env_list|os\.environ\.get)\(\s*"([A-Z_]+)"', source))
    listed = set(re.findall(r"^#? ?([A-Z_]+)=", (REPO / ".env.example").read_text(), re.MULTILINE))
    assert read - listed - {"ENV_FILE"} == set()
