"""Runs, their views and reports: recording and executing runs, the runs a picker offers,
their tables, Browse and case studies, the Dashboard's views, metrics and thresholds."""
