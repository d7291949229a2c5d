"""One module per dataset format; each defines SPEC, a LoaderSpec listed in datasets.registry
(a module that serves one format, as openinference_spans serves openinference, defines none)."""
