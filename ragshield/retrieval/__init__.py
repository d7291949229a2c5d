"""Chunking, sparse/dense/hybrid retrieval and embeddings."""
