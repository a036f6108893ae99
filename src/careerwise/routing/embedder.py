"""Which embedder layer 2 uses (the ``routing_embedding_model`` setting; docs/routing.md, "Latency").

By default the router shares the knowledge base's embedder: no second model in memory, and because
that embedder keeps an LRU of query vectors keyed by the whitespace-collapsed text (the form the router
embeds too), the vector routing computed is reused by the answer-cache probe and the first search of the
same message instead of being computed again. A different model (``use``: multilingual USE, faster per
message but with more resident memory and lower accuracy; docs/routing.md, "The embedder decision") gets its own
instance, loaded once per process.
"""

from __future__ import annotations

import threading

from careerwise.knowledge.embeddings import CachedEmbedder, Embedder, make_embedder

_OWN: dict[str, Embedder] = {}
_LOCK = threading.Lock()
_OWN_CACHE_SIZE = 512  # query vectors of the routing-only model (user messages, in memory only)


def routing_embedder(model: str | None, shared: Embedder) -> Embedder:
    """``shared`` when ``model`` is unset or the same model; otherwise that model's own instance (with a
    small query cache), created on first use and kept for the life of the process."""
    if model is None or model == shared.name:
        return shared
    with _LOCK:
        own = _OWN.get(model)
        if own is None:
            own = _OWN[model] = CachedEmbedder(make_embedder(model), size=_OWN_CACHE_SIZE)
        return own
