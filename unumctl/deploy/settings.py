"""The typed `clouds.<cloud>` sections' base, the manifest's `clouds:` mapping and the one
precedence rule.

Which section a target has is its TargetSpec's `settings` (unumctl/registry.py; AWS's is
unumctl/aws/settings.py); `Clouds`, the manifest's `clouds:` mapping, is built from the
registry.

Every setting is resolved the same way, implemented once in `Section.resolved`:
**flag > environment > manifest > default**. The environment variables a setting reads are
the cloud's standard ones (AWS CLI / boto3: AWS_REGION, AWS_DEFAULT_REGION, AWS_PROFILE,
AWS_ENDPOINT_URL[_<SERVICE>]; Google Cloud SDK: GOOGLE_CLOUD_PROJECT, CLOUDSDK_CORE_PROJECT,
GCLOUD_PROJECT, GOOGLE_CLOUD_REGION, CLOUDSDK_FUNCTIONS_REGION).

Values are strict: a boolean is YAML true/false (the string 'no' is an error, not true), an
integer is an integer. A bad value is a one-line error from `load_manifest` naming
`<app>/unumctl.yaml: clouds.<cloud>.<field>` (unumctl/manifest.py formats it).
Sources: docs/aws.md, docs/gcp.md; Terraform's backend list
(https://developer.hashicorp.com/terraform/language/backend).
"""

from __future__ import annotations

import os
from functools import cache, partial
from typing import Annotated, Any, ClassVar, Mapping, Self

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model,
                      field_validator, model_validator)

from .. import registry
from ..render.hcl import HclValueError, hcl_identifier, hcl_value
from .local_resources import LocalResources

__all__ = ["Backend", "Bool", "Clouds", "Int", "IntegrationsSection", "REAL_AWS", "Section", "Str",
           "check_endpoint", "first"]

# Terraform's built-in backends: `clouds.aws.backend.type` must be one of them, so no text of
# the manifest becomes HCL syntax
BACKEND_TYPES = ("azurerm", "consul", "cos", "gcs", "http", "kubernetes", "local", "oss", "pg",
                 "remote", "s3")

def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"{str(v)[:40]!r} must be true or false (unquoted)")
    return v


