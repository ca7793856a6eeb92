class FirstAttempt(Exception):
    pass


def handler(event, context):
    # fails in the Parallel's first attempt (iteration 0), succeeds in the retry (iteration 1)
    if context.iteration == 0:
        raise FirstAttempt("the first attempt of the Parallel fails")
    return {"attempt": context.iteration}
