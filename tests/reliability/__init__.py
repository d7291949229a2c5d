"""The reliability suite (issue 8): faults, crashes, hostile input and secrets, with real
components. Each test records its scenario, checks and figures (see scenario.py)."""
