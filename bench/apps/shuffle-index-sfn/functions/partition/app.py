"""Partition: the shuffle by hand. Input: every Indexer's [word, passage] pairs (in Indexer
order). Output: one {"key": word, "values": [passages]} per word, words in code-point order."""


def handler(event, context):
    groups = {}
    for pairs in event:
        for key, value in pairs:
            groups.setdefault(key, []).append(value)
    return [{"key": k, "values": groups[k]} for k in sorted(groups)]
