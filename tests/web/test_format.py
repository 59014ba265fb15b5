"""The one set of number and date filters (web/templatetags/kiformat.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from web.templatetags import kiformat


@pytest.mark.parametrize(
    ("ns", "shown"),
    [
        (18580, "18.6 µs"),  # the reference run: 18.58 µs, three significant digits
        (194399.5, "194 µs"),
        (3600, "3.6 µs"),
        (950, "950 ns"),
        (999.7, "1 µs"),  # rounds up into the next unit, never "1000 ns"
        (999_999, "1 ms"),
        (28_000_000, "28 ms"),
        (1.5e9, "1.5 s"),
        (0, "0 ns"),
        (None, "—"),
        (float("nan"), "—"),
        ("not a number", "—"),
    ],
)
def test_latency(ns, shown):
    assert kiformat.latency(ns) == shown


def test_latency_writes_three_significant_digits_in_the_largest_unit_for_any_value():
    """The fast path ("g" formatting) against the rule written out: ``_significant`` of the value
    in the largest unit it reaches, the next unit when it rounds to 1000."""
    import random

    def by_the_rule(ns: float) -> str:
        index = max([0] + [i for i, (_, scale) in enumerate(kiformat._UNITS) if abs(ns) >= scale])
        text = kiformat._significant(ns / kiformat._UNITS[index][1])
        if index + 1 < len(kiformat._UNITS) and abs(float(text)) >= 1000:
            index += 1
            text = kiformat._significant(ns / kiformat._UNITS[index][1])
        return f"{text} {kiformat._UNITS[index][0]}"

    rng = random.Random(13)
    values = [rng.uniform(0, 10) * 10 ** rng.randint(-6, 13) for _ in range(20_000)]
    # Around every rounding edge: 9.995, 99.95, 999.5 of each unit, and powers of ten.
    values += [
        edge * scale * (1 + d)
        for edge in (1, 9.995, 99.95, 999.5, 1000)
        for scale in (1, 1e3, 1e6, 1e9)
        for d in (-1e-12, -1e-6, 0, 1e-6, 1e-12)
    ]
    values += [-v for v in values[:1000]] + [0.0, -0.0, 5e-5, 1e-4, 2e12, 17]
    for ns in values:
        assert kiformat.latency(ns) == by_the_rule(ns), ns


def test_ratio_score_and_dates():
    assert kiformat.ratio(20.455) == "20.45×"
    assert kiformat.ratio(None) == "—"
    assert kiformat.score(0.988198) == "0.9882"
    assert kiformat.score(True) == "—"
    late = datetime(2026, 7, 24, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert kiformat.isodate(late) == "2026-07-25"  # shown in UTC
    assert kiformat.isodate(date(2026, 8, 24)) == "2026-08-24"
    assert kiformat.isodatetime(datetime(2026, 7, 24, 2, 49, 25, tzinfo=UTC)) == "2026-07-24 02:49 UTC"
    assert kiformat.isodate(None) == "—"


def test_digests_and_plain_values():
    digest = "sha256:6fa4f85da9b80839c97c94c18a0f459b639499a29d34959a080c5ac1bf870fb0"
    assert kiformat.shortdigest(digest, 23) == "sha256:6fa4f85da9b80839c97c94c…"
    assert kiformat.shortdigest(digest) == "sha256:6fa4f85da9b80839…"
    assert kiformat.plain(16.0) == "16" and kiformat.plain(0.05) == "0.05" and kiformat.plain(None) == "—"


def test_breakable_ids_wrap_only_after_slash_or_underscore_and_stay_escaped():
    assert kiformat.breakable("level1/19_ReLU") == "level1/<wbr>19_<wbr>ReLU"
    assert kiformat.breakable("<b>_x") == "&lt;b&gt;_<wbr>x"
