"""The library over HTTP: the routes langgraph.json mounts beside LangGraph's own (`http.app`).

The server's auth (auth.py) protects them as it does LangGraph's
(`enable_custom_route_auth`): a request is a person's, and a knowledge base
is named as that person names it (retrieval/owners.py): `lab` is theirs,
another's shared with them is `lab?owner=ada`. What is neither is missing to
them (404); one shared with them for reading is 403 to change. Every answer
is JSON; every refusal is `{"detail": "<one line>"}`.

    GET    /whoami                          who the token is
    GET    /kbs                             the knowledge bases one may read (`kb list`)
    GET    /kbs/{name}/documents            its documents (`kb docs`)
    POST   /kbs/{name}/documents            upload PDF, Markdown, text (multipart): 202, a job
    DELETE /kbs/{name}/documents/{doc_id}   remove a document (`kb remove`)
    GET    /kbs/{name}/shares               who else may read it (the owner only)
    POST   /kbs/{name}/shares               {"people": [...], "groups": [...], "revoke": false}
    GET    /ingest-jobs                     one's upload jobs, newest first
    GET    /ingest-jobs/{job_id}            one job's status and results, to poll

The app also keeps tokens out of the server's log: a token-shaped string in a
request's URL (query string or path) is replaced before anything logs it,
and the request is refused as having no token (auth.py).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from scholarflow.errors import InputError, ScholarflowError
from scholarflow.retrieval.kb import DocumentNotFoundError, KnowledgeBaseNotFoundError
from scholarflow.retrieval.owners import (
    Person,
    ReadOnlyKnowledgeBaseError,
    missing,
    person_of,
    readable,
    share,
    shared_with,
    shares_of,
    shown_name,
    split_stored,
    visible,
    writable,
)
from scholarflow.server.auth import REDACTED
from scholarflow.server.jobs import Job, create_job, get_job, list_jobs, start
from scholarflow.server.uploads import UploadError, receive_files
from scholarflow.settings import get_settings
from scholarflow.storage.paths import home_path
from scholarflow.storage.people import groups_of

logger = logging.getLogger(__name__)

_TOKEN_IN_URL = re.compile(rb"sf_[A-Za-z0-9_-]{43}")
Handler = Callable[[Request], Awaitable[JSONResponse]]


class RedactTokensInUrls:
    """ASGI middleware: a token in the URL never reaches a log line (or a handler)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            query = scope.get("query_string", b"")
            raw_path = scope.get("raw_path") or scope.get("path", "").encode()
            if _TOKEN_IN_URL.search(query) or _TOKEN_IN_URL.search(raw_path):
                scope = dict(scope)
                scope["query_string"] = _TOKEN_IN_URL.sub(REDACTED.encode(), query)
                scope["raw_path"] = _TOKEN_IN_URL.sub(REDACTED.encode(), raw_path)
                scope["path"] = _TOKEN_IN_URL.sub(REDACTED.encode(),
                                                  scope["path"].encode()).decode()
        await self.app(scope, receive, send)


