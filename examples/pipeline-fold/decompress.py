"""Reverse the pipeline-fold container.

    python3 examples/pipeline-fold/decompress.py RESULT.json [INPUT.json]

``RESULT.json`` is a session result of the pipeline-fold app (the object returned by
Finish); the script decompresses ``container_b64``, checks its length and SHA-256 against
the result and, when ``INPUT.json`` is given (default: input.json next to this file),
checks that the text equals the input text.
"""
import base64
import hashlib
import json
import os
import struct
import sys
import zlib


def decompress(container_b64):
    """Return the text packed in a container (each chunk uses the previous raw chunk as
    zlib preset dictionary)."""
    container = base64.b64decode(container_b64)
    out, prev, pos = [], None, 0
    while pos < len(container):
        if pos + 4 > len(container):
            raise ValueError("truncated length header at byte %d" % pos)
        (size,) = struct.unpack_from(">I", container, pos)
        z = container[pos + 4:pos + 4 + size]
        if len(z) != size:
            raise ValueError("truncated chunk at byte %d" % pos)
        pos += 4 + size
        d = zlib.decompressobj(zdict=prev) if prev is not None else zlib.decompressobj()
        prev = d.decompress(z) + d.flush()
        if not d.eof:
            raise ValueError("incomplete zlib stream at byte %d" % pos)
        out.append(prev)
    return b"".join(out).decode("utf-8")


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        result = json.load(f)
    text = decompress(result["container_b64"])
    raw = text.encode("utf-8")
    errors = []
    if len(raw) != result["raw_len"]:
        errors.append("raw_len %d != %d" % (len(raw), result["raw_len"]))
    if hashlib.sha256(raw).hexdigest() != result["sha256_of_input"]:
        errors.append("sha256 mismatch")
    if len(argv) == 3:
        input_path = argv[2]
    else:
        input_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "input.json")
    if len(argv) == 3 or os.path.exists(input_path):
        with open(input_path, encoding="utf-8") as f:
            if json.load(f)["text"] != text:
                errors.append("decompressed text differs from %s" % input_path)
    for e in errors:
        print("FAIL:", e, file=sys.stderr)
    if not errors:
        print("OK: %d chunks, %d bytes -> %d bytes" % (
            result["chunks"], result["raw_len"], result["compressed_len"]))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
