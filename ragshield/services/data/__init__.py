"""Data in and out: datasets and uploads into the store, corpora, the demo run, and the
downloads of labels, runs, reports and policies."""
