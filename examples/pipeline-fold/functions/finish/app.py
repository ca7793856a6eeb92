"""Finish: frame the compressed chunks into one container and check it.

Container: for each chunk in order, a 4-byte big-endian length followed by the chunk's
zlib stream (chunk i compressed with chunk i-1 as preset dictionary). Finish decompresses
the container again and reports the SHA-256 of what comes back, so a correct run has
``sha256_of_input`` equal to the SHA-256 of the UTF-8 input text.
"""
import base64
import hashlib
import struct
import zlib


def unpack(container):
    out, prev, pos = [], None, 0
    while pos < len(container):
        (size,) = struct.unpack_from(">I", container, pos)
        z = container[pos + 4:pos + 4 + size]
        pos += 4 + size
        d = zlib.decompressobj(zdict=prev) if prev is not None else zlib.decompressobj()
        prev = d.decompress(z) + d.flush()
        out.append(prev)
    return b"".join(out)


def handler(event, context):
    chunks = [base64.b64decode(c["z_b64"]) for c in event["chunks"]]
    container = b"".join(struct.pack(">I", len(z)) + z for z in chunks)
    raw = unpack(container)
    if len(raw) != sum(c["raw_len"] for c in event["chunks"]):
        raise ValueError("the container does not decompress to the input")
    return {
        "chunks": len(chunks),
        "raw_len": len(raw),
        "compressed_len": sum(len(z) for z in chunks),
        "solo_compressed_len": sum(c["solo"] for c in event["chunks"]),
        "container_len": len(container),
        "sha256_of_input": hashlib.sha256(raw).hexdigest(),
        "container_b64": base64.b64encode(container).decode("ascii"),
    }
