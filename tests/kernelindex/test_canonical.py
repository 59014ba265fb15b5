"""kernelindex.canonical: RFC 8785 bytes, strict parsing, digests."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from kernelindex import canonical
from tests.ingest.conftest import DATA, REFERENCE


def test_it_writes_rfc8785_examples() -> None:
    # RFC 8785 §3.2.2.3 number serialisation and §3.2.3 key order.
    assert canonical.dumps(1e21) == b"1e+21"
    assert canonical.dumps(1e-7) == b"1e-7"
    assert canonical.dumps(18580.0) == b"18580"
    assert canonical.dumps(-0.0) == b"0"
    assert canonical.dumps(0.000001) == b"0.000001"
    assert canonical.dumps(333333333.3333333) == b"333333333.3333333"
    assert canonical.dumps({"b": 1, "a": [True, None, "\u20ac\n"]}) == '{"a":[true,null,"€\\n"],"b":1}'.encode()
    # UTF-16 code-unit order: U+1F600 (surrogates D83D…) sorts before U+FB33.
    assert canonical.dumps({"\ufb33": 1, "\U0001f600": 2}) == '{"😀":2,"דּ":1}'.encode()


def _real_values() -> list[Any]:
    values = []
    for path in sorted(DATA.rglob("*.json*")):
        text = path.read_text()
        try:
            values.append(json.loads(text))
        except json.JSONDecodeError:
            values.extend(json.loads(line) for line in text.splitlines() if line.strip())
    return values


def test_it_gives_rfc8785_bytes_for_every_shipped_file() -> None:
    values = _real_values()
    assert len(values) > 40
    for value in values:
        assert canonical.dumps(value) == rfc8785.dumps(value)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.random()
    if depth > 3 or choice < 0.5:
        return rng.choice(
            [
                None,
                True,
                False,
                rng.randint(-(2**53) + 1, 2**53 - 1),
                rng.random() * 10 ** rng.randint(-30, 30),
                -rng.random() * 10 ** rng.randint(-8, 18),
                float(rng.randint(-(10**6), 10**6)),
                1e16,
                9999999999999998.0,
                1e-4,
                5e-324,
                "".join(
                    chr(rng.choice([rng.randint(1, 0x7F), rng.randint(0x80, 0xD7FF), rng.randint(0x10000, 0x10FFFF)]))
                    for _ in range(4)
                ),
            ]
        )
    if choice < 0.75:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = [
        "".join(
            chr(rng.choice([rng.randint(32, 126), rng.randint(0xA0, 0xD7FF), rng.randint(0x10000, 0x10FFFF)]))
            for _ in range(rng.randint(0, 3))
        )
        for _ in range(rng.randint(0, 4))
    ]
    return {key: _random_value(rng, depth + 1) for key in keys}


def test_it_gives_rfc8785_bytes_for_random_values() -> None:
    rng = random.Random(8785)
    for _ in range(20000):
        value = _random_value(rng)
        assert canonical.dumps(value) == rfc8785.dumps(value), value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "$: nan is not allowed"),
        ({"a": [1, float("inf")]}, "$.a[1]: inf is not allowed"),
        ({"n": 2**53}, "$.n: integer 9007199254740992 is beyond"),
        ({"n": -(2**53)}, "$.n: integer -9007199254740992 is beyond"),
        (["a\x00b"], "$[0]: string contains \\u0000"),
        ({"k\x00": 1}, "$: object key contains \\u0000"),
        ({1: "x"}, "object key 1 is not a string"),
        ({"s": {1, 2}}, "$.s: set is not a JSON value"),
        ("\ud800", "lone surrogate"),
    ],
)
def test_it_refuses_what_jcs_cannot_carry(value: Any, message: str) -> None:
    with pytest.raises(canonical.CanonicalError) as error:
        canonical.dumps(value)
    assert message in str(error.value)


def test_the_largest_safe_integers_are_kept() -> None:
    assert canonical.dumps([2**53 - 1, -(2**53 - 1)]) == b"[9007199254740991,-9007199254740991]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": NaN}', "NaN is not allowed"),
        ('{"a": -Infinity}', "-Infinity is not allowed"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ('{"a": 9007199254740993}', "$.a: integer 9007199254740993 is beyond"),
        ('{"a": "\\u0000"}', "$.a: string contains \\u0000"),
    ],
)
def test_loads_is_strict(text: str, message: str) -> None:
    with pytest.raises(canonical.CanonicalError) as error:
        canonical.loads(text)
    assert message in str(error.value)


def test_loads_reports_malformed_json_as_a_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        canonical.loads('{"a": ')


def test_the_digest_leaves_metadata_out() -> None:
    bundle = json.loads(REFERENCE.read_text())
    protocol = bundle["protocol"]
    digest = canonical.digest_of(protocol)
    assert digest == "sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"
    renamed = {**protocol, "metadata": {"name": "another-name"}}
    assert canonical.digest_of(renamed) == digest
    changed = json.loads(json.dumps(protocol))
    changed["spec"]["measurement"]["timer"] = "cuda_event"
    assert canonical.digest_of(changed) != digest


def test_the_run_digest_is_the_reference_pages() -> None:
    run = json.loads(REFERENCE.read_text())["run"]
    assert canonical.digest_of(run).startswith("sha256:6fa4f85da9b80839c97c94c")


def test_key_order_and_whitespace_do_not_change_a_digest() -> None:
    a = canonical.loads('{"spec": {"b": 1, "a": 2.50}, "kind": "K", "apiVersion": "v"}')
    b = canonical.loads('{"apiVersion":"v","kind":"K","spec":{"a":2.5,"b":1}}')
    assert canonical.digest_of(a) == canonical.digest_of(b)


def test_short_shows_sixteen_hex_characters() -> None:
    assert canonical.short("sha256:afb19fba8875cb05aaaa") == "sha256:afb19fba8875cb05…"
    assert canonical.short("") == ""


def test_pretty_keeps_non_ascii() -> None:
    assert "€" in canonical.pretty({"a": "€"})


def test_pretty_indents_as_json_did_and_writes_numbers_as_the_canonical_text() -> None:
    text = '{"z":{"b":[1,2.5,{"c":"é \\"q\\" \\n"}],"a":[],"e":{}},"n":1e-7,"m":1e+21,"t":true,"u":null}'
    value = canonical.loads(text)
    written = canonical.pretty(value)
    # The layout of json.dumps(indent=2, ensure_ascii=False), keys in their order …
    assert written == json.dumps(value, indent=2, ensure_ascii=False).replace("1e-07", "1e-7")
    # … and each number as the canonical document writes it (json wrote 1e-07).
    assert '"n": 1e-7,' in written and '"m": 1e+21,' in written
    assert canonical.loads(written) == value


def test_the_reference_bundle_file_is_valid_strict_json() -> None:
    assert canonical.loads(Path(REFERENCE).read_text())["run"]["kind"] == "BenchmarkRun"
