"""A lab's server, tried as its people use it and then attacked (scholarflow/server/).

One real `langgraph dev` on the repository's langgraph.json with authentication
on, the embedded storage, and the scripted model (tests/support/langgraph_dev.py).
The operator adds people with the `scholarflow users` command on the server's
data folder; ada and bob (both in the group "lab") and cyd (in none) then
drive the server with langgraph_sdk and plain HTTP.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import EXAMPLES
from tests.support.langgraph_dev import (
    GRAPH_ID,
    LANGGRAPH,
    NO_CLI,
    REPO,
    Fake,
    Server,
    clean_env,
    files_containing,
    script,
    start_fake,
    start_server,
    tail,
)

pytestmark = pytest.mark.skipif(LANGGRAPH is None, reason=NO_CLI)

JOB_TIMEOUT = 240.0
ONE_LINE_401 = {"no token", "invalid or revoked token"}


# --- the server and its people -------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lab_server")


@pytest.fixture(scope="module")
def fake(workdir: Path) -> Iterator[Fake]:
    with start_fake(workdir) as started:
        yield started


@pytest.fixture(scope="module")
def server(fake: Fake, workdir: Path) -> Iterator[Server]:
    with start_server(workdir, fake, auth=True, name="lab",
                      env={"SCHOLARFLOW_EMBEDDING_MODEL": "fake-embedding"}) as started:
        yield started


def operator(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    """`scholarflow ARGS` on the server's machine, with the server's data folder."""
    return subprocess.run([sys.executable, "-m", "scholarflow.cli", *args], cwd=REPO,
                          env=clean_env(server.home), capture_output=True, text=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def tokens(server: Server) -> dict[str, str]:
    found = {}
    for name, groups in [("ada", ["lab"]), ("bob", ["lab"]), ("cyd", []), ("eve", [])]:
        done = operator(server, "users", "add", name, *[f"--group={g}" for g in groups])
        assert done.returncode == 0, done.stderr
        found[name] = json.loads(done.stdout)["token"]
        assert found[name] not in done.stderr
    return found


def http(server: Server, token: str | None = None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60)


@pytest.fixture
async def sdk(server: Server, tokens: dict[str, str]) -> AsyncIterator[dict[str, Any]]:
    """A langgraph_sdk client per person (the token as `api_key`, i.e. x-api-key)."""
    from langgraph_sdk import get_client

    clients = {name: get_client(url=server.url, api_key=token) for name, token in tokens.items()}
    try:
        yield clients
    finally:
        for client in clients.values():
            await client.aclose()


def paper(name: str) -> bytes:
    return (EXAMPLES / name).read_bytes()


def pdf(text: str, padding: int = 0) -> bytes:
    """A one-page PDF showing `text`, and `padding` bytes of an unused stream (a big file)."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    if padding:
        filler = b"\x00" * padding
        objects.append(b"<< /Length %d >>\nstream\n" % len(filler) + filler + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


async def upload(client: httpx.AsyncClient, kb: str, files: list[tuple[str, bytes]],
                 owner: str | None = None) -> httpx.Response:
    params = {"owner": owner} if owner else {}
    return await client.post(f"/kbs/{kb}/documents", params=params,
                             files=[("files", (name, data)) for name, data in files])


async def finished(client: httpx.AsyncClient, response: httpx.Response) -> dict[str, Any]:
    """Poll an upload's job until it is no longer queued or running."""
    assert response.status_code == 202, response.text
    poll = response.json()["poll"]
    deadline = time.monotonic() + JOB_TIMEOUT
    while True:
        job: dict[str, Any] = (await client.get(poll)).json()
        if job["status"] not in ("queued", "running"):
            return job
        assert time.monotonic() < deadline, job
        await asyncio.sleep(0.3)


async def ask(sdk_client: Any, **request: Any) -> dict[str, Any]:
    """One run on a new thread: its output (or the server's error), with the documents the
    run read (from the thread's state)."""
    thread = (await sdk_client.threads.create())["thread_id"]
    result: dict[str, Any] = await sdk_client.runs.wait(
        thread, GRAPH_ID, input={"mode_type": "LITERATURE_QA", **request}, raise_error=False)
    values = (await sdk_client.threads.get_state(thread))["values"] or {}
    return {**result, "documents": values.get("documents") or []}


def error_of(result: dict[str, Any]) -> str:
    return str((result.get("__error__") or {}).get("message", ""))


@pytest.fixture(scope="module")
async def libraries(server: Server, tokens: dict[str, str]) -> dict[str, list[str]]:
    """ada's "lab" holds the sparse-attention paper, bob's "lab" the retrieval one."""
    ids: dict[str, list[str]] = {}
    for name, file in [("ada", "en_sparse_attention.md"), ("bob", "en_retrieval_qa.md")]:
        async with http(server, tokens[name]) as client:
            job = await finished(client, await upload(client, "lab", [(file, paper(file))]))
        assert job["status"] == "done" and job["results"][0]["status"] == "added", job
        ids[name] = [job["results"][0]["doc_id"]]
    return ids


# --- who is asking -------------------------------------------------------------------------------

ROUTES = [("GET", "/whoami"), ("GET", "/kbs"), ("GET", "/kbs/lab/documents"),
          ("POST", "/kbs/lab/documents"), ("DELETE", "/kbs/lab/documents/x"),
          ("GET", "/kbs/lab/shares"), ("POST", "/kbs/lab/shares"), ("GET", "/ingest-jobs"),
          ("GET", f"/ingest-jobs/{uuid.uuid4().hex}"), ("POST", "/threads"),
          ("POST", "/threads/search"), ("GET", f"/threads/{uuid.uuid4()}"),
          ("GET", f"/threads/{uuid.uuid4()}/history"), ("POST", "/runs/wait"),
          ("POST", "/runs/stream"), ("POST", "/assistants/search"), ("POST", "/store/items/search"),
          ("DELETE", f"/threads/{uuid.uuid4()}")]


async def test_every_route_wants_a_persons_token(server: Server, tokens: dict[str, str]) -> None:
    from scholarflow.storage.people import new_token

    forged = [None, new_token(), "sf_" + "A" * 43, tokens["ada"][:-1], "not-a-token",
              tokens["ada"] + " extra"]
    for method, path in ROUTES:
        for token in forged:
            async with http(server, token) as client:
                response = await client.request(method, path, json={})
            assert response.status_code == 401, (method, path, token, response.text)
            detail = response.json()["detail"]
            assert "\n" not in detail and any(detail.startswith(s) for s in ONE_LINE_401), detail
            assert (token or "<none>") not in response.text
    async with http(server, tokens["ada"]) as client:
        assert (await client.get("/whoami")).json() == {"name": "ada", "groups": ["lab"]}


async def test_a_revoked_token_stops_working_at_once(server: Server,
                                                     tokens: dict[str, str]) -> None:
    async with http(server, tokens["eve"]) as client:
        assert (await client.get("/whoami")).status_code == 200
        done = operator(server, "users", "revoke", "eve")
        assert done.returncode == 0, done.stderr
        refused = await client.post("/threads/search", json={})
        assert refused.status_code == 401, refused.text
        assert refused.json()["detail"].startswith("invalid or revoked token")
    listed = [json.loads(line) for line in operator(server, "users", "list").stdout.splitlines()]
    assert {p["name"]: p["active"] for p in listed} == {
        "ada": True, "bob": True, "cyd": True, "eve": False}
    assert not any(token in json.dumps(listed) for token in tokens.values())


async def test_a_token_in_the_url_is_neither_used_nor_logged(
    server: Server, tokens: dict[str, str]
) -> None:
    token = tokens["cyd"]
    async with http(server) as client:
        for path in [f"/threads/search?token={token}", f"/kbs?api_key={token}",
                     f"/threads/{token}"]:
            response = await client.request("POST" if "search" in path else "GET", path, json={})
            assert response.status_code == 401, response.text
            assert token not in response.text
            assert "never in the URL" in response.json()["detail"], response.text
    await asyncio.sleep(0.5)  # the access log line is written after the response
    log = tail(server.log, 1_000_000)
    assert "sf_redacted" in log  # the requests were logged, without the token
    for name, each in tokens.items():
        assert each not in log, f"{name}'s token is in the server's log"
        assert files_containing(server.home, each) == [], name


# --- each person's own ---------------------------------------------------------------------------


async def test_threads_runs_and_checkpoints_are_their_owners(
    server: Server, fake: Fake, sdk: dict[str, Any]
) -> None:
    await script(fake)
    ada, bob = sdk["ada"], sdk["bob"]
    thread = (await ada.threads.create(metadata={"owner": "bob"}))["thread_id"]
    run = await ada.runs.create(thread, GRAPH_ID, input={"query": "Hello there, what is new?"})
    await ada.runs.join(thread, run["run_id"])
    own = await ada.threads.get(thread)
    assert own["metadata"]["owner"] == "ada"  # stamped by the server, whatever was sent
    assert (await ada.threads.get_state(thread))["values"]["messages"]

    assert thread not in {t["thread_id"] for t in await bob.threads.search(limit=1000)}
    assert thread not in {t["thread_id"] for t in await bob.threads.search(
        metadata={"owner": "ada"}, limit=1000)}
    # Every way to reach a thread, on ada's and on an id nobody has: bob gets the same.
    theirs = await _attempts(bob, thread, run["run_id"])
    nobodys = await _attempts(bob, str(uuid.uuid4()), str(uuid.uuid4()))
    assert theirs == nobodys, (theirs, nobodys)
    assert all(o in ("404", "409") for o in theirs.values()), theirs  # copy: 409, as LangGraph
    # ada's thread is whole: one run, her question, nothing bob tried.
    assert [r["run_id"] for r in await ada.runs.list(thread)] == [run["run_id"]]
    assert (await ada.threads.get(thread))["metadata"]["owner"] == "ada"


async def _attempts(client: Any, thread: str, run: str) -> dict[str, str]:
    """The HTTP status each way of reading or changing a thread and its runs gets."""
    attempts = {
        "get": client.threads.get(thread),
        "get_state": client.threads.get_state(thread),
        "get_history": client.threads.get_history(thread),
        "update": client.threads.update(thread, metadata={"owner": "bob"}),
        "update_state": client.threads.update_state(thread, {"kb": "lab"}),
        "copy": client.threads.copy(thread),
        "runs.list": client.runs.list(thread),
        "runs.get": client.runs.get(thread, run),
        "runs.join": client.runs.join(thread, run),
        "runs.cancel": client.runs.cancel(thread, run),
        "runs.delete": client.runs.delete(thread, run),
        "runs.wait": client.runs.wait(thread, GRAPH_ID, input={"query": "And now?"}),
        "delete": client.threads.delete(thread),
    }
    outcomes: dict[str, str] = {}
    for name, attempt in attempts.items():
        try:
            outcomes[name] = f"answered {str(await attempt)[:120]}"
        except httpx.HTTPStatusError as exc:  # langgraph_sdk's NotFoundError is one
            outcomes[name] = str(exc.response.status_code)
    return outcomes


async def test_each_person_asks_their_own_library(
    fake: Fake, sdk: dict[str, Any], libraries: dict[str, list[str]]
) -> None:
    await script(fake)
    mine = await ask(sdk["ada"], query="What does the attention model keep?", kb="lab")
    theirs = await ask(sdk["bob"], query="What does the retriever return?", kb="lab")
    assert not error_of(mine) and not error_of(theirs), (mine, theirs)
    assert [d["doc_id"] for d in mine["documents"]] == libraries["ada"]
    assert [d["doc_id"] for d in theirs["documents"]] == libraries["bob"]

    # Crafted requests: another's knowledge base by name, another's documents by id.
    crafted = [
        ({"kb": "ada/lab"}, "no knowledge base 'ada/lab' among yours"),
        ({"kb": "lab", "doc_ids": libraries["ada"]}, f"no document {libraries['ada'][0]}"),
        ({"doc_ids": libraries["ada"]}, "no knowledge base 'default' among yours"),
        ({"kb": "ada.lab"}, "is not a knowledge base name"),
        ({"kb": "../ada/lab"}, "is not a knowledge base name"),
    ]
    for request, says in crafted:
        result = await ask(sdk["cyd"] if "kb" not in request or request["kb"] != "lab"
                           else sdk["bob"], query="What does the model keep?", **request)
        assert says in error_of(result), (request, result)
        assert libraries["ada"][0] not in json.dumps(result.get("documents") or []), request


async def test_a_shared_library_is_readable_not_writable(
    server: Server, fake: Fake, sdk: dict[str, Any], tokens: dict[str, str],
    libraries: dict[str, list[str]],
) -> None:
    await script(fake)
    async with http(server, tokens["ada"]) as ada, http(server, tokens["bob"]) as bob, \
            http(server, tokens["cyd"]) as cyd:
        shared = await ada.post("/kbs/lab/shares", json={"groups": ["lab"]})
        assert shared.json() == {"kb": "lab", "readers": ["group:lab"]}, shared.text
        try:
            listed = {k["name"]: k["writable"] for k in (await bob.get("/kbs")).json()}
            assert listed == {"lab": True, "ada/lab": False}
            docs = (await bob.get("/kbs/lab/documents", params={"owner": "ada"})).json()
            assert [d["doc_id"] for d in docs] == libraries["ada"]
            assert docs[0]["source"] == "en_sparse_attention.md"
            result = await ask(sdk["bob"], query="What does the attention model keep?",
                               kb="ada/lab")
            assert [d["doc_id"] for d in result["documents"]] == libraries["ada"], result

            changes = [
                await upload(bob, "lab", [("x.md", b"# X\n\nSome text.")], owner="ada"),
                await bob.delete(f"/kbs/lab/documents/{libraries['ada'][0]}",
                                 params={"owner": "ada"}),
                await bob.post("/kbs/lab/shares", params={"owner": "ada"},
                               json={"people": ["cyd"]}),
                await bob.get("/kbs/lab/shares", params={"owner": "ada"}),
            ]
            assert [c.status_code for c in changes] == [403] * 4, [c.text for c in changes]
            assert all("only ada changes it" in c.json()["detail"] for c in changes)
            # cyd is in no group: to cyd, ada's library does not exist.
            assert (await cyd.get("/kbs")).json() == []
            for response in [await cyd.get("/kbs/lab/documents", params={"owner": "ada"}),
                             await upload(cyd, "lab", [("x.md", b"# X\n\nText.")], owner="ada"),
                             await cyd.get("/kbs/nothing/documents", params={"owner": "ada"})]:
                assert response.status_code == 404, response.text
                assert response.json()["detail"].startswith("no knowledge base 'ada/")
        finally:
            revoked = await ada.post("/kbs/lab/shares", json={"groups": ["lab"], "revoke": True})
            assert revoked.json()["readers"] == []
        assert (await bob.get("/kbs/lab/documents", params={"owner": "ada"})).status_code == 404
        docs = (await ada.get("/kbs/lab/documents")).json()
        assert [d["doc_id"] for d in docs] == libraries["ada"]  # nothing bob tried changed it


# --- a library over HTTP -------------------------------------------------------------------------


async def test_uploads_with_odd_names_go_in_under_their_names_only(
    server: Server, tokens: dict[str, str]
) -> None:
    async with http(server, tokens["cyd"]) as cyd:
        job = await finished(cyd, await upload(cyd, "odd", [
            ("../../../../etc/passwd.md", b"# Passwd\n\nA paper about passwords."),
            ("C:\\Users\\cyd\\notes.txt", b"Notes on attention windows."),
            ("r\u00e9sum\u00e9\u202e\x1b[31m.md", "# R\u00e9sum\u00e9\n\nText.".encode()),
            ("empty.md", b""),
            ("binary.pdf", b"\x00\x01garbage" * 100),
        ]))
        assert job["status"] == "done", job
        shown = [(r["source"], r["status"]) for r in job["results"]]
        assert shown == [("passwd.md", "added"), ("notes.txt", "added"),
                         ("r\u00e9sum\u00e9[31m.md", "added"), ("empty.md", "error"),
                         ("binary.pdf", "error")], shown
        errors = [r["error"] for r in job["results"] if r["status"] == "error"]
        assert errors[0].startswith("empty.md") and "uploads" not in " ".join(errors), errors
        docs = (await cyd.get("/kbs/odd/documents")).json()
        assert sorted(d["source"] for d in docs) == ["notes.txt", "passwd.md",
                                                     "r\u00e9sum\u00e9[31m.md"]
        refused = [await cyd.post("/kbs/odd/documents", content=b"plain",
                                  headers={"content-type": "text/plain"}),
                   await cyd.post("/kbs/odd/documents", files={"field": (None, b"no file")}),
                   await upload(cyd, "../etc", [("a.md", b"# A\n\ntext")]),
                   await upload(cyd, "a" * 65, [("a.md", b"# A\n\ntext")])]
        assert [r.status_code for r in refused] == [415, 400, 404, 400], [r.text for r in refused]
        assert not list((server.home / "uploads").glob("*/*")), "staged files left behind"
        assert not await asyncio.to_thread(lambda: (server.home / "etc").exists()
                                           or Path("/etc/passwd.md").exists())


def raw_post(server: Server, token: str, path: str, head: bytes, body: bytes,
             length: int, *, cut: bool) -> bytes:
    """A POST written by hand: `length` announced, `body` sent; `cut`: then the client's
    side closed, midway."""
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                     + f"Authorization: Bearer {token}\r\n".encode() + head
                     + f"Content-Length: {length}\r\n\r\n".encode() + body)
        if cut:
            sock.shutdown(socket.SHUT_WR)
        sock.settimeout(5)
        answer = b""
        try:
            while (got := sock.recv(65536)) and b'"}' not in answer + got:
                answer += got
            return answer + got
        except (TimeoutError, ConnectionError):
            return answer


