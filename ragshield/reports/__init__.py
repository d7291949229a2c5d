"""Run reports: tables shaped like the three works' own, PNG figures, Markdown and HTML."""
