"""`--server URL`: `ingest`, `kb`, `ask`, `resume` and `sessions` on a lab's server.

The same commands, arguments and output as on this machine, sent to a server
started from this repository's langgraph config (scholarflow/server/): its
library routes for `ingest` (cli/remote_ingest.py) and `kb`, LangGraph's own
API through langgraph_sdk for `ask`, `resume` (cli/remote_run.py) and
`sessions`, whose sessions are the person's threads (cli/remote_commands.py,
which also picks the command). The server says whose they are: each person
sees and changes only their own (and reads what is shared). This module is
the connection: the address, the token, and every refusal as one line.

The address is `--server URL` or `SCHOLARFLOW_SERVER`; the person's token is
`SCHOLARFLOW_TOKEN`, never an argument (it would stay in the shell's history),
sent as `Authorization: Bearer` (`x-api-key` to langgraph_sdk) and never
printed: every error line is scrubbed of it. Each command first asks the
server who the token is (`GET /whoami`), so an unreachable server, a refused
token or an address that is no scholarflow server is one line before anything
is sent. Exit codes as on this machine: 2 for a bad request (a refused token,
a missing knowledge base, session or document), 1 for a failure (the server
unreachable, or failing).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from scholarflow.cli.exits import CliError, RunFailedError
from scholarflow.errors import ConfigurationError, InputError, ScholarflowError
from scholarflow.printable import safe_text
from scholarflow.settings import Settings, get_settings, revealed, server_url_problem

if TYPE_CHECKING:  # httpx only once a server is asked: `scholarflow --help` needs neither
    import httpx
    from langgraph_sdk.client import LangGraphClient

SERVED = ("ingest", "kb", "ask", "resume", "sessions")  # the commands that take --server
GRAPH_ID = "scholarflow"  # the graph's id in langgraph.json


def add_arguments(parser: argparse.ArgumentParser,
                  commands: Mapping[str, argparse.ArgumentParser]) -> None:
    """`--server URL` before the command (`scholarflow --server URL kb list`) and after it
    (`scholarflow kb list --server URL`), for the commands a server runs."""
    parser.add_argument("--server", metavar="URL", default=None,
                        help="a lab's server to run ingest, kb, ask, resume and sessions on "
                             "(default: $SCHOLARFLOW_SERVER, else this machine); your token "
                             "goes in $SCHOLARFLOW_TOKEN")
    for name in SERVED:
        for command in _with_verbs(commands[name]):
            # SUPPRESS: not given here, it leaves the value given before the command alone.
            command.add_argument("--server", metavar="URL", default=argparse.SUPPRESS,
                                 help="run on this lab's server ($SCHOLARFLOW_TOKEN: your "
                                      "token)")


def _with_verbs(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser, or its verbs' parsers (`kb list`, `sessions show`...) when it has some."""
    verbs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [p for action in verbs for p in action.choices.values()] or [parser]


def server_for(args: argparse.Namespace) -> str | None:
    """The server this command runs on, or None for this machine."""
    given: str | None = getattr(args, "server", None)
    if given is not None:
        if args.command not in SERVED:
            raise CliError(f"`{args.command}` runs on this machine only; a server runs "
                           f"{', '.join(SERVED)}: leave --server out")
        if (why := server_url_problem(given.strip())) is not None:
            raise CliError(f"--server is {why}; give the server's address, like "
                           "https://lab.example.org")
        return given.strip().rstrip("/")
    settings = get_settings()
    if args.command in SERVED:
        return settings.server
    if args.command in ("search", "route") and settings.is_set(Settings.server):
        print(f"note: `{args.command}` runs on this machine; SCHOLARFLOW_SERVER applies to "
              f"{', '.join(SERVED)}", file=sys.stderr)
    return None  # `users` is the operator's, on the server's own machine


