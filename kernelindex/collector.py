"""``collector_paused()``: no cyclic garbage collection while a bulk import runs.

CPython's collector runs every 700 net container allocations, and the older generations (by
then holding every document and row parsed so far) every tenth and hundredth of those. An import
builds millions of dicts and lists that stay alive until it ends, so each pass walks a heap that
only grows, and finds nothing: an import leaves no reference cycles (``gc.collect()`` after
importing 4,000 runs with the collector off finds 0 unreachable objects). At 20,000 runs the
passes took 1.2 of the 6 CPU seconds of the process. Reference counting still frees everything
as usual; only the search for cycles waits until the import is over.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector inside; restore it after (nested: the outermost restores)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
