"""Reducer: add up the per-mapper counts of one partition. Output: ``{word: count}``."""


def handler(event, context):
    total = {}
    for counts in event["counts"]:
        for word, count in counts.items():
            total[word] = total.get(word, 0) + count
    return total
