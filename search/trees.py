"""Boosted trees stored as data and run with numpy: the quote's and the values' LambdaRank
trees (``search/answer/pick_rank.json``, ``ranker_rank.json``), the short answer's confidence
(``search/answer/confidence_trees.json``) and the order of the search head
(``search/data/rerank_trees.json`` for questions, ``rerank_trees_statements.json`` otherwise).

The fitting scripts (``scripts/fit_answer.py``, ``scripts/fit_rerank.py``) fit scikit-learn's
``HistGradientBoostingClassifier`` or LightGBM's ``LGBMRanker`` and write its trees to a JSON
file with :func:`export` or :func:`export_lightgbm`; a query reads the file and runs every
tree at once, one level per step (:class:`Trees`), so neither library is imported on the
query path. A node sends a row left when its feature is at most the node's threshold, as
both libraries' predictors do for a value that is not missing (the features never are).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np


class Trees:
    """The sum of the trees' leaf values for each row, plus the baseline (a log-odds)."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.features: tuple[str, ...] = tuple(d["features"])
        self.baseline = float(d["baseline"])
        self.depth = int(d["depth"])
        self.roots = np.asarray(d["roots"], np.int64)
        self.threshold = np.asarray(d["threshold"], np.float64)
        self.value = np.asarray(d["value"], np.float64)
        leaf = np.asarray(d["leaf"], bool)
        me = np.arange(len(leaf))
        # A leaf sends every row back to itself, so a step needs no test for leaves.
        # Node i's left child is at [i], its right child at [i + nodes].
        self._next = np.concatenate(
            [
                np.where(leaf, me, np.asarray(d["left"], np.int64)),
                np.where(leaf, me, np.asarray(d["right"], np.int64)),
            ]
        )
        self._feature = np.where(leaf, 0, np.asarray(d["feature"], np.int64))

    def raw(self, rows: list[dict[str, float]]) -> np.ndarray:
        if not rows or not len(self.roots):
            return np.full(len(rows), self.baseline)
        return self.raw_matrix(np.array([[r.get(k, 0.0) for k in self.features] for r in rows], np.float64))

    def raw_matrix(self, x: np.ndarray) -> np.ndarray:
        """:meth:`raw` for rows already laid out in :attr:`features` order."""
        if not len(x) or not len(self.roots):
            return np.full(len(x), self.baseline)
        at = np.tile(self.roots, (len(x), 1))  # each row's node in each tree
        flat = np.ascontiguousarray(x, np.float64).ravel()
        offset = (np.arange(len(x)) * x.shape[1])[:, None]
        nodes = len(self.value)
        for _ in range(self.depth):
            right = flat.take(offset + self._feature.take(at)) > self.threshold.take(at)
            at = self._next.take(at + nodes * right)
        return np.asarray(self.baseline + self.value.take(at).sum(axis=1))

    def proba(self, rows: list[dict[str, float]]) -> np.ndarray:
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(self.raw(rows), -30.0, 30.0))))


@lru_cache(maxsize=8)
def load(package: str, name: str) -> Trees | None:
    """The trees in the file ``name`` of ``package``, or None when no such file ships."""
    f = resources.files(package).joinpath(name)
    if not f.is_file():
        return None
    return Trees(json.loads(f.read_text(encoding="utf-8")))


def export_lightgbm(model: Any, features: tuple[str, ...], doc: str) -> dict[str, Any]:
    """A fitted LightGBM model (``LGBMRanker``, a LambdaRank objective) as :class:`Trees` data.
    Its raw score orders one question's rows; it is not a probability (:meth:`Trees.raw`).
    LightGBM sends a row left when its feature is at most the threshold, as :class:`Trees`
    does; a tree of one leaf becomes one leaf node."""
    roots: list[int] = []
    cols: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right", "leaf", "value")}
    depth = 0
    for info in model.booster_.dump_model()["tree_info"]:
        base = len(cols["leaf"])
        roots.append(base)
        # Number the nodes depth first: a split, then its left subtree, then its right.
        stack: list[tuple[dict[str, Any], int, int, str]] = [(info["tree_structure"], 0, -1, "")]
        while stack:
            node, level, parent, side = stack.pop()
            me = len(cols["leaf"])
            if parent >= 0:
                cols[side][parent] = me
            depth = max(depth, level)
            if "leaf_value" in node:
                cols["feature"].append(0)
                cols["threshold"].append(0.0)
                cols["leaf"].append(1)
                cols["value"].append(round(float(node["leaf_value"]), 6))
                cols["left"].append(me)
                cols["right"].append(me)
                continue
            if node.get("decision_type", "<=") != "<=":
                raise ValueError(f"a split of kind {node.get('decision_type')!r} cannot be stored")
            cols["feature"].append(int(node["split_feature"]))
            cols["threshold"].append(float(node["threshold"]))
            cols["leaf"].append(0)
            cols["value"].append(0.0)
            cols["left"].append(-1)
            cols["right"].append(-1)
            stack.append((node["right_child"], level + 1, me, "right"))
            stack.append((node["left_child"], level + 1, me, "left"))
    return {
        "_doc": doc,
        "features": list(features),
        "baseline": 0.0,
        "depth": depth,
        "roots": roots,
        **cols,
    }


def export(model: Any, features: tuple[str, ...], doc: str) -> dict[str, Any]:
    """A fitted binary ``HistGradientBoostingClassifier`` as :class:`Trees` data."""
    roots: list[int] = []
    cols: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right", "leaf", "value")}
    depth = 0
    for (tree,) in model._predictors:
        nodes, base = tree.nodes, len(cols["leaf"])
        roots.append(base)
        depth = max(depth, int(nodes["depth"].max()))
        cols["feature"] += [int(v) for v in nodes["feature_idx"]]
        cols["threshold"] += [float(v) for v in nodes["num_threshold"]]
        cols["left"] += [base + int(v) for v in nodes["left"]]
        cols["right"] += [base + int(v) for v in nodes["right"]]
        cols["leaf"] += [int(v) for v in nodes["is_leaf"]]
        cols["value"] += [round(float(v), 6) for v in nodes["value"]]
    baseline = float(np.asarray(model._baseline_prediction).reshape(-1)[0])
    return {
        "_doc": doc,
        "features": list(features),
        "baseline": baseline,
        "depth": depth,
        "roots": roots,
        **cols,
    }
