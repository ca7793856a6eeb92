"""Tokenize: {"text": str} -> the list of its lower-case words."""


def handler(event, context):
    return [w.strip(".,;:!?").lower() for w in event["text"].split() if w.strip(".,;:!?")]
