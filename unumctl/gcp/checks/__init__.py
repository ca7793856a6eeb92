"""The offline checks `unumctl plan --cloud gcp` runs on the rendered root module without
the google provider: `tf_schema` (against the provider schema snapshot `schema/`) and
`tf_deps` (API enablement before the resources that need it)."""

__all__: list[str] = []  # submodules only
