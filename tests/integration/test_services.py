"""Errors about SCHOLARFLOW_DATABASE_URL / SCHOLARFLOW_REDIS_URL: one line, the variable named,
advice that fits a wrong URL, and never any piece of a password, even from a malformed URL
whose pieces the driver quotes back."""

from __future__ import annotations

from pathlib import Path

import pytest

from scholarflow.storage.services import failed, failure_reason, unreachable
from scholarflow.url_secrets import redact_url

DB = "SCHOLARFLOW_DATABASE_URL"
REDIS = "SCHOLARFLOW_REDIS_URL"

# (URL, its password's distinctive parts): each malformed in its own way.
PG_URLS = [
    ("postgresql://user:Zq7%zzTOPSECRET@127.0.0.1:5432/test", ["Zq7", "TOPSECRET"]),
    ("postgresql://user:Zq7x@Word9y@127.0.0.1/test", ["Zq7x", "Word9y"]),  # unencoded @
    ("postgresql://user:Pa7x/Ss9yQ@127.0.0.1/test", ["Pa7x", "Ss9yQ"]),  # unencoded /
    ("postgresql://user:Qm4x?Hq8w@127.0.0.1/test", ["Qm4x", "Hq8w"]),  # unencoded ?
    ("postgresql://127.0.0.1:5432/test?password=Qv8%zzSEKRIT", ["Qv8", "SEKRIT"]),
    ("postgresql://127.0.0.1:5432/test?sslpassword=SslPw4Key&sslmode=bogus", ["SslPw4Key"]),
    ("host=127.0.0.1 password=KvSecret9", ["KvSecret9"]),  # libpq key=value, not a URL
]
REDIS_URLS = [
    ("redis://:Rd5%zzSECRET@127.0.0.1:6379/0", ["Rd5", "SECRET"]),
    ("redis://:Rp4x/Ss8yQ@127.0.0.1:6379/0", ["Rp4x", "Ss8yQ"]),
    ("redis://user:Rw3x@Word7z@127.0.0.1:6379/0", ["Rw3x", "Word7z"]),
]
# How drivers quote a malformed URL's pieces: whole tokens, or split where they parse.
QUOTED = {"Zq7": "Zq7%zzTOPSECRET", "TOPSECRET": "Zq7%zzTOPSECRET", "Qv8": "Qv8%zzSEKRIT",
          "SEKRIT": "Qv8%zzSEKRIT", "Rd5": "Rd5%zzSECRET", "SECRET": "Rd5%zzSECRET"}


class DriverError(Exception):
    """A driver error quoting the URL back, as libpq and redis-py do with malformed ones."""


@pytest.mark.parametrize(("url", "pieces"), PG_URLS + REDIS_URLS)
def test_messages_never_show_a_piece_of_the_password(url: str, pieces: list[str]) -> None:
    said = " and ".join(f'"{QUOTED.get(p, p)}"' for p in pieces)
    quoted = DriverError(f'invalid token: "{url}"\nnear {said}')
    messages = [str(unreachable("PostgreSQL", DB, url, quoted)),
                str(failed("PostgreSQL", DB, url, quoted)),
                failure_reason(quoted, url), redact_url(url)]
    for message in messages:
        assert "\n" not in message
        assert not [p for p in pieces if p in message], message


def test_the_redacted_url_keeps_everything_else() -> None:
    assert redact_url("postgresql://me:pw@db.example:5432/app?sslmode=require&password=x") == (
        "postgresql://me:***@db.example:5432/app?sslmode=require&password=***")
    assert redact_url("postgresql://me@db/app?options=-csearch_path%3Dx") == (
        "postgresql://me@db/app?options=-csearch_path%3Dx")
    assert redact_url("redis://:pw@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    # A short password is scrubbed from a message only as a whole word, not inside others.
    assert failure_reason(DriverError('role "ab" does not exist'), "postgresql://ab:e@h/db") == (
        'role "ab" does not exist')
    assert failure_reason(DriverError('bad value "e"'), "postgresql://ab:e@h/db") == (
        'bad value "***"')


async def test_the_cli_says_one_line_without_the_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from scholarflow.cli import main as cli

    # In this process (a subprocess each would cost ~3 s): `cli.run` is main's error handling.
    for name in (DB, REDIS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCHOLARFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    cases = [(args, pieces, DB, url)
             for url, pieces in PG_URLS for args in (["sessions", "list"], ["ask", "hi"])]
    cases += [(["ask", "hi"], pieces, REDIS, url) for url, pieces in REDIS_URLS]
    for args, pieces, variable, url in cases:
        with monkeypatch.context() as env:
            env.setenv(variable, url)
            code = await cli.run(cli._parser().parse_args(args))
        out, err = capsys.readouterr()
        described = f"{args} {variable}={url} -> {code}\n{out}{err}"
        assert code != 0 and len(err.splitlines()) == 1, described
        line = err.splitlines()[0]
        assert line.startswith("error: ") and variable in line, described
        assert not [p for p in pieces if p in out + err], described
        assert "unexpected" not in line, described


@pytest.mark.parametrize(
    ("url", "reason"),
    [("postgresql://postgres@127.0.0.1:5432/sf_no_such_database",
      'database "sf_no_such_database" does not exist'),
     ("postgresql://sf_no_such_role@127.0.0.1:5432/test", 'role "sf_no_such_role" does not exist'),
     ("postgresql://postgres@127.0.0.1:5432/test?sslmode=bogus", 'invalid sslmode value: "bogus"')],
    ids=["database", "role", "sslmode"],
)
async def test_advice_fits_a_wrong_url(url: str, reason: str, postgres_url: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from scholarflow.errors import BackendUnavailableError
    from scholarflow.storage.checkpoints import open_checkpointer
    from scholarflow.storage.postgres_cache import PostgresSummaryCache

    monkeypatch.setenv(DB, url)
    with pytest.raises(BackendUnavailableError) as opened:
        async with open_checkpointer():  # the sessions: threads
            pass
    cache = PostgresSummaryCache(url)
    with pytest.raises(BackendUnavailableError) as checked:
        await cache.check()
    await cache.close()
    for info in (opened, checked):
        assert reason in str(info.value)
        assert str(info.value).endswith("; check the URL in SCHOLARFLOW_DATABASE_URL and that "
                                        "PostgreSQL is running, or unset it")


async def test_advice_fits_a_redis_db_out_of_range(redis_url: str) -> None:
    from scholarflow.errors import BackendUnavailableError
    from scholarflow.storage.redis_cache import RedisSummaryCache

    cache = RedisSummaryCache(redis_url.rsplit("/", 1)[0] + "/99")
    with pytest.raises(BackendUnavailableError) as info:
        await cache.check()
    await cache.close()
    assert str(info.value).endswith(
        "DB index is out of range; check the URL in SCHOLARFLOW_REDIS_URL and that Redis is "
        "running, or unset it")
