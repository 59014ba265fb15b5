"""Unit tests of the rerun harness's torch-free parts (reruns/harness: definitions, implementations,
manifest building, digests, aggregation). They need neither torch nor a GPU, so they run in CI;
the parts that run PyTorch are in test_harness.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import rfc8785

from kernelindex.canonical import CanonicalError as CanonicalJSONError
from kernelindex.canonical import dumps as canonical_bytes
from reruns.harness import build_bundle, digest, verify_bundle
from reruns.harness import status as st
from reruns.harness.definition import effective_tolerance, eval_expression, load_definition, load_workload
from reruns.harness.implementation import ImplementationError, resolve_implementation
from reruns.harness.manifest import API_VERSION, architecture_for, geomean, normalize_product, protocol_document
from reruns.harness.runner import aggregate_case

ROOT = Path(__file__).resolve().parents[2]
L1 = ROOT / "data" / "sol-execbench" / "definitions" / "L1"
K10 = L1 / "010_attention_value_projection_with_transpose"
K62 = L1 / "062_kv_cache_update_with_rope_backward"
KERNEL10 = ROOT / "data" / "sol-execbench" / "kernels" / "kernel-10.json"
RERUNS = ROOT / "data" / "reruns"
REFERENCE_MANIFEST = ROOT / "data" / "reference" / "run-01a0352b.manifest.json"


# ------------------------------------------------------------------ definitions & implementations


def test_real_definitions_load_and_resolve():
    d62 = load_definition(K62)
    cases = load_workload(K62)
    assert d62.name == "062_kv_cache_update_with_rope_backward"
    assert d62.custom_inputs_entrypoint == "get_inputs"
    assert len(cases) == 16
    axes = d62.resolve_axes(cases[0].axes)
    assert axes["head_dim"] == 128 and axes["batch_size"] == cases[0].axes["batch_size"]
    d10 = load_definition(K10)
    c10 = load_workload(K10)[0]
    resolved = d10.resolve_axes(c10.axes)
    assert resolved["kv_projection_size"] == 1024  # expr "num_kv_heads * head_dim"
    assert d10.input_shapes(resolved)["v_proj_weight"] == (1024, 5120)
    assert c10.effective_tolerance["max_atol"] == 1e-05
    assert c10.effective_tolerance["required_matched_ratio"] == 1.0  # SOL default


def test_tolerance_defaults_and_safe_expressions():
    assert effective_tolerance({}) == {
        "max_atol": 0.01,
        "max_rtol": 0.01,
        "required_matched_ratio": 1.0,
        "max_error_cap": None,
    }
    assert eval_expression("a * b // 2", {"a": 3, "b": 4}) == 6
    with pytest.raises(ValueError):
        eval_expression("__import__('os').system('true')", {})


def test_implementation_specs():
    d10 = load_definition(K10)
    ref = resolve_implementation("reference", d10)
    assert ref.revision == "reference" and not ref.compile
    assert ref.code_digest == "sha256:" + hashlib.sha256(d10.reference.encode()).hexdigest()
    comp = resolve_implementation("torch-compile", d10)
    assert comp.compile and comp.code_digest == ref.code_digest
    base = resolve_implementation(f"baseline:{KERNEL10}", d10)
    source = json.loads(KERNEL10.read_text())["response"]["data"]["baseline"]
    assert base.revision == "scoring-baseline"
    assert base.code_digest == "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    with pytest.raises(ImplementationError):
        resolve_implementation(f"baseline:{KERNEL10}", load_definition(K62))  # another kernel
    with pytest.raises(ImplementationError):
        resolve_implementation("no-such-solution.json", d10)


def test_solution_file_format(tmp_path):
    d10 = load_definition(K10)
    sol = {
        "name": "my_triton_v1",
        "definition": d10.name,
        "author": "someone | team",
        "spec": {"language": "triton", "entry_point": "main.py::run"},
        "sources": [
            {"path": "main.py", "content": "def run(a, b, out):\n    pass\n"},
            {"path": "util.py", "content": "X = 1\n"},
        ],
    }
    path = tmp_path / "sol.json"
    path.write_text(json.dumps(sol))
    impl = resolve_implementation(str(path), d10)
    assert impl.revision == "my_triton_v1"
    assert impl.languages == ["triton", "pytorch"]
    assert impl.destination_passing_style is True  # SOL-ExecBench's default
    assert impl.submitter == "someone | team"
    expected = (
        "sha256:"
        + hashlib.sha256(
            rfc8785.dumps(
                [
                    {"path": "main.py", "content": sol["sources"][0]["content"]},
                    {"path": "util.py", "content": "X = 1\n"},
                ]
            )
        ).hexdigest()
    )
    assert impl.code_digest == expected


# ------------------------------------------------------------------ manifest & digests

CASES = [
    {"index": 0, "id": "case-a", "axes": {"n": 4}, "tolerance": {"max_atol": 1e-5, "max_rtol": 0.05}},
    {"index": 1, "id": "case-b", "axes": {"n": 8}, "tolerance": {}},
]
IMPL = {
    "revision": "reference",
    "languages": ["pytorch"],
    "codeDigest": "sha256:" + "ab" * 32,
    "project": "KernelIndex baselines",
    "submitter": "KernelIndex",
}
ENV = {
    "product": "H200",
    "architecture": "sm_90",
    "clocks": {"lockedByHarness": False, "maxSmMHz": 1980, "maxMemoryMHz": 3201},
    "libraries": {
        "torch": "2.11.0+cu130",
        "triton": "3.6.0",
        "cuda": "13.0",
        "driver": "580.159.04",
        "python": "3.12.3",
    },
}
CORR = {"maxAbsoluteError": 0.0, "maxRelativeError": 0.0, "matchedRatio": 1.0, "hasNan": False, "hasInf": False}


def _results(medians_a=(100.0, 110.0, 105.0), medians_b=(400.0, 380.0, 420.0), status_b=st.PASSED):
    return [
        {
            "index": 0,
            "id": "case-a",
            "status": st.PASSED,
            "timer": "cuda_graph",
            "trialMediansNs": list(medians_a),
            "correctness": CORR,
        },
        {
            "index": 1,
            "id": "case-b",
            "status": status_b,
            "timer": "cuda_events",
            "trialMediansNs": list(medians_b) if status_b == st.PASSED else [None] * 3,
            "correctness": CORR,
            "detail": None if status_b == st.PASSED else "boom",
        },
    ]


def _bundle(**overrides):
    kwargs = dict(
        definition_name="062_kv_cache_update_with_rope_backward",
        cases=CASES,
        implementation=IMPL,
        environment=ENV,
        case_results=_results(),
        observed_at="2026-11-30T15:51:07.123Z",
        settings={"trials": 3},
    )
    kwargs.update(overrides)
    return build_bundle(**kwargs)


def test_bundle_shape():
    b = _bundle()
    assert set(b) == {"run", "protocol", "environment", "workload", "implementation"}
    kinds = {k: d["kind"] for k, d in b.items()}
    assert kinds == {
        "run": "BenchmarkRun",
        "protocol": "BenchmarkProtocol",
        "environment": "ExecutionEnvironment",
        "workload": "Workload",
        "implementation": "Implementation",
    }
    for doc in b.values():
        assert doc["apiVersion"] == API_VERSION == "kernelindex.dev/v1alpha1"
        assert set(doc) == {"apiVersion", "kind", "metadata", "spec"}
        assert doc["metadata"]["name"] and doc["metadata"]["title"]
    p = b["protocol"]["spec"]
    assert p["harness"]["name"] == "KernelIndex rerun harness"
    assert p["measurement"]["timer"] == "kernel_time" and p["measurement"]["primaryTimer"] == "kernelTime"
    assert p["measurement"]["primaryStatistic"] == "median"
    assert p["measurement"]["iterations"] == 50 and p["measurement"]["coldL2"] is True
    assert p["correctness"]["comparator"] == "kernelindex_allclose"
    assert p["comparability"]["family"] == "kernelindex_rerun"
    assert p["ranking"] == {"metric": "latency", "direction": "ascending"}
    hw = b["environment"]["spec"]["hardware"]
    assert hw["product"] == "NVIDIA H200" and hw["architecture"] == "sm_90" and hw["vendor"] == "nvidia"
    w = b["workload"]["spec"]
    assert w["benchmark"] == {"source": "sol-execbench", "nativeId": "062_kv_cache_update_with_rope_backward"}
    assert w["suite"] == {"caseCount": 2} and w["cases"][0]["id"] == "case-a"
    i = b["implementation"]["spec"]
    assert i["revision"] == "reference" and i["codeDigest"] == IMPL["codeDigest"]
    r = b["run"]
    assert r["metadata"]["title"] == "KernelIndex rerun · reference · 062_kv_cache_update_with_rope_backward · H200"
    s = r["spec"]
    assert s["status"] == "passed" and "statusDetail" not in s
    assert s["observedAt"] == "2026-11-30T15:51:07.123Z"
    assert s["sourceNative"]["source"] == "kernelindex"
    assert (
        s["sourceNative"]["externalId"]
        == "rerun/062_kv_cache_update_with_rope_backward/reference/H200/20261130T155107Z"
    )
    # _results() gives no kernel times: the run falls back to CUDA-event time as its primary
    assert s["timing"]["primaryTimer"] == "eventTime"
    assert s["cases"][1]["timer"] == "cuda_events"
    json.dumps(b, allow_nan=False)


def test_timing_statistics():
    s = _bundle()["run"]["spec"]
    per_case = [105.0, 400.0]  # medians over trials
    assert s["timing"]["latencyNs"]["median"] == pytest.approx(geomean(per_case), abs=1e-3)
    trials = [geomean([100.0, 400.0]), geomean([110.0, 380.0]), geomean([105.0, 420.0])]
    assert [t["latencyNs"] for t in s["timing"]["trials"]] == pytest.approx(trials, abs=1e-3)
    assert s["timing"]["spread"]["maxOverMin"] == pytest.approx(max(trials) / min(trials), abs=1e-6)
    assert s["sourceNative"]["metrics"]["latency_ms"] == pytest.approx(geomean(per_case) / 1e6)
    assert s["cases"][0]["latencyNs"] == {"median": 105.0}


def test_digests_in_run_equal_the_documents_digests():
    b = _bundle()
    spec = b["run"]["spec"]
    for key in ("protocol", "workload", "environment", "implementation"):
        assert spec[f"{key}Digest"] == digest(b[key])
        body = {k: v for k, v in b[key].items() if k != "metadata"}
        assert digest(b[key]) == "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()
    assert verify_bundle(b) == []


def test_digests_are_stable_and_exclude_metadata():
    a, b = _bundle(), _bundle()
    assert all(digest(a[k]) == digest(b[k]) for k in a)
    assert canonical_bytes(a) == canonical_bytes(b)
    renamed = json.loads(json.dumps(a["protocol"]))
    renamed["metadata"] = {"name": "other", "title": "Other", "labels": {"x": "y"}}
    assert digest(renamed) == digest(a["protocol"])
    changed = json.loads(json.dumps(a["protocol"]))
    changed["spec"]["measurement"]["iterations"] = 51
    assert digest(changed) != digest(a["protocol"])
    # the protocol does not depend on the run: same settings, same digest
    assert digest(protocol_document({"trials": 3})) == digest(a["protocol"])


def test_tampered_bundle_fails_verification():
    b = _bundle()
    b["environment"]["spec"]["hardware"]["product"] = "NVIDIA B200"
    problems = verify_bundle(b)
    assert len(problems) == 1 and problems[0].startswith("environment:")


def test_digest_rule_matches_the_reference_bundle():
    ref = json.loads(REFERENCE_MANIFEST.read_text())
    assert digest(ref["protocol"]) == ref["run"]["spec"]["protocolDigest"]
    assert digest(ref["environment"]) == ref["run"]["spec"]["environmentDigest"]


def test_failed_case_gives_failed_run_without_latency():
    b = _bundle(case_results=_results(status_b=st.RUNTIME_ERROR))
    s = b["run"]["spec"]
    assert s["status"] == "failed" and s["statusDetail"] == st.RUNTIME_ERROR
    # no latency at all rather than null (the importer wants numbers)
    assert s["timing"]["latencyNs"] == {} and s["cases"][1]["latencyNs"] == {}
    assert "latency_ms" not in s["sourceNative"]["metrics"]
    assert s["cases"][0]["latencyNs"] == {"median": 105.0}
    assert s["cases"][1]["status"] == st.RUNTIME_ERROR and s["cases"][1]["detail"] == "boom"
    assert verify_bundle(b) == []
    json.dumps(b, allow_nan=False)


def test_jcs_rejects_what_it_cannot_carry():
    for bad in (float("nan"), float("inf"), 2**53, "a\x00b"):
        with pytest.raises(CanonicalJSONError):
            canonical_bytes({"x": bad})
    with pytest.raises(CanonicalJSONError):
        _bundle(implementation={**IMPL, "revision": "bad\x00"})


def test_product_normalisation_and_architecture():
    assert normalize_product("H200") == "NVIDIA H200"
    assert normalize_product("NVIDIA H200") == "NVIDIA H200"
    assert normalize_product("nvidia  B200") == "NVIDIA B200"
    assert architecture_for("NVIDIA H200") == "sm_90"
    assert architecture_for("B200") == "sm_100"
    assert architecture_for("NVIDIA H200", (9, 0)) == "sm_90"


def test_aggregate_case_takes_worst_trial():
    ok = {"status": st.PASSED, "timer": "cuda_graph", "medianNs": 10.0, "correctness": CORR}
    bad = {
        "status": st.INCORRECT_NUMERICAL,
        "detail": "x",
        "correctness": {**CORR, "maxAbsoluteError": 0.5, "matchedRatio": 0.9},
    }
    agg = aggregate_case(0, "c", [ok, bad, ok])
    assert agg["status"] == st.INCORRECT_NUMERICAL and agg["detail"] == "x"
    assert agg["trialMediansNs"] == [10.0, None, 10.0]
    assert agg["correctness"]["maxAbsoluteError"] == 0.5 and agg["correctness"]["matchedRatio"] == 0.9


@pytest.mark.parametrize("path", sorted(RERUNS.glob("*.json")), ids=lambda p: p.name)
def test_committed_rerun_bundles_verify(path):
    b = json.loads(path.read_text())
    assert verify_bundle(b) == []
    spec = b["run"]["spec"]
    assert b["environment"]["spec"]["hardware"]["product"] == "NVIDIA H200"
    assert b["environment"]["spec"]["hardware"]["architecture"] == "sm_90"
    assert b["protocol"]["spec"]["measurement"]["trials"] >= 3
    if spec["status"] == "passed":
        assert len(spec["timing"]["trials"]) >= 3
        assert all(c["timer"] in ("cuda_graph", "cuda_events", "kernel_time") for c in spec["cases"])


# ------------------------------------------------------------------ one set of rules with the index


@pytest.mark.parametrize(
    "name",
    ["H200", "NVIDIA H200", "nvidia  h200", "B200", "NVIDIA B200", "NVIDIA H100 80GB HBM3", "GB200", "L40S", "A10G"],
)
def test_the_harness_names_products_as_the_index_does(name):
    from kernelindex import gpus

    assert normalize_product(name) == gpus.normalise_product(name)
    assert (architecture_for(name) or "") == gpus.architecture_for(gpus.normalise_product(name))


@pytest.mark.parametrize("path", sorted(RERUNS.glob("*.json")), ids=lambda p: p.name)
def test_the_index_verifies_the_harness_digests_and_groups_reruns_by_its_product(path):
    from runs.identity import run_identity
    from runs.manifests import bundle_verify

    bundle = json.loads(path.read_text())
    verified = bundle_verify(bundle)  # the index's own digest check
    for role in ("protocol", "environment", "workload", "implementation"):
        assert verified.digests[role] == digest(bundle[role])
    product = bundle["environment"]["spec"]["hardware"]["product"]
    assert run_identity(verified)["hardware"] == normalize_product(product) == "NVIDIA H200"
