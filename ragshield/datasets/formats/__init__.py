"""One module per dataset format; each defines SPEC, a LoaderSpec listed in datasets.registry."""