async def test_an_upload_cut_off_or_too_large_stores_nothing(
    server: Server, tokens: dict[str, str]
) -> None:
    boundary = "sfboundary"
    head = f"Content-Type: multipart/form-data; boundary={boundary}\r\n".encode()
    part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
            f"filename=\"cut.md\"\r\n\r\n# Cut\n\n").encode() + b"text " * 20_000
    whole = part + f"\r\n--{boundary}--\r\n".encode()
    cut = await asyncio.to_thread(raw_post, server, tokens["cyd"], "/kbs/cut/documents", head,
                                  whole[: len(whole) // 2], len(whole), cut=True)
    huge = await asyncio.to_thread(raw_post, server, tokens["cyd"], "/kbs/cut/documents", head,
                                   b"", 10**12, cut=False)
    assert b" 413 " in huge.split(b"\r\n")[0] and b"over the" in huge, huge[:300]
    async with http(server, tokens["cyd"]) as cyd:
        assert (await cyd.get("/kbs/cut/documents")).status_code == 404  # never created
        assert all(j["kb"] != "cut" for j in (await cyd.get("/ingest-jobs")).json())
        assert (await cyd.get("/whoami")).status_code == 200  # the server is fine
    assert b"202" not in cut.split(b"\r\n")[0], cut[:300]
    await asyncio.sleep(0.5)
    assert not list((server.home / "uploads").glob("*")), "half an upload was kept"


async def test_200_pdfs_while_another_person_ingests(
    server: Server, tokens: dict[str, str]
) -> None:
    many = [(f"paper-{i:03d}.pdf", pdf(f"Paper {i} studies sparse attention topic {i}."))
            for i in range(200)]
    few = [(f"note-{i:02d}.md", f"# Note {i}\n\nNotes on retrieval {i}.".encode())
           for i in range(20)]
    async with http(server, tokens["ada"]) as ada, http(server, tokens["bob"]) as bob:
        started = time.perf_counter()
        sent = await asyncio.gather(upload(ada, "many", many), upload(bob, "notes", few))
        jobs = await asyncio.gather(finished(ada, sent[0]), finished(bob, sent[1]))
        elapsed = time.perf_counter() - started
        print(f"\n200 PDFs and 20 notes from two people at once: {elapsed:.1f}s")
        assert [j["status"] for j in jobs] == ["done", "done"], jobs
        assert [r["status"] for r in jobs[0]["results"]] == ["added"] * 200
        assert [r["status"] for r in jobs[1]["results"]] == ["added"] * 20
        listed = {k["name"]: k["documents"] for k in (await ada.get("/kbs")).json()}
        assert listed["many"] == 200 and "notes" not in listed and "bob/notes" not in listed
        # Removing one, and a removed or guessed id, and another's job, by plain HTTP.
        doc_id = jobs[0]["results"][0]["doc_id"]
        assert (await ada.delete(f"/kbs/many/documents/{doc_id}")).json()["status"] == "removed"
        again = await ada.delete(f"/kbs/many/documents/{doc_id}")
        assert again.status_code == 404 and "has no document" in again.json()["detail"]
        assert (await bob.get(f"/ingest-jobs/{jobs[0]['job_id']}")).status_code == 404
        listed = {k["name"]: k["documents"] for k in (await ada.get("/kbs")).json()}
        assert listed["many"] == 199


async def test_a_200_mb_pdf_goes_in(server: Server, tokens: dict[str, str]) -> None:
    big = pdf("A large scanned thesis about sparse attention.", padding=200_000_000)
    async with http(server, tokens["cyd"]) as cyd:
        started = time.perf_counter()
        job = await finished(cyd, await upload(cyd, "big", [("thesis.pdf", big)]))
        print(f"\na {len(big) / 1e6:.0f} MB PDF: {time.perf_counter() - started:.1f}s")
        assert job["status"] == "done" and job["results"][0]["status"] == "added", job
    assert not list((server.home / "uploads").glob("*")), "the staged file was kept"
