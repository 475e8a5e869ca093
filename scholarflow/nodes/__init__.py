"""The graph's nodes: one module per node or node family."""
