"""Count: a list of words -> {word: occurrences}."""


def handler(event, context):
    counts = {}
    for word in event:
        counts[word] = counts.get(word, 0) + 1
    return counts
