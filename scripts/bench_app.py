"""Moved to ragshield/testing/ (servers.py, app_client.py). This file stays only while
tests/conftest.py imports free_port and running_server from here: delete it once that line
reads `from ragshield.testing.servers import free_port, running_server`."""

from ragshield.testing.servers import free_port, running_server  # noqa: F401