def refusal(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": " ".join(detail.split())}, status_code=status)


def _person(request: Request) -> Person:
    if "user" not in request.scope:
        raise PermissionError("auth")
    return person_of({"configurable": {"langgraph_auth_user": request.user}})


def handled(fn: Callable[[Request, Person], Awaitable[JSONResponse]]) -> Handler:
    """A route: the person asking, and every failure one JSON line with its status."""
    async def route(request: Request) -> JSONResponse:
        try:
            return await fn(request, _person(request))
        except UploadError as exc:
            return refusal(exc.status, exc.detail)
        except PermissionError:
            return refusal(401, "this server's routes need its auth: langgraph.json names it "
                                "(auth, http.enable_custom_route_auth)")
        except (KnowledgeBaseNotFoundError, DocumentNotFoundError) as exc:
            return refusal(404, str(exc))
        except ReadOnlyKnowledgeBaseError as exc:
            return refusal(403, str(exc))
        except InputError as exc:
            return refusal(400, str(exc))
        except ScholarflowError as exc:  # a backend that is down or misconfigured
            from scholarflow.scrub import scrub_secrets

            return refusal(503, scrub_secrets(str(exc)))
        except Exception as exc:
            logger.exception("library route %s failed", request.url.path)
            return refusal(500, f"internal error ({type(exc).__name__}); the server's log "
                                "says more")
    return route


def _ref(request: Request) -> str:
    """The knowledge base as the person names it: `name`, or `owner/name` with ?owner=."""
    name = request.path_params["name"]
    owner = request.query_params.get("owner")
    return f"{owner}/{name}" if owner else name


async def whoami(request: Request, person: Person) -> JSONResponse:
    groups = [] if person.is_local else list(await groups_of(person.name))
    return JSONResponse({"name": person.name, "groups": groups})


async def list_kbs(request: Request, person: Person) -> JSONResponse:
    from scholarflow.retrieval.kb_registry import describe_knowledge_bases

    infos = await describe_knowledge_bases()
    shared = [] if person.is_local else await shared_with(person)
    seen = set(visible(person, [i.name for i in infos], shared))
    rows = []
    for info in infos:
        if info.name in seen:
            owner, _name = split_stored(info.name)
            rows.append({"name": shown_name(person, info.name), "owner": owner,
                         "documents": info.documents, "chunks": info.chunks,
                         "backend": info.backend, "writable": person.is_local
                         or owner == person.name})
    return JSONResponse(rows)


async def list_documents(request: Request, person: Person) -> JSONResponse:
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    ref = _ref(request)
    stored = await readable(person, ref)
    try:
        kb = await open_knowledge_base(stored)
    except KnowledgeBaseNotFoundError:
        raise missing(ref) from None
    return JSONResponse([
        {"doc_id": d.doc_id, "title": d.title, "year": d.year, "pages": d.pages,
         "chunks": d.chunks, "added": d.added, "authors": list(d.authors), "doi": d.doi,
         "source": d.source if person.is_local or d.source is None else Path(d.source).name}
        for d in await kb.documents()])


async def remove_document(request: Request, person: Person) -> JSONResponse:
    from scholarflow.retrieval.kb_registry import open_knowledge_base

    ref, doc_id = _ref(request), request.path_params["doc_id"]
    stored = await writable(person, ref)
    try:
        kb = await open_knowledge_base(stored)
        await kb.remove(doc_id)
    except KnowledgeBaseNotFoundError:
        raise missing(ref) from None
    except DocumentNotFoundError:
        raise DocumentNotFoundError(f"knowledge base {ref!r} has no document {doc_id!r}; "
                                    f"GET /kbs/{split_stored(stored)[1]}/documents lists "
                                    "them") from None
    return JSONResponse({"doc_id": doc_id, "kb": ref, "status": "removed"})


async def upload(request: Request, person: Person) -> JSONResponse:
    ref = _ref(request)
    stored = await writable(person, ref)  # before a byte is read: a refusal costs nothing
    settings = get_settings()
    folder = home_path() / "uploads" / uuid.uuid4().hex
    files = await receive_files(dict(request.headers), request.stream(), folder,
                                max_file=settings.upload_max_bytes,
                                max_request=settings.upload_max_request_bytes)
    job = await create_job(person.name, stored, len(files))
    start(job, folder, [f for f, _name in files], [name for _f, name in files])
    return JSONResponse({**_job_view(person, job), "files": [name for _f, name in files],
                         "poll": f"/ingest-jobs/{job.job_id}"}, status_code=202)


def _job_view(person: Person, job: Job) -> dict[str, Any]:
    return {"job_id": job.job_id, "kb": shown_name(person, job.kb),
            "status": job.shown_status(), "total": job.total, "done": job.done,
            "results": job.results, "error": job.error}


async def job_status(request: Request, person: Person) -> JSONResponse:
    job_id = request.path_params["job_id"]
    job = await get_job(person.name, job_id) if re.fullmatch(r"[0-9a-f]{32}", job_id) else None
    if job is None:
        return refusal(404, f"no ingest job {job_id[:40]!r} of yours; GET /ingest-jobs lists "
                            "them")
    return JSONResponse(_job_view(person, job))


async def jobs(request: Request, person: Person) -> JSONResponse:
    return JSONResponse([_job_view(person, j) for j in await list_jobs(person.name)])


async def shares(request: Request, person: Person) -> JSONResponse:
    ref = _ref(request)
    stored = await writable(person, ref)  # only the owner sees or changes who may read it
    if request.method == "GET":
        return JSONResponse({"kb": ref, "readers": await shares_of(stored)})
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or not set(body) <= {"people", "groups", "revoke"} or not all(
            isinstance(body.get(k, []), list) for k in ("people", "groups")):
        raise InputError('send JSON like {"people": ["ada"], "groups": ["lab"]} (and '
                         '"revoke": true to take the reading back)')
    readers = await share(stored, [str(p) for p in body.get("people", [])],
                          [str(g) for g in body.get("groups", [])],
                          revoke=bool(body.get("revoke", False)))
    return JSONResponse({"kb": ref, "readers": readers})


app = Starlette(
    routes=[
        Route("/whoami", handled(whoami), methods=["GET"]),
        Route("/kbs", handled(list_kbs), methods=["GET"]),
        Route("/kbs/{name}/documents", handled(list_documents), methods=["GET"]),
        Route("/kbs/{name}/documents", handled(upload), methods=["POST"]),
        Route("/kbs/{name}/documents/{doc_id}", handled(remove_document), methods=["DELETE"]),
        Route("/kbs/{name}/shares", handled(shares), methods=["GET", "POST"]),
        Route("/ingest-jobs", handled(jobs), methods=["GET"]),
        Route("/ingest-jobs/{job_id}", handled(job_status), methods=["GET"]),
    ],
    middleware=[Middleware(RedactTokensInUrls)],
)
