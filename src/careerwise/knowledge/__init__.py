"""The knowledge base: documents, chunking, embeddings, BM25, the index, ingestion."""
