"""Pipeline with a fold (examples/pipeline-fold) as Python: Split -Map-> Encode; Recode i
starts when Encode i-1 and Encode i are done (`pairwise`); Fold i folds Recode i into
Fold i-1 (`accumulate`); Finish takes the last fold (`last`). Same IR as the hand-written
one (docs/python.md "Pipelines and folds")."""
import base64
import hashlib
import struct
import zlib

from runtime.flow import accumulate, last, pairwise, step, workflow


@step(timeout=30)
def split(event) -> list:
    """Cut ``{"text", "chunk_size"}`` into ``[{"index": i, "text": chunk}, ...]``."""
    text, size = event["text"], int(event["chunk_size"])
    if size < 1:
        raise ValueError("chunk_size must be >= 1")
    if not text:
        raise ValueError("nothing to compress")
    return [{"index": i, "text": text[start:start + size]}
            for i, start in enumerate(range(0, len(text), size))]


@step(timeout=30)
def encode(event) -> dict:
    """Stage 1: ``{"index", "raw_b64", "solo": <zlib size of the chunk alone>}``."""
    raw = event["text"].encode("utf-8")
    return {"index": event["index"], "raw_b64": base64.b64encode(raw).decode("ascii"),
            "solo": len(zlib.compress(raw, 9))}


@step(timeout=30)
def recode(event) -> dict:
    """Stage 2 on ``[Encode 0]`` or ``[Encode i-1, Encode i]``: chunk i compressed with
    zlib level 9 and chunk i-1 as preset dictionary."""
    *prev, cur = event
    raw = base64.b64decode(cur["raw_b64"])
    if prev:
        if prev[0]["index"] != cur["index"] - 1:
            raise ValueError("Recode got chunks %s and %s" % (prev[0]["index"], cur["index"]))
        comp = zlib.compressobj(level=9, zdict=base64.b64decode(prev[0]["raw_b64"]))
    else:
        if cur["index"] != 0:
            raise ValueError("Recode %s got no previous chunk" % cur["index"])
        comp = zlib.compressobj(level=9)
    z = comp.compress(raw) + comp.flush()
    return {"index": cur["index"], "z_b64": base64.b64encode(z).decode("ascii"),
            "raw_len": len(raw), "solo": cur["solo"]}


@step(timeout=30)
def fold(event) -> dict:
    """On ``[Recode 0]`` or ``[Fold i-1, Recode i]``: ``{"step": i, "chunks": [...]}``."""
    if len(event) == 1:
        done, recoded = [], event[0]
    else:
        previous, recoded = event
        done = previous["chunks"]
    if recoded["index"] != len(done):
        raise ValueError("fold step %d got chunk %d" % (len(done), recoded["index"]))
    chunk = {k: recoded[k] for k in ("z_b64", "raw_len", "solo")}
    return {"step": recoded["index"], "chunks": done + [chunk]}


def unpack(container):
    """The text of a container (per chunk: 4-byte big-endian length + zlib stream)."""
    out, prev, pos = [], None, 0
    while pos < len(container):
        (size,) = struct.unpack_from(">I", container, pos)
        z = container[pos + 4:pos + 4 + size]
        pos += 4 + size
        d = zlib.decompressobj(zdict=prev) if prev is not None else zlib.decompressobj()
        prev = d.decompress(z) + d.flush()
        out.append(prev)
    return b"".join(out)


@step(timeout=30)
def finish(event) -> dict:
    """Frame the chunks into one container, decompress it again as a check."""
    chunks = [base64.b64decode(c["z_b64"]) for c in event["chunks"]]
    container = b"".join(struct.pack(">I", len(z)) + z for z in chunks)
    raw = unpack(container)
    if len(raw) != sum(c["raw_len"] for c in event["chunks"]):
        raise ValueError("the container does not decompress to the input")
    return {"chunks": len(chunks), "raw_len": len(raw), "compressed_len": sum(len(z) for z in chunks),
            "solo_compressed_len": sum(c["solo"] for c in event["chunks"]),
            "container_len": len(container), "sha256_of_input": hashlib.sha256(raw).hexdigest(),
            "container_b64": base64.b64encode(container).decode("ascii")}


@workflow
def pipeline_fold(doc):
    folds = split(doc).map(lambda chunk: accumulate(fold, recode(pairwise(encode(chunk)))))
    return finish(last(folds))
