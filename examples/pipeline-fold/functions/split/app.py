"""Split: cut the input text into fixed-size chunks (ExCamera-style pipeline, stage 0).

Input: ``{"text": str, "chunk_size": int}``. Output: a list of
``{"index": i, "text": chunk}`` (Map edge to Encode).
"""


def handler(event, context):
    text, size = event["text"], int(event["chunk_size"])
    if size < 1:
        raise ValueError("chunk_size must be >= 1")
    if not text:
        raise ValueError("nothing to compress")
    return [{"index": i, "text": text[start:start + size]}
            for i, start in enumerate(range(0, len(text), size))]
