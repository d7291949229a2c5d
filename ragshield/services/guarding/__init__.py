"""The guard API's use cases: judging another system's answers or an upstream's, within
a deadline and a budget, and the log, traces and key defaults of each call."""
