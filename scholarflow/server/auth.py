"""Who is asking, and what of the server's threads, runs and assistants is theirs.

`auth` is the langgraph_sdk `Auth` that langgraph.json names:

- `authenticate` takes the person's token from `Authorization: Bearer TOKEN`
  (langgraph_sdk, Studio's and agent-chat-ui's custom headers) or `x-api-key:
  TOKEN` (what `get_client(api_key=...)` and agent-chat-ui's API key field
  send) and looks it up (scholarflow/storage/people.py). No token, a wrong one
  or a revoked one: 401 with one line. `SCHOLARFLOW_AUTH=off`: no token is
  asked for and every request is the local person's.
- The `@auth.on` handlers make threads, their runs and checkpoints, crons and
  assistants their creator's: each is stamped `owner` in its metadata when
  made, and every read, search, update or delete is filtered by it, so another
  person's thread is, to them, missing (404), not forbidden. The graph's own
  assistant is everyone's to use and nobody's to change. The store is split
  by person: a namespace always starts with its person's name.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

from scholarflow.settings import get_settings
from scholarflow.storage.people import LOCAL_PERSON, person_by_token

auth = Auth()

REDACTED = "sf_redacted"  # what a token in a URL becomes (routes.py)
NO_TOKEN = ("no token: send 'Authorization: Bearer <token>' (the operator gives each person "
            "one with `scholarflow users add NAME`)")
IN_URL = ("no token in the headers: a token goes in 'Authorization: Bearer <token>', never in "
          "the URL (the one sent there was not used; ask the operator for a new one)")
BAD_TOKEN = "invalid or revoked token: ask the operator for a new one"

get_settings().server_auth  # noqa: B018 - a bad SCHOLARFLOW_AUTH stops the server starting


def _unauthorized(detail: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(
        status_code=401, detail=detail, headers={"WWW-Authenticate": "Bearer"})


def presented_token(headers: dict[bytes, bytes]) -> str | None:
    """The token a request carries in its headers, or None."""
    authorization = headers.get(b"authorization", b"").decode("latin-1").strip()
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    api_key = headers.get(b"x-api-key", b"").decode("latin-1").strip()
    return api_key or None


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes], path: str,
                       query_params: Any) -> Auth.types.MinimalUserDict:
    if not get_settings().server_auth:
        return {"identity": LOCAL_PERSON, "display_name": LOCAL_PERSON}
    token = presented_token(headers)
    if token is None:
        in_url = REDACTED in str(query_params) or REDACTED in path
        raise _unauthorized(IN_URL if in_url else NO_TOKEN)
    found = await person_by_token(token)
    if found is None:
        raise _unauthorized(BAD_TOKEN)
    name, _groups = found
    return {"identity": name, "display_name": name}


def _stamp(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Set `owner` in the value's metadata (whatever the client put there): in place, since
    the server goes on with the dict it passed."""
    if not isinstance(value, dict):
        return
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata["owner"] = ctx.user.identity
    elif metadata is None:
        value["metadata"] = {"owner": ctx.user.identity}


@auth.on
async def owned(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Threads, runs, checkpoints and crons: stamped on creation, filtered always."""
    if ctx.action in ("create", "create_run", "update"):
        _stamp(ctx, value)
    return {"owner": ctx.user.identity}


@auth.on.assistants
async def assistants(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """Everyone may use the graph's assistants; only an assistant's creator changes it."""
    if ctx.action in ("read", "search"):
        return None
    if ctx.action == "create":
        _stamp(ctx, value)
    return {"owner": ctx.user.identity}


@auth.on.store()
async def own_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    """A store namespace is always under its person's name."""
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != ctx.user.identity:
        value["namespace"] = (ctx.user.identity, *namespace)
