"""The query path under hostile input: filters of the wrong shape, a damaged index, a bad
question file, out-of-range settings. Each is a user's mistake (one line, a 4xx, a tool
error) or the index's state (one line naming it and what to do), never a traceback or a 500.

In-process (FastAPI's TestClient, click's CliRunner) over the seeds indexed with the fake
HashEmbedder.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "seeds"
LOCAL = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def seed_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from search.embed import HashEmbedder
    from search.engine import Engine

    path = tmp_path_factory.mktemp("hostq") / "idx"
    with Engine.open(path, create=True, embedder=HashEmbedder()) as e:
        e.index([SEEDS])
    return path


@pytest.fixture
def index_copy(seed_index: Path, tmp_path: Path) -> Path:
    idx = tmp_path / "idx"
    shutil.copytree(seed_index, idx)
    return idx


@pytest.fixture
def client(seed_index: Path) -> Iterator[TestClient]:
    from search.embed import HashEmbedder
    from search.engine import Engine
    from search.server import create_app

    with Engine.open(seed_index, embedder=HashEmbedder()) as e:
        with TestClient(create_app(e), base_url=LOCAL, raise_server_exceptions=False) as c:
            yield c


# -- a "where" filter that is neither a string nor a list ------------------------------------
@pytest.mark.parametrize("where", [5, True, 1.5])
def test_a_where_filter_of_the_wrong_type_is_400_bad_filter(client: TestClient, where: Any) -> None:
    """{"filters": {"where": 5}} raised a TypeError inside Filters: a 500."""
    r = client.post("/ask", json={"question": "who scored", "filters": {"where": where}})
    assert r.status_code == 400, r.text
    body = r.json()["error"]
    assert body["code"] == "bad_filter" and "where" in body["message"], body
    assert "\n" not in body["message"]


def test_filters_of_a_where_that_is_no_string_or_list_is_a_filter_error() -> None:
    from search.errors import FilterError
    from search.filters import Filters

    with pytest.raises(FilterError, match="where"):
        Filters.of({"where": 5})
    assert Filters.of({"where": "category=football"}).fields() == {"category"}
