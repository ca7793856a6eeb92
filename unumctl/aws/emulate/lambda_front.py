"""The Lambda endpoint of `unumctl emulate aws`: runs the functions that Terraform created on
moto_server, and forwards every other Lambda API request to moto.

moto stores Lambda functions but cannot run them without Docker. `MotoLambda` is the
endpoint a user points AWS_ENDPOINT_URL_LAMBDA at (so do Terraform's provider, through the
`endpoints` that `unumctl apply` renders, and the functions' own invokers):

- `POST /2015-03-31/functions/{FunctionName}/invocations` (Lambda API reference, Invoke) is
  served by LocalLambda (local_lambda.py): the function's built archive runs through its
  handler in worker processes, with Lambda's asynchronous retries and on-failure destination;
- every other request (CreateFunction, UpdateFunctionCode, GetFunction,
  PutFunctionEventInvokeConfig, DeleteFunction, tags, ...) is forwarded to moto unchanged
  (method, path, query, headers with the signed Host, body) and moto's answer is returned.
  On the way, the archive of CreateFunction / UpdateFunctionCode is kept (`ZipFile`, or the
  S3 object named by `S3Bucket` / `S3Key`, read from moto), by its SHA-256.

An Invoke may name a published version or an alias (`Qualifier`, or `NAME:QUALIFIER`): the
version's own code and configuration run (GetFunction with that Qualifier; an alias runs the
version it points at), in worker processes of their own, with AWS_LAMBDA_FUNCTION_VERSION set;
a deleted version (DeleteFunction with Qualifier) is answered 404 like Lambda.
A function is looked up in moto on its first Invoke, and again after any request that
changes Lambda state: GetFunction gives the handler, environment, timeout, memory and
CodeSha256 (the archive kept above with that digest); GetFunctionEventInvokeConfig gives
MaximumRetryAttempts and the on-failure destination (a Lambda function; other destination
types, e.g. the error handler's SQS queue, are not fed). A function whose archive did not pass
through this endpoint (applied with another AWS_ENDPOINT_URL_LAMBDA) is answered 404 with
the fix.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from .local_lambda import LocalFunctionSpec, LocalLambda, unpack
from .moto_local import REGION, aws_env

__all__ = ["MotoLambda"]

_INVOKE_RE = re.compile(r"^/2015-03-31/functions/(?P<fn>[^/]+)/invocations")
_CREATE_RE = re.compile(r"^/2015-03-31/functions/?(?:\?.*)?$")
_CODE_RE = re.compile(r"^/2015-03-31/functions/(?P<fn>[^/?]+)/code/?(?:\?.*)?$")
_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class MotoLambda(LocalLambda):
    """Lambda's API for the functions deployed on moto at `moto_url`; archives are kept and
    unpacked under `workdir`; `ca_bundle`: the certificate moto serves HTTPS with (given to
    the functions as AWS_CA_BUNDLE); `region`: the one region this endpoint serves (Lambda
    endpoints are regional, https://docs.aws.amazon.com/general/latest/gr/lambda-service.html:
    one moto_server holds every region, one MotoLambda per region runs that region's
    functions, which get it as AWS_REGION, as on Lambda). A context manager like
    LocalLambda; `url` (plain HTTP) is the endpoint for AWS_ENDPOINT_URL_LAMBDA."""

    def __init__(self, moto_url: str, workdir: Path, concurrency: int = 3, ca_bundle: Path | None = None,
                 region: str = REGION):
        env = {**aws_env(moto_url), "AWS_REGION": region, "AWS_DEFAULT_REGION": region}
        if ca_bundle is not None:
            env["AWS_CA_BUNDLE"] = str(ca_bundle)
        super().__init__({}, env, concurrency=concurrency)
        self.moto_url = moto_url
        self.region = region
        self.ca_bundle = ca_bundle
        self.workdir = Path(workdir)
        (self.workdir / "code").mkdir(parents=True, exist_ok=True)
        self._archives: dict[str, Path] = {}   # base64 SHA-256 (Lambda's CodeSha256) -> zip
        self._current: set[str] = set()        # names (NAME[:QUALIFIER]) looked up since the last change
        self._served: dict[str, str] = {}      # such a name -> the key it is served under
        self._uncaptured: set[str] = set()     # on moto, but their archive was not seen here
        self._resolve_lock = threading.Lock()
        self.base_env["AWS_ENDPOINT_URL_LAMBDA"] = self.url

    # ------------------------------------------------------------------ moto clients
    def _client(self, service: str):
        import boto3

        env = self.base_env
        return boto3.client(service, endpoint_url=self.moto_url, region_name=self.region,
                            verify=str(self.ca_bundle) if self.ca_bundle else None,
                            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                            aws_session_token=env.get("AWS_SESSION_TOKEN"))

    # ------------------------------------------------------------------ Invoke
    def _resolve(self, name: str, qualifier: str | None = None) -> str | None:
        """Look function `name` (`qualifier`: a version number or alias, None for `$LATEST`)
        up in moto, once per change of Lambda state, and serve it: the key it is served
        under (`NAME`, or `NAME:VERSION` for a published version, which an alias resolves
        to), None when moto has no such function or version, or its archive was not uploaded
        through this endpoint. A `NAME:VERSION` key is looked up as that version."""
        if qualifier is None and ":" in name:
            name, _, qualifier = name.partition(":")
        asked = f"{name}:{qualifier}" if qualifier and qualifier != "$LATEST" else name
        with self._resolve_lock:
            if asked in self._current:
                return self._served.get(asked)
            spec = self._spec_from_moto(name, None if asked == name else qualifier)
            self._current.add(asked)
            if spec is None:
                self._served.pop(asked, None)
                return None
            key = name if spec.version == "$LATEST" else f"{name}:{spec.version}"
            self.add_function(key, spec)
            self._served[asked] = key
            return key

    def _spec_from_moto(self, name: str, qualifier: str | None = None) -> LocalFunctionSpec | None:
        """The spec of function `name` at `qualifier` (GetFunction with Qualifier: a published
        version's own code and configuration), None when moto has none."""
        lam = self._client("lambda")
        q = {"Qualifier": qualifier} if qualifier else {}
        try:
            cfg = lam.get_function(FunctionName=name, **q)["Configuration"]
        except lam.exceptions.ResourceNotFoundException:
            return None
        zip_path = self._archives.get(cfg.get("CodeSha256", ""))
        if zip_path is None:
            self._uncaptured.add(name)
            return None
        self._uncaptured.discard(name)
        retries, on_failure = 2, None
        try:
            eic = lam.get_function_event_invoke_config(FunctionName=name, **q)
            retries = int(eic.get("MaximumRetryAttempts", 2))
            dest = eic.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination", "")
            if ":function:" in dest:
                on_failure = dest.split(":function:")[1].split(":")[0]
        except lam.exceptions.ResourceNotFoundException:
            pass
        return LocalFunctionSpec(unpack(zip_path, self.workdir / "unpacked"), cfg["Handler"],
                                 dict(cfg.get("Environment", {}).get("Variables", {})),
                                 max_retry_attempts=retries, on_failure=on_failure,
                                 timeout=float(cfg.get("Timeout", 3)), memory=int(cfg.get("MemorySize", 128)),
                                 version=str(cfg.get("Version") or "$LATEST"))

    def _http_invoke(self, h: BaseHTTPRequestHandler) -> None:
        m = _INVOKE_RE.match(h.path)
        name = unquote(m.group("fn") if m else "").split(":function:")[-1].split(":")[0]
        query = parse_qs(urlsplit(h.path).query).get("Qualifier", [])
        qualifier = unquote(m.group("fn") if m else "").split(":function:")[-1].partition(":")[2] or \
            (query[0] if query else None)
        if self._resolve(name, qualifier) is None and name in self._uncaptured:
            h.rfile.read(int(h.headers.get("Content-Length") or 0))
            return self._reply(h, 404, {"Type": "User", "message": (
                f"Function {name} exists on moto but its archive was not uploaded through this "
                f"endpoint; re-run `unumctl apply` with the environment `unumctl emulate aws` "
                f"printed (AWS_ENDPOINT_URL_LAMBDA={self.url})")},
                {"x-amzn-ErrorType": "ResourceNotFoundException"})
        super()._http_invoke(h)

    def _put(self, ev, delay: float = 0.0) -> None:
        """Queue an event; its function (e.g. an on-failure destination never invoked yet)
        is looked up first, and an event for a function that no longer exists is dropped
        (counted in stats["dropped"]), as Lambda drops a destination record it cannot send."""
        if ev.fn not in self._queues and self._resolve(ev.fn) is None:
            self.stats["dropped"] += 1
            return
        super()._put(ev, delay)

    # ------------------------------------------------------------------ everything else
    def _http_other(self, h: BaseHTTPRequestHandler) -> None:
        """Forward the request to moto and its answer back; keep uploaded archives; after a
        request that may change Lambda state, look functions up again on their next Invoke."""
        body = _read_body(h)
        if h.command in ("POST", "PUT") and body:
            self._keep_archive(h.path, body)
        target = urlsplit(self.moto_url)
        assert target.hostname is not None  # moto_url is http(s)://HOST:PORT
        if target.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                target.hostname, target.port, timeout=120,
                context=ssl.create_default_context(cafile=str(self.ca_bundle) if self.ca_bundle else None))
        else:
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
        try:
            conn.putrequest(h.command, h.path, skip_host=True, skip_accept_encoding=True)
            for k, v in h.headers.items():
                if k.lower() not in _HOP and k.lower() != "content-length":
                    conn.putheader(k, v)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if h.command not in ("GET", "HEAD"):
            with self._resolve_lock:
                self._current.clear()
        h.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP and k.lower() not in ("content-length", "server", "date"):
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _keep_archive(self, path: str, body: bytes) -> None:
        """Keep the archive of a CreateFunction (`Code`) or UpdateFunctionCode request."""
        if not (_CREATE_RE.match(path) or _CODE_RE.match(path)):
            return
        try:
            req = json.loads(body)
        except ValueError:
            return
        code = req.get("Code", req) if isinstance(req, dict) else {}
        data: bytes | None = None
        if isinstance(code, dict) and code.get("ZipFile"):
            data = base64.b64decode(code["ZipFile"])
        elif isinstance(code, dict) and code.get("S3Bucket") and code.get("S3Key"):
            try:
                args = {"Bucket": code["S3Bucket"], "Key": code["S3Key"]}
                if code.get("S3ObjectVersion"):
                    args["VersionId"] = code["S3ObjectVersion"]
                data = self._client("s3").get_object(**args)["Body"].read()
            except Exception:  # noqa: BLE001 - moto answers the request itself (NoSuchKey...)
                return
        if data is None:
            return
        digest = hashlib.sha256(data)
        out = self.workdir / "code" / f"{digest.hexdigest()[:32]}.zip"
        if not out.exists():
            with tempfile.NamedTemporaryFile(dir=out.parent, delete=False) as tmp:
                tmp.write(data)
            Path(tmp.name).replace(out)
        self._archives[base64.b64encode(digest.digest()).decode()] = out


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    """The request body (Content-Length, or chunked transfer coding, RFC 9112 §7.1)."""
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        while True:
            size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(h.rfile.read(size))
            h.rfile.readline()
    return h.rfile.read(int(h.headers.get("Content-Length") or 0))