class Remote:
    """A connection to the server: its library routes over httpx, LangGraph's API through
    langgraph_sdk; both with the person's token. Use as an async context manager."""

    def __init__(self, url: str) -> None:
        import httpx

        self.url = url
        self.token = revealed(get_settings().server_token)
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        # No redirects: a token is for this address only.
        self.http = httpx.AsyncClient(base_url=url, headers=headers, follow_redirects=False,
                                      timeout=httpx.Timeout(60.0, connect=10.0))
        self._sdk: LangGraphClient | None = None
        self.person = ""

    @property
    def sdk(self) -> LangGraphClient:
        if self._sdk is None:
            from langgraph_sdk import get_client

            # api_key None, not left out: langgraph_sdk would send LANGSMITH_API_KEY.
            self._sdk = get_client(url=self.url, api_key=self.token or None)
        return self._sdk

    async def __aenter__(self) -> Remote:
        if self.token and self.http.base_url.scheme == "http" and not _loopback(self.url):
            print(f"note: {self.url} is plain http: your token and papers cross the network "
                  "unencrypted; use the server's https:// address if it has one",
                  file=sys.stderr, flush=True)
        try:
            who = await self.request("GET", "/whoami", missing=(
                f"{self.url} is not a scholarflow server (it has no /whoami): check --server "
                "or SCHOLARFLOW_SERVER"))
        except BaseException:
            await self.http.aclose()
            raise
        self.person = str(who.get("name") or "") if isinstance(who, dict) else ""
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()
        if self._sdk is not None:
            await self._sdk.aclose()

    def hint(self) -> str:
        """What a command given back to the person needs to reach this server."""
        return f"--server {self.url}"

    async def request(self, method: str, path: str, *, missing: str | None = None,
                      **kwargs: Any) -> Any:
        """The JSON answer of a library route; a refusal is one ScholarflowError, `missing`
        the message of a 404 (else the server's own line)."""
        import httpx

        try:
            response = await self.http.request(method, path, **kwargs)
            response.raise_for_status()
        except (httpx.HTTPError, OSError) as exc:
            raise self.failure(exc, missing=missing) from None
        try:
            return response.json()
        except ValueError:
            raise RunFailedError(f"{self.url} answered {path} with no JSON: is it a "
                                 "scholarflow server? (check --server or "
                                 "SCHOLARFLOW_SERVER)") from None

    def failure(self, exc: BaseException, *, missing: str | None = None) -> ScholarflowError:
        """`exc` (httpx's, or langgraph_sdk's, which are httpx's) as one line, its class
        giving the exit code: a refusal is a bad request, an unreachable server a failure."""
        import httpx

        if isinstance(exc, httpx.HTTPStatusError):
            status = exc.response.status_code
            detail = detail_of(exc.response)
            if status == 401:
                return ConfigurationError(
                    f"the server refused the token in SCHOLARFLOW_TOKEN ({detail})"
                    if self.token else
                    f"{self.url} asks for a token: set SCHOLARFLOW_TOKEN to the one the "
                    "server's operator gave you (`scholarflow users add NAME` on the server)")
            if status == 404 and missing is not None:
                return InputError(missing)
            if status < 500 and status != 429:
                return InputError(detail)
            return RunFailedError(f"the server at {self.url} failed ({status}): {detail}")
        if isinstance(exc, httpx.TimeoutException):
            return RunFailedError(f"the server at {self.url} did not answer in time "
                                  f"({type(exc).__name__}); try again")
        if isinstance(exc, httpx.TransportError | OSError):
            why = " ".join(str(exc).split()) or type(exc).__name__
            return RunFailedError(f"cannot reach the server at {self.url} ({why}): check the "
                                  "address (--server, SCHOLARFLOW_SERVER) and that it runs")
        return RunFailedError(f"talking to {self.url} failed: {type(exc).__name__}: {exc}")


def _loopback(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def detail_of(response: httpx.Response) -> str:
    """The server's one line for a refusal: its `detail` (or `message`), else the status."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("detail", "message"):
            if isinstance(body.get(key), str) and body[key].strip():
                return " ".join(str(body[key]).split())
    return f"{response.status_code} {response.reason_phrase}".strip()


def kb_route(ref: str, tail: str = "") -> tuple[str, dict[str, str]]:
    """The route of a knowledge base as the person names it: `lab` is theirs, `ada/lab`
    ada's (shared with them): `/kbs/lab{tail}`, with `owner=ada`."""
    owner, _, name = ref.rpartition("/")
    if not name.strip() or (owner and not owner.strip()):
        raise InputError(f"{ref!r} is not a knowledge base name: give NAME, or OWNER/NAME for "
                         "one shared with you")
    return f"/kbs/{quote(name, safe='')}{tail}", ({"owner": owner} if owner else {})


def no_session(remote: Remote, session_id: str) -> InputError:
    return InputError(f"no session {session_id!r} of yours on {remote.url}; see "
                      f"`scholarflow sessions list {remote.hint()}`")


def check_thread_id(remote: Remote, session_id: str) -> str:
    """A session id the server can have given: its threads are UUIDs."""
    import uuid

    try:
        return str(uuid.UUID(session_id.strip()))
    except ValueError:
        raise InputError(f"{safe_text(session_id)!r} is no session of {remote.url}: its "
                         f"sessions are the ids it gave them; `scholarflow sessions list "
                         f"{remote.hint()}` lists yours") from None
