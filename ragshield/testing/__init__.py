"""What the tests and the benchmarks (scripts/) share; nothing else in ragshield imports it:
server processes started and waited for (`servers`), a client that calls the web app the
way its page does (`app_client`), and a synthetic run written straight into a store
(`synthetic_run`)."""
