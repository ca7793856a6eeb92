"""Posting: the consumer of the shuffle, one invocation per word (``context.key``).

Input: the word's passage numbers, by Indexer index then emission order (so ascending).
Output: ``[word, [passage numbers]]``.
"""


def handler(event, context):
    if event != sorted(event):
        raise ValueError(f"{context.key}: passage numbers out of order: {event[:10]}")
    return [context.key, event]
