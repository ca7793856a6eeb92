"""Report: {word: occurrences} -> {"words", "distinct", "top"} (the most frequent word)."""


def handler(event, context):
    top = sorted(event.items(), key=lambda kv: (-kv[1], kv[0]))[0] if event else None
    return {"words": sum(event.values()), "distinct": len(event), "top": top and {"word": top[0], "count": top[1]}}
