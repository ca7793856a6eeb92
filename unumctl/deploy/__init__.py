"""The one deployment model of an app, for every target (issue 11 item 1).

In the style of AWS Chalice's `chalice/deploy/` (models.py, appgraph.py):
- `models.py`: plain typed records of what will exist (functions, datastore, blob store,
  topics, roles, the error/dead-letter path), archives as placeholders;
- `names.py`: every deployed name, computed once;
- `settings.py`: the typed `clouds.aws` / `clouds.gcp` manifest sections and the one
  precedence rule (flag > environment > manifest > default);
- `appgraph.py`: `build(app, cloud, **flags)` makes the model without packaging; `package(dep)`
  builds the archives and fills the placeholders.
Renderers (unumctl/aws/render.py, unumctl/gcp/render.py) only format the model; the
targets (aws, gcp, local) read names and settings from it.
"""

__all__: list[str] = []  # submodules only
