"""Ingest jobs: an upload's files go into a knowledge base in the background.

An upload is a job as soon as its files are on disk (uploads.py). The job
runs in the server process that took the upload, after the request has been
answered, and writes its progress to the server database after every file
(scholarflow/storage/server_db.py), so any server process behind the same
address answers a poll. A job's status: `queued`, `running`, then `done`
(every file has a result, "added", "unchanged" or "error", as `scholarflow
ingest` prints them) or `failed` (the job itself could not go on: one line
says why). A job whose process stopped (a restart) is `interrupted` once it
has not moved for `STALE_SECONDS`: upload its files again; what it stored
before is kept whole, since every document goes in with one atomic add.

At most `MAX_RUNNING` jobs run at once in a process (ingesting is CPU: text
extraction and embeddings); the others wait, queued.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scholarflow.storage.server_db import ServerDatabase, server_database

MAX_RUNNING = 2
PROGRESS_SECONDS = 1.0
HEARTBEAT_SECONDS = 30.0
STALE_SECONDS = 300.0

logger = logging.getLogger(__name__)

_tasks: set[asyncio.Task[None]] = set()  # running jobs, kept from the garbage collector
_slots: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}


@dataclass
class Job:
    job_id: str
    owner: str
    kb: str  # the stored name
    status: str
    total: int
    done: int
    results: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0

    def shown_status(self, now: float | None = None) -> str:
        stale = (now or time.time()) - self.updated_at > STALE_SECONDS
        return "interrupted" if self.status in ("queued", "running") and stale else self.status


_COLUMNS = "job_id, owner, kb, status, total, done, results, error, created_at, updated_at"


def _job(row: tuple[Any, ...]) -> Job:
    return Job(str(row[0]), str(row[1]), str(row[2]), str(row[3]), int(row[4]), int(row[5]),
               json.loads(row[6]), row[7], float(row[8]), float(row[9]))


async def create_job(owner: str, kb: str, total: int, db: ServerDatabase | None = None) -> Job:
    db = db or server_database()
    now = time.time()
    job = Job(uuid.uuid4().hex, owner, kb, "queued", total, 0, [], None, now, now)
    await db.execute(f"INSERT INTO scholarflow_ingest_jobs ({_COLUMNS}) VALUES "
                     "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                     (job.job_id, owner, kb, job.status, total, 0, "[]", None, now, now))
    return job


async def save_job(job: Job, db: ServerDatabase | None = None) -> None:
    db = db or server_database()
    job.updated_at = time.time()
    await db.execute("UPDATE scholarflow_ingest_jobs SET status = %s, done = %s, results = %s, "
                     "error = %s, updated_at = %s WHERE job_id = %s",
                     (job.status, job.done, json.dumps(job.results, ensure_ascii=False),
                      job.error, job.updated_at, job.job_id))


async def get_job(owner: str, job_id: str, db: ServerDatabase | None = None) -> Job | None:
    """The job `job_id` if it is `owner`'s; another person's is missing to them."""
    db = db or server_database()
    rows = await db.fetch(f"SELECT {_COLUMNS} FROM scholarflow_ingest_jobs "
                          "WHERE job_id = %s AND owner = %s", (job_id, owner))
    return _job(rows[0]) if rows else None


async def list_jobs(owner: str, limit: int = 100, db: ServerDatabase | None = None) -> list[Job]:
    db = db or server_database()
    rows = await db.fetch(f"SELECT {_COLUMNS} FROM scholarflow_ingest_jobs WHERE owner = %s "
                          "ORDER BY created_at DESC LIMIT %s", (owner, limit))
    return [_job(r) for r in rows]


def start(job: Job, folder: Path, files: list[Path], names: list[str]) -> None:
    """Run the job in the background of this process; `folder` (the staged files) is
    deleted when it ends, however it ends."""
    task = asyncio.get_running_loop().create_task(_run(job, folder, files, names))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def _slot() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    return _slots.setdefault(loop, asyncio.Semaphore(MAX_RUNNING))


async def _run(job: Job, folder: Path, files: list[Path], names: list[str]) -> None:
    from scholarflow.ingest.pipeline import IngestResult, ingest_paths

    heartbeat: asyncio.Task[None] | None = None
    try:
        async with _slot():
            job.status = "running"
            await save_job(job)
            heartbeat = asyncio.create_task(_beat(job))

            def record(result: IngestResult) -> None:
                job.results.append(result.as_json())
                job.done = len(job.results)

            await ingest_paths(files, job.kb, on_result=record, names=names, keep_open=True)
            job.status = "done"
    except Exception as exc:  # the job ends; the server goes on
        from scholarflow.scrub import scrub_secrets

        job.status = "failed"
        job.error = scrub_secrets(" ".join(str(exc).split()) or type(exc).__name__)
        logger.warning("ingest job %s failed: %s", job.job_id, job.error)
    finally:
        if heartbeat is not None:
            heartbeat.cancel()
        await asyncio.to_thread(shutil.rmtree, folder, True)
        try:
            await save_job(job)
        except Exception as exc:  # the database went away: nothing more to record
            logger.warning("ingest job %s: could not record its end: %s", job.job_id,
                           type(exc).__name__)


async def _beat(job: Job) -> None:
    """Record progress within a second of each file, and now and then while one file takes
    long, so a job that is working is never taken for stale."""
    saved = job.done
    while True:
        await asyncio.sleep(PROGRESS_SECONDS)
        if job.done != saved or time.time() - job.updated_at > HEARTBEAT_SECONDS:
            saved = job.done
            await save_job(job)
