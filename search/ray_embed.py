"""Bulk passage embedding on Ray Data: an Embedder whose ``encode`` fans out to an actor pool.

    from search.ray_embed import RayEmbedder
    with RayEmbedder("auto", address=None) as emb:        # a local Ray on loopback
        Engine.open("index", create=True, embedder=emb).index(["corpus/"])

``address=None`` starts a private Ray on 127.0.0.1 (no dashboard) and shuts it down on
``close()``; ``address="auto"`` or ``"ray://head:10001"`` joins a running cluster and
leaves it running. Every actor loads the model once (``search.embed.get_embedder``);
the driver only ships texts and collects vectors.

The vectors equal single-process ones: the driver forms exactly the batches the
single-process embedder would (longest text first, ``batch_size`` at a time, so each
batch pads to the same length), sends each batch to an actor as one record, and puts
the vectors back in input order. Queries (``encode_query``) run in this process.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .embed import DIM, MODEL_ID, _check_batch_size, _check_texts, _length_order, get_embedder
from .errors import MissingExtraError, SearchError

log = logging.getLogger(__name__)
#: How many times a local Ray is started before giving up (its raylet has a fixed 30 s to register).
LOCAL_STARTS = 2

Progress = Callable[[int], None]


class _EmbedActor:
    """One Ray actor: holds the model, encodes one pre-formed batch per record."""

    def __init__(self, spec: str) -> None:
        self.embedder = get_embedder(spec)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out_b, out_v = [], []
        for b, texts in zip(batch["b"], batch["texts"], strict=True):
            texts = [str(t) for t in texts]
            vecs = self.embedder.encode(texts, batch_size=max(1, len(texts)))
            out_b.append(int(b))
            out_v.append(np.ascontiguousarray(vecs, dtype=np.float32).tobytes())
        return {"b": np.asarray(out_b, dtype=np.int64), "vecs": np.asarray(out_v, dtype=object)}


def parse_workers(spec: str) -> str | None:
    """``ray`` → None (a local Ray), ``ray:ADDRESS`` → ADDRESS; anything else is a ValueError."""
    if spec == "ray":
        return None
    if spec.startswith("ray:") and spec[4:]:
        return spec[4:]
    raise ValueError(f"--workers {spec!r}: use ray or ray:ADDRESS (e.g. ray:auto, ray:ray://head:10001)")


class RayEmbedder:
    """An :class:`search.embed.Embedder` that encodes passages on a Ray actor pool."""

    def __init__(
        self,
        backend: str = "auto",
        *,
        address: str | None = None,
        actors: int | None = None,
        batch_size: int = 64,
        cpus_per_actor: float = 1.0,
    ) -> None:
        _check_batch_size(batch_size)
        self.spec = backend
        self.address = address
        self.batch_size = batch_size
        self.cpus_per_actor = cpus_per_actor
        self._actors = actors
        self.model_id = "hash" if backend == "hash" else MODEL_ID
        self.dim = DIM
        self.backend = f"ray+{backend}"
        self._local: Any = None
        self._lock = threading.Lock()
        self._started = False

    # -- Ray lifecycle -------------------------------------------------------------------
    def _ray(self) -> Any:
        try:
            import ray
        except ImportError as e:
            raise MissingExtraError('bulk embedding on Ray needs Ray Data: pip install "search[ray]"') from e
        if not ray.is_initialized():
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            # Ray waits 30 s for its control store to come up; on a busy 2-core machine
            # that has been seen to time out, so give it longer.
            os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
            }
            if self.address is None:
                kwargs["_node_ip_address"] = "127.0.0.1"  # a private, loopback-only Ray
            # A local Ray waits a fixed 30 s for its raylet to register, which a busy 2-core
            # machine has missed: a second start usually succeeds.
            for attempt in range(1 if self.address else LOCAL_STARTS):
                try:
                    ray.init(address=self.address, **kwargs)
                    break
                except Exception as e:  # Ray raises ConnectionError, RuntimeError, ValueError here
                    ray.shutdown()
                    if attempt + 1 < (1 if self.address else LOCAL_STARTS):
                        continue
                    where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
                    raise SearchError(
                        f"cannot start {where} ({type(e).__name__}: {e}): check --workers"
                    ) from e
            self._started = self.address is None
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False  # the engine reports progress itself
        ctx.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        return ray

    def close(self) -> None:
        """Shut down the Ray this embedder started (a joined cluster keeps running)."""
        if self._started:
            import ray

            ray.shutdown()
            self._started = False

    def __enter__(self) -> RayEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- encoding ------------------------------------------------------------------------
    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        """float32 ``(len(texts), dim)``, L2-normalised rows; ``progress(n)`` as batches return."""
        _check_texts(texts)
        _check_batch_size(batch_size)
        if len(texts) == 0:
            return np.zeros((0, self.dim), np.float32)
        ray = self._ray()
        order = _length_order([len(t) for t in texts])
        batches = [order[b : b + batch_size] for b in range(0, len(order), batch_size)]
        items = [{"b": i, "texts": [texts[j] for j in idx]} for i, idx in enumerate(batches)]
        cpus = ray.cluster_resources().get("CPU", 1.0)
        actors = self._actors or max(1, min(len(batches), int(cpus // self.cpus_per_actor)))
        threads = max(1, int(self.cpus_per_actor))
        ds = ray.data.from_items(items, override_num_blocks=min(len(items), actors * 4))
        ds = ds.map_batches(
            _EmbedActor,
            fn_constructor_kwargs={"spec": self.spec},
            batch_size=1,  # one pre-formed model batch per call
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=self.cpus_per_actor,
            runtime_env={"env_vars": {"SEARCH_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}},
        )
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        seen = 0
        for rows in ds.iter_batches(batch_size=None, batch_format="numpy"):
            for b, raw in zip(rows["b"], rows["vecs"], strict=True):
                idx = batches[int(b)]
                out[idx] = np.frombuffer(raw, dtype=np.float32).reshape(len(idx), self.dim)
                seen += 1
                if progress is not None:
                    progress(len(idx))
        if seen != len(batches):
            raise SearchError(f"Ray returned {seen} of {len(batches)} embedding batches: run the index again")
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """Queries are encoded here, not on Ray (one short text)."""
        if self._local is None:
            with self._lock:
                if self._local is None:
                    self._local = get_embedder(self.spec)
        return self._local.encode_query(text)

    def info(self) -> dict[str, Any]:
        return {
            "model_id": self.model_id,
            "backend": self.backend,
            "dim": self.dim,
            "ray_address": self.address or "local",
        }
