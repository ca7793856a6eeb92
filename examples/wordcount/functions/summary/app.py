"""Summary: merge the reducers' outputs (fan-in of all Reducers).

Input: the ordered list of ``{word: count}`` objects (disjoint partitions).
Output: one object word -> count over the whole text, keys sorted.
"""


def handler(event, context):
    merged = {}
    for counts in event:
        for word, count in counts.items():
            merged[word] = merged.get(word, 0) + count
    return {word: merged[word] for word in sorted(merged)}
