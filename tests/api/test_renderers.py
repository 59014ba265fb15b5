"""api.renderers.JSONRenderer (orjson) against DRF's own JSONRenderer (json.dumps)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
import zoneinfo
from decimal import Decimal
from typing import Any

import pytest
from django.utils.functional import lazy
from rest_framework import renderers as drf

from api.renderers import Encoder, JSONRenderer, RawJSON
from runs.models import RunStatus

ours, theirs = JSONRenderer(), drf.JSONRenderer()


class Theirs(drf.JSONRenderer):
    """DRF's renderer with an encoder that also knows our RawJSON (a list's stored objects)."""

    encoder_class = Encoder


BERLIN = dt.timezone(dt.timedelta(hours=2))
LONDON = zoneinfo.ZoneInfo("Europe/London")


@pytest.mark.parametrize(
    "data",
    [
        {"a": 1, "b": [True, False, None], "c": "ünïcødé ✓ 🚀", "d": {"e": 1.5, "f": -0.0, "g": 2**63 - 1}},
        {"control": 'tab\there, nul\u0000, quote" and backslash\\', "separators": "\u2028 and \u2029"},
        {
            "utc": dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC),
            "berlin": dt.datetime(2026, 7, 1, tzinfo=BERLIN),
            "london": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=LONDON),  # a zero offset: "Z" too
            "west": dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(-dt.timedelta(hours=9, minutes=30))),
        },
        {"naive": dt.datetime(2026, 1, 2, 3, 4, 5), "date": dt.date(2026, 1, 2), "time": dt.time(3, 4, 5, 6)},
        {
            "decimal": Decimal("1.25"),
            "uuid": uuid.UUID(int=7),
            "lazy": lazy(lambda: "later", str)(),
            "choice": RunStatus.PASSED,
        },
        {"tuple": (1, 2), "empty": {}, "nested": [[[]]], "big": 1.7976931348623157e308, "tiny": 5e-324},
        [{"latencyNs": 12345.678, "rank": 3}] * 3,
    ],
)
def test_it_writes_what_drf_writes(data: Any) -> None:
    assert ours.render(data) == theirs.render(data)


def test_small_floats_differ_in_spelling_only() -> None:
    data = {"values": [1e-05, 2.5e-07, 1e-10, 0.0001, 3.14e-300]}
    assert ours.render(data) != theirs.render(data)
    assert json.loads(ours.render(data)) == json.loads(theirs.render(data)) == data


@pytest.mark.parametrize(
    "data",
    [
        {"beyond 64 bits": 2**64 + 1},  # orjson refuses; json.dumps writes it exactly
        {1: "int key", None: "None key"},  # json.dumps turns keys into strings
    ],
)
def test_what_orjson_will_not_write_goes_through_drf(data: Any) -> None:
    assert ours.render(data) == theirs.render(data)


def test_an_indent_the_client_asks_for_goes_through_drf() -> None:
    data = {"a": [1, {"b": 2}]}
    rendered = ours.render(data, "application/json; indent=4")
    assert rendered == theirs.render(data, "application/json; indent=4")
    assert b'\n    "a"' in rendered


def test_what_neither_can_write_raises_drfs_error() -> None:
    with pytest.raises(TypeError):
        theirs.render({"object": object()})
    with pytest.raises(TypeError):
        ours.render({"object": object()})


def test_a_non_finite_float_is_null_instead_of_an_error() -> None:
    with pytest.raises(ValueError):
        theirs.render({"x": float("nan")})
    assert ours.render({"x": float("nan"), "y": float("inf")}) == b'{"x":null,"y":null}'


def test_an_offset_with_seconds_loses_them() -> None:
    """Local mean time before 1900; no date a database returns here has one (they are UTC)."""
    data = {"lmt": dt.datetime(1890, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=53, seconds=28)))}
    assert theirs.render(data) == b'{"lmt":"1890-01-01T00:00:00+05:53:28"}'
    assert ours.render(data) == b'{"lmt":"1890-01-01T00:00:00+05:53"}'


def test_none_is_an_empty_body() -> None:
    assert ours.render(None) == theirs.render(None) == b""


def test_every_api_page_of_the_shipped_data_reads_the_same(client: Any, shipped_data: None, settings: Any) -> None:
    """Each response body, rendered by both, parses to the same values."""
    from runs.models import ComparisonGroup, Run

    run = Run.objects.order_by("pk").first()
    group = ComparisonGroup.objects.order_by("pk").first()
    paths = [
        "/api/v1/runs/?limit=500",
        f"/api/v1/runs/{run.public_id}/",
        "/api/v1/groups/?limit=500",
        f"/api/v1/groups/{group.key}/",
        "/api/v1/sources/",
        "/api/v1/benchmarks/?limit=500",
    ]
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, path
        assert json.loads(response.content) == json.loads(Theirs().render(response.data)), path


def test_raw_json_goes_in_as_it_is_and_through_drf_by_its_value() -> None:
    """A list's stored objects (api.items.run_items) reach the response as their text; where
    DRF renders (an indent, a key orjson refuses), its encoder writes their values."""
    data = {"timing": RawJSON('{"latencyNs":{"mean":18580},"primaryStatistic":"mean"}'), "rank": 1}
    assert ours.render(data) == b'{"timing":{"latencyNs":{"mean":18580},"primaryStatistic":"mean"},"rank":1}'
    indented = ours.render(data, "application/json; indent=2")
    assert json.loads(indented) == {"timing": {"latencyNs": {"mean": 18580}, "primaryStatistic": "mean"}, "rank": 1}
    assert b'\n  "timing"' in indented
    assert json.loads(ours.render({**data, 1: "int key"}))["timing"]["primaryStatistic"] == "mean"
    with pytest.raises(TypeError):
        theirs.render(data)  # DRF's stock encoder does not know it: only ours renders lists
