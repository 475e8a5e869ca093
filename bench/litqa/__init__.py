"""LitQA2 over a real library: the dev questions asked of all 85 papers, in parts.

    .venv/bin/python -m bench.litqa ingest [--scripted-embeddings] [--limit N]
    .venv/bin/python -m bench.litqa search [--half tune|check|all]
    .venv/bin/python -m bench.litqa recall [--half ...]          # the scripted server as model
    .venv/bin/python -m bench.litqa answer [--half ...]          # needs OPENAI_BASE_URL etc.
    .venv/bin/python -m bench.litqa open   [--half ...]          # the stems without options
    .venv/bin/python -m bench.litqa support [--half ...]         # the "insufficient" floor
    .venv/bin/python -m bench.litqa extract [--engines ...]      # PDF extraction per engine

Every question part takes `--half tune|check|all` (default all: both halves side by
side, and the whole), `--questions 1-5` and `--limit N`, and `--home` (the
SCHOLARFLOW_HOME that `ingest` filled). The halves are fixed by the sha256 of the
question id (questions.half_of). Each part reads only what any caller of scholarflow
sees: search hits, the graph's output state, and for `recall` the scripted server's
request log.
"""
