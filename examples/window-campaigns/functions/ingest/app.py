"""Preprocess + query_event_info of the advertising event stream (seed 003 §III-C, Fig. 4
right; the Yahoo streaming benchmark it cites): keep `view` events and look up the campaign
of the event's ad. One session per event; the kept ones go into the window `campaigns`."""

# the ad -> campaign table of the benchmark's Redis, here 10 campaigns of 10 ads each
CAMPAIGN_OF = {f"ad-{a:03d}": f"campaign-{a // 10}" for a in range(100)}


def handler(event, context):
    ad = event["ad_id"]
    if ad not in CAMPAIGN_OF:
        raise ValueError(f"unknown ad_id {ad!r}")
    return {"event_id": event["event_id"], "campaign": CAMPAIGN_OF[ad],
            "keep": event["event_type"] == "view"}
