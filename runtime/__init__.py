"""The Unum runtime library, shipped inside every function archive.

Core modules (no cloud SDK, no heavy dependency): `ir` (IR model), `expr` (safe expressions),
`payload` (invocation payload and naming), `ports` (Datastore, BlobStore, Invoker
interfaces), `engine` (ingress/egress). Adapters: `runtime.local`, `runtime.aws`,
`runtime.gcp`.
"""

__all__ = ["PROTOCOL_VERSION", "__version__"]

__version__ = "0.1.0"
PROTOCOL_VERSION = 2  # 2: Data.Source "refs", Parents[].Blobs, Depth
