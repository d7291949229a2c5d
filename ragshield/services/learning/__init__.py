"""What learns from labels: policies fitted on a run's labels (kept, pinned, previewed,
watched) and judges trained on them."""
