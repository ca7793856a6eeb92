"""UserMention: extract the @mentions of a post (parallel branch 0).

A mention is ``@`` + 1..15 letters, digits or underscores that does not follow a word
character, ``@`` or ``.`` (so e-mail addresses are not mentions). Mentions are compared
case-insensitively, lower-cased, and listed once each in order of first appearance.
"""
import re

MENTION = re.compile(r"(?<![\w@.])@([A-Za-z0-9_]{1,15})\b")


def handler(event, context):
    mentions = []
    for name in MENTION.findall(event["text"]):
        name = name.lower()
        if name not in mentions:
            mentions.append(name)
    return {"mentions": mentions}
