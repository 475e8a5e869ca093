"""The process's settings: defaults, parsing, one-line errors, masked secrets, one reader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scholarflow import Context
from scholarflow.errors import ConfigurationError
from scholarflow.settings import SETTINGS, Secret, Settings, get_settings
from tests.conftest import scholarflow_environment

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_when_nothing_is_set() -> None:
    settings = Settings()
    assert settings.model == "gpt-4o-mini"
    assert settings.openai_base_url is None and settings.openai_api_key is None
    assert settings.max_context_tokens is None  # the server's report decides
    assert settings.llm_timeout_seconds == 120.0
    assert settings.max_concurrent_llm_calls == 10 and settings.adaptive_llm_limit is True
    assert settings.home == Path(".scholarflow")
    assert settings.tavily_url == "https://api.tavily.com"
    assert settings.bocha_url == "https://api.bochaai.com"
    assert settings.embedding_batch_size == 32
    assert settings.debug is False
    for name in ("tavily_api_key", "bocha_api_key", "database_url", "redis_url", "es_url",
                 "recall_api_url", "embedding_model", "embedding_base_url", "rerank_model",
                 "rerank_base_url"):
        assert getattr(settings, name) is None, name


def test_values_are_parsed_and_blank_is_unset() -> None:
    settings = Settings({
        "SCHOLARFLOW_MODEL": " qwen-plus ", "SCHOLARFLOW_MAX_CONTEXT_TOKENS": " 8192 ",
        "SCHOLARFLOW_LLM_TIMEOUT": "0.5", "SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS": "4",
        "SCHOLARFLOW_ADAPTIVE_LLM_LIMIT": "false", "SCHOLARFLOW_HOME": "~/sf-data",
        "SCHOLARFLOW_TAVILY_URL": "http://127.0.0.1:9/", "SCHOLARFLOW_EMBEDDING_BATCH_SIZE": "10",
        "SCHOLARFLOW_DEBUG": "0", "OPENAI_BASE_URL": "   ", "SCHOLARFLOW_ES_URL": "",
    })
    assert settings.model == "qwen-plus"
    assert settings.max_context_tokens == 8192
    assert settings.llm_timeout_seconds == 0.5
    assert settings.max_concurrent_llm_calls == 4 and settings.adaptive_llm_limit is False
    assert settings.home == Path("~/sf-data").expanduser() != Path("~/sf-data")
    assert settings.tavily_url == "http://127.0.0.1:9"  # joined with paths later
    assert settings.embedding_batch_size == 10
    assert settings.debug is True  # any value at all, as before
    assert settings.openai_base_url is None and settings.es_url is None
    assert not settings.is_set(Settings.openai_base_url) and settings.is_set(Settings.home)
    assert Settings({"SCHOLARFLOW_ADAPTIVE_LLM_LIMIT": "1"}).adaptive_llm_limit is True


@pytest.mark.parametrize(("variable", "value", "rule"), [
    ("SCHOLARFLOW_LLM_TIMEOUT", "soon", "a number of seconds above 0"),
    ("SCHOLARFLOW_LLM_TIMEOUT", "0", "a number of seconds above 0"),
    ("SCHOLARFLOW_LLM_TIMEOUT", "nan", "a number of seconds above 0"),
    ("SCHOLARFLOW_MAX_CONTEXT_TOKENS", "8k", "the model's context window in tokens"),
    ("SCHOLARFLOW_MAX_CONTEXT_TOKENS", "²", "the model's context window in tokens"),
    ("SCHOLARFLOW_MAX_CONCURRENT_LLM_CALLS", "-3", "a whole number of at least 1"),
    ("SCHOLARFLOW_ADAPTIVE_LLM_LIMIT", "yes", "0 or 1"),
    ("SCHOLARFLOW_EMBEDDING_BATCH_SIZE", "0", "a whole number of at least 1"),
    ("SCHOLARFLOW_BOCHA_URL", "ftp://\nhost", "an http(s) URL"),
])
def test_a_bad_value_is_one_line_naming_the_variable_and_the_fix(
    variable: str, value: str, rule: str
) -> None:
    (setting,) = [s for s in SETTINGS if s.env == variable]
    settings = Settings({variable: value})
    with pytest.raises(ConfigurationError) as raised:
        getattr(settings, setting.name)
    message = str(raised.value)
    assert "\n" not in message, message
    assert message.startswith(f"{variable} must be {rule}"), message
    assert message.endswith(f"not {value!r}: fix or unset {variable}"), message
    # Read when used: the other settings still work, as does a command that needs none.
    assert settings.model == "gpt-4o-mini"
    assert f"{setting.name}=" in repr(settings)


def test_a_bad_endpoint_error_hides_the_urls_password() -> None:
    settings = Settings({"SCHOLARFLOW_TAVILY_URL": "ftp://user:Pw9Secret@proxy:21"})
    with pytest.raises(ConfigurationError, match="SCHOLARFLOW_TAVILY_URL must be") as raised:
        _ = settings.tavily_url
    assert "Pw9Secret" not in str(raised.value)


def test_secrets_and_url_passwords_never_show_in_a_repr() -> None:
    secrets = {"OPENAI_API_KEY": "sk-Kq8secretvalue", "TAVILY_API_KEY": "tvly-Tq8secretvalue",
               "BOCHA_API_KEY": "Bq8secretvalue"}
    settings = Settings({**secrets, "SCHOLARFLOW_DATABASE_URL": "postgresql://u:Dq8pass@db/sf",
                         "SCHOLARFLOW_REDIS_URL": "redis://:Rq8pass@cache:6379/0"})
    shown = [repr(settings), str(settings)]
    for name in ("openai_api_key", "tavily_api_key", "bocha_api_key"):
        key = getattr(settings, name)
        assert isinstance(key, Secret)
        shown += [repr(key), str(key), f"{key}", repr([key])]
    for text in shown:
        for secret in [*secrets.values(), "Dq8pass", "Rq8pass"]:
            assert secret not in text, text
    assert "database_url='postgresql://u:***@db/sf'" in repr(settings)  # still says which
    assert settings.openai_api_key is not None
    assert settings.openai_api_key.get_secret_value() == "sk-Kq8secretvalue"
    with pytest.raises(AttributeError):
        settings.model = "other"


def test_get_settings_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    scholarflow_environment(monkeypatch, SCHOLARFLOW_MODEL="deepseek-chat")
    first = get_settings()
    assert first.model == "deepseek-chat" and get_settings() is first  # parsed once
    monkeypatch.setenv("SCHOLARFLOW_MODEL", "qwen-plus")
    assert get_settings().model == "qwen-plus"  # never stale: nothing to reset
    monkeypatch.delenv("SCHOLARFLOW_MODEL")
    assert get_settings().model == "gpt-4o-mini"


def test_the_context_takes_its_defaults_from_the_settings_and_keeps_what_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scholarflow_environment(monkeypatch, SCHOLARFLOW_MODEL="env-model",
                            OPENAI_BASE_URL="http://127.0.0.1:9/v1",
                            OPENAI_API_KEY=" sk-from-env ", BOCHA_API_KEY="b-env-key")
    ctx = Context()
    assert (ctx.model_name, ctx.openai_api_base, ctx.openai_api_key) == (
        "env-model", "http://127.0.0.1:9/v1", "sk-from-env")
    assert (ctx.search_engine, ctx.search_engine_api_key) == ("bocha", "b-env-key")
    given = Context(model_name="m", openai_api_base="http://127.0.0.1:8/v1",
                    openai_api_key="sk-given", search_engine="tavily")
    assert (given.model_name, given.openai_api_base, given.openai_api_key) == (
        "m", "http://127.0.0.1:8/v1", "sk-given")
    assert (given.search_engine, given.search_engine_api_key) == ("tavily", None)


def test_the_readme_lists_every_variable() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    listed = {name for cell in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell)}
    assert listed == {s.env for s in SETTINGS}


# Reads of the environment that are not scholarflow's configuration: scrub.py masks every
# secret-looking variable, known or not; tokens.py and lexicon.py follow tiktoken's and
# XDG's own variables exactly as their owners read them; ingest/ocr.py passes the
# environment on to Tesseract, with its thread count set.
NOT_CONFIGURATION = {"settings.py", "scrub.py", "tokens.py", "retrieval/index/lexicon.py",
                     "ingest/ocr.py"}


def test_only_settings_reads_the_environment() -> None:
    package = ROOT / "scholarflow"
    readers = {str(path.relative_to(package)) for path in package.rglob("*.py")
               if re.search(r"os\.environ|getenv\(", path.read_text(encoding="utf-8"))}
    assert readers == NOT_CONFIGURATION
