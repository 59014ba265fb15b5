"""gunicorn settings for `scripts/serve` (and production, where the environment overrides them).

PORT and HOST pick the address (127.0.0.1:8000 by default: the local site is not exposed);
WEB_CONCURRENCY the number of worker processes. Static files are served by whitenoise.
"""

import multiprocessing
import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{int(os.environ.get('PORT', '8000'))}"
# SQLite takes one writer at a time, so a few workers are plenty for the local site.
workers = int(os.environ.get("WEB_CONCURRENCY", min(multiprocessing.cpu_count() * 2 + 1, 4)))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
accesslog = "-"
# Password-reset tokens never reach the access log.
logger_class = "kernelindex.gunicorn_logging.RedactingLogger"
errorlog = "-"
# Load the app once in the master, so a broken import or setting fails at start, not per worker.
preload_app = True


def when_ready(server: object) -> None:
    """Compile the Jinja pages' templates (web.jinja) in the master, after the preloaded app and
    before the workers fork: each worker inherits them. Compiled on a worker's first run page
    instead, the run page's template took 75 ms of that request (p95 143 ms at a million runs).

    Then freeze what the master holds (gc.freeze, as Python's documentation advises before a
    fork): the workers' collector never walks those objects again. Unfrozen, each collection of
    the oldest generation walked the preloaded app's 128,000 objects, 111 ms that landed on
    whichever request set it off, and made the slowest of 20 requests 110-210 ms on pages whose
    median was 12-60 ms (a million runs). It also keeps the collector from writing into the
    pages the workers share with the master."""
    import gc

    from kernelindex import prefork
    from web import jinja

    prefork.prepare()  # the Django templates and the cache's client, as jinja.precompile does its own
    jinja.precompile()
    gc.freeze()
