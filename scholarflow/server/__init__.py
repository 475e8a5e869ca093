"""A lab's server: who is asking (auth.py), and the library over HTTP (routes.py).

langgraph.json names `scholarflow.server.auth:auth` as the server's auth and
`scholarflow.server.routes:app` as its own routes, which the same auth
protects (docs/architecture.md#a-labs-server).
"""