def _int(v: Any, example: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{str(v)[:40]!r} must be an integer, e.g. {example}")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"{str(v)[:40]!r} must be a string")
    return v


Bool = Annotated[bool, BeforeValidator(_bool)]
Str = Annotated[str, BeforeValidator(_str)]


def Int(example: int) -> Any:
    """A strict integer type whose error shows `example`."""
    return Annotated[int, BeforeValidator(partial(_int, example=example))]


def _identifier(k: Any) -> str:
    if not hcl_identifier(k):
        raise ValueError(f"key {str(k)[:40]!r} is not an identifier (letters, digits and '_')")
    return k


def _literal(v: Any) -> Any:
    try:
        hcl_value(v)
    except HclValueError as exc:
        raise ValueError(str(exc)) from None
    return v


class Section(BaseModel):
    """A `clouds.<cloud>` section. `ENV`: field -> environment variables read for it, in order."""

    model_config = ConfigDict(extra="forbid")
    ENV: ClassVar[dict[str, tuple[str, ...]]] = {}

    def resolved(self, environ: Mapping[str, str] | None = None, **flags: Any) -> Self:
        """A copy with the one precedence rule applied to every field: the flag (a keyword
        named like the field; None = not given) > the first non-empty environment variable
        of ENV[field] > the manifest's value > the field's default. A flag or environment
        value is checked as the manifest's is: ValueError (one line naming the field) when
        the section's type rejects it."""
        env = os.environ if environ is None else environ
        update = {}
        for name in type(self).model_fields:
            value = first(flags.get(name), *(env.get(v) for v in self.ENV.get(name, ())))
            if value is not None:
                update[name] = value
        if not update:
            return self.model_copy()
        try:
            return type(self).model_validate({**self.model_dump(), **update})
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            msg = str(err["msg"]).removeprefix("Value error, ")
            raise ValueError(f"{field}: {msg} (value given by a flag or the environment)") from None


def first(*values: Any) -> Any:
    """The first value that is neither None nor ''; None when there is none."""
    return next((v for v in values if v not in (None, "")), None)


class Backend(BaseModel):
    """`clouds.aws.backend`: {type: one of BACKEND_TYPES, config: {identifier: literal}}. The
    type and keys become Terraform syntax, so only known names pass; values are rendered as
    quoted literals (render/hcl.py)."""

    model_config = ConfigDict(extra="forbid")
    type: str
    config: dict[Annotated[str, BeforeValidator(_identifier)],
                 Annotated[Any, BeforeValidator(_literal)]] = Field(default_factory=dict)

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> str:
        if v not in BACKEND_TYPES:
            raise ValueError(f"{str(v)[:40]!r} is not a Terraform backend ({', '.join(BACKEND_TYPES)})")
        return v

    @field_validator("config", mode="before")
    @classmethod
    def _config(cls, v: Any) -> Any:
        return {} if v is None else v



# `integrations.aws_endpoint: aws`: boto3's own configuration, i.e. real AWS
REAL_AWS = "aws"


def check_endpoint(v: Any) -> str:
    """An AWS endpoint URL: http(s)://host[:port][/path], no credentials, query or fragment;
    or `aws` (REAL_AWS: boto3's own configuration, real AWS). Raises ValueError naming the fix."""
    from urllib.parse import urlsplit
    if v == REAL_AWS:
        return v
    if not isinstance(v, str):
        raise ValueError(f"{str(v)[:40]!r} must be a URL string, e.g. http://127.0.0.1:4566")
    try:
        u = urlsplit(v)
        u.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError:
        raise ValueError(f"{v[:60]!r} is not a URL, e.g. http://127.0.0.1:4566") from None
    if u.scheme not in ("http", "https") or not u.hostname or u.username or u.password \
            or u.query or u.fragment:
        raise ValueError(f"{v[:60]!r} must be http(s)://host[:port] without credentials, e.g. "
                         "http://127.0.0.1:4566")
    return v


class IntegrationsSection(Section):
    """`integrations:` where a local or served app's Step Functions service integrations go
    (docs/stepfunctions.md "Service integrations"; docs/local.md "Where service integrations
    go"): `aws_endpoint` (a URL: LocalStack, DynamoDB Local, moto_server, signed with
    placeholder keys; `aws`: boto3's own configuration and credentials, i.e. real AWS, the
    only opt-in to it; None: the embedded emulator, unumctl.local.emulator, unless boto3's
    AWS_ENDPOINT_URL is set; unumctl.local.integrations_env decides), `mock_config` (a Step Functions
    Local mock configuration file, relative to the app), `test_case` (its test case) and
    `resources` (tables, buckets, queues the embedded emulator starts with: LocalResources).
    `--aws-endpoint` > UNUM_AWS_ENDPOINT > the manifest."""

    ENV: ClassVar[dict[str, tuple[str, ...]]] = {
        "aws_endpoint": ("UNUM_AWS_ENDPOINT",),
        "mock_config": ("UNUM_SFN_MOCK_CONFIG", "SFN_MOCK_CONFIG"),
        "test_case": ("UNUM_SFN_TEST_CASE",)}
    aws_endpoint: Annotated[str, BeforeValidator(check_endpoint)] | None = None
    mock_config: Str | None = None
    test_case: Str | None = None
    # created on the embedded emulator before the first session (unumctl/deploy/local_resources.py)
    resources: LocalResources = Field(default_factory=LocalResources)

    def resolved(self, environ: Mapping[str, str] | None = None, **flags: Any) -> "IntegrationsSection":
        """Section.resolved, checking values from flags and the environment as the manifest's."""
        out = super().resolved(environ, **flags)
        if out.aws_endpoint is not None:
            check_endpoint(out.aws_endpoint)
        return out

    def environment(self, root: Any) -> dict[str, str]:
        """The variables the app's workers get (runtime.asl.integrations, runtime.asl.mocks);
        `mock_config` resolved against the app directory `root`."""
        import os.path
        env = {}
        if self.aws_endpoint:
            env["UNUM_AWS_ENDPOINT"] = self.aws_endpoint
        if self.mock_config:
            env["UNUM_SFN_MOCK_CONFIG"] = os.path.join(str(root), self.mock_config)
        if self.test_case:
            env["UNUM_SFN_TEST_CASE"] = self.test_case
        return env


class _TypedClouds(BaseModel):
    """Base of `Clouds.typed_model()`: unknown clouds are refused, `aws:` alone is {}."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _empty(cls, v: Any) -> Any:
        return {} if v is None else v  # `aws:` with nothing under it names the cloud


class Clouds(BaseModel):
    """The manifest's `clouds:` mapping: one optional typed section per target that has one
    (TargetSpec `settings`, unumctl/registry.py). Validated by `typed_model()`, built from
    the registry when the first manifest is read (not at import: the registry's target
    packages import the manifest), so a section is checked, and its errors located
    (`clouds.<cloud>.<field>`), exactly as a declared field would be. The sections named
    are kept as the model's extra fields."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _typed(cls, data: Any) -> Any:
        if isinstance(data, cls):
            return data
        typed = cls.typed_model().model_validate({} if data is None else data)
        return {c: getattr(typed, c) for c in typed.model_fields_set}

    @staticmethod
    @cache
    def typed_model() -> type[BaseModel]:
        """The pydantic model of `clouds:`: a field `<cloud>: <its Section> | None` per
        registry.deployable() target, in registry order."""
        sections: dict[str, Any] = {c: (registry.part(c, "settings") | None, None)
                                    for c in registry.deployable()}
        return create_model("Clouds", __base__=_TypedClouds, **sections)

    def named(self) -> list[str]:
        """The clouds the manifest names (in registry order)."""
        return [c for c in self.typed_model().model_fields if c in (self.model_extra or {})]

    @staticmethod
    def deployable() -> list[str]:
        """The targets that deploy to a cloud: those with a settings section (aws, gcp)."""
        return registry.deployable()

    def section(self, cloud: str) -> Section | None:
        """The section of `cloud` as written (defaults when the manifest does not name it);
        None for a target without settings (local)."""
        if cloud not in self.deployable():
            return None
        return (self.model_extra or {}).get(cloud) or registry.part(cloud, "settings")()
