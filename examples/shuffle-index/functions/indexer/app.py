"""Indexer: the producer of the shuffle. Emits one ``[word, passage number]`` pair per
distinct word of each passage, in passage order (words are
``re.findall(r"[a-z]+", passage.lower())``, each passage's words in sorted order).

Its IR edge is ``Type: Shuffle`` to Posting, so it returns a list of [key, value] pairs
(docs/ir.md "Shuffle edges"); Posting runs once per word with that word's passage numbers.
"""
import re


def handler(event, context):
    out = []
    for n, passage in enumerate(event["passages"], start=int(event["first"])):
        for word in sorted(set(re.findall(r"[a-z]+", passage.lower()))):
            out.append([word, n])
    return out
